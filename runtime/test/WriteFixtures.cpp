//===- WriteFixtures.cpp - files for the tpc-run command-line tests -------===//
//
// tpcrt-write-fixtures DIR writes the tiny model of TestExecutables.h as
// executables (f32 with dropout, f32 without, bf16), its weights under the
// published GPT-2 names (no "transformer." prefix, an extra attn.bias), a
// batch, and broken variants of each for the error paths; the tiny training
// model (AdamW and SGD variants), its weights, a batch and token files.
// tpc_run_cli.sh, tiny_reference.py and training_reference.py use them.
//
//===----------------------------------------------------------------------===//

#include "TestExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Safetensors.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

struct Tensor {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
using Tensors = std::map<std::string, Tensor>;

template <typename T>
Tensor tensorOf(DType dtype, std::vector<int64_t> shape,
                const std::vector<T> &values) {
  Tensor t{dtype, std::move(shape), {}};
  t.bytes.resize(values.size() * sizeof(T));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

Status writeTensors(const std::string &path, const Tensors &tensors) {
  std::map<std::string, TensorToWrite> out;
  for (const auto &[name, t] : tensors)
    out[name] = {t.dtype, t.shape, t.bytes.data(), t.bytes.size()};
  return writeSafetensors(path, out);
}

Status writeExecutable(const std::string &path, const fb::ExecutableT &exe) {
  std::vector<uint8_t> payload = pack(exe);
  return writeExecutableFile(path, payload.data(), payload.size());
}

/// Token ids that follow a pattern a small model can learn: mostly
/// t[i + 1] = t[i] + 3 (mod vocab), with a jump every 7 tokens.
std::vector<uint32_t> patternTokens(size_t count, uint32_t vocab,
                                    uint32_t start) {
  std::vector<uint32_t> tokens(count);
  for (size_t i = 0; i < count; ++i)
    tokens[i] = static_cast<uint32_t>((start + 3 * i + i / 7) % vocab);
  return tokens;
}

template <typename T>
Status writeTokens(const std::string &path, const std::vector<uint32_t> &ids) {
  std::vector<T> narrow(ids.begin(), ids.end());
  return writeFileAtomically(path,
                             {{narrow.data(), narrow.size() * sizeof(T)}});
}

/// The training model's executables, weights, batch and token files.
Status writeTraining(const std::string &dir) {
  TrainingOptions adamw;
  adamw.microbatches = 2;
  adamw.dropout = 0.1;
  adamw.maxNorm = 1.0;
  adamw.cosine = true;
  fb::ExecutableT train = tinyTrainingModel(adamw);
  if (Status s = writeExecutable(dir + "/tiny-train.tpcx", train); !s)
    return s;
  TrainingOptions sgd = adamw;
  sgd.optimizer = fb::OpCode::SgdUpdate;
  sgd.cosine = false;
  sgd.maxNorm = 0.0;
  sgd.lr = 0.1;
  if (Status s =
          writeExecutable(dir + "/tiny-train-sgd.tpcx", tinyTrainingModel(sgd));
      !s)
    return s;
  fb::ExecutableT reseeded = train;
  reseeded.seed = 78;
  if (Status s = writeExecutable(dir + "/tiny-train-seed78.tpcx", reseeded); !s)
    return s;

  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  Tensors weights;
  for (const auto &param : train.params) {
    int64_t n = 1;
    for (int64_t d : param->hf_shape)
      n *= d;
    std::vector<float> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(normal(gen) +
                       (param->init == fb::ParamInit::Ones ? 1.0f : 0.0f));
    weights[param->hf_name] = tensorOf(DType::F32, param->hf_shape, values);
  }
  if (Status s = writeTensors(dir + "/train-weights.safetensors", weights); !s)
    return s;
  // A batch of 4 x 4 (vocabulary 16) with ignored labels, unevenly spread
  // over the two microbatches.
  Tensors batch;
  batch["input_ids"] = tensorOf(
      DType::I64, {4, 4},
      std::vector<int64_t>{1, 4, 7, 10, 0, 3, 6, 9, 15, 2, 5, 8, 11, 14, 1, 4});
  batch["labels"] =
      tensorOf(DType::I64, {4, 4},
               std::vector<int64_t>{4, 7, 10, -100, 3, 6, 9, 12, 2, 5, -100,
                                    -100, 14, 1, 4, 7});
  if (Status s = writeTensors(dir + "/train-batch.safetensors", batch); !s)
    return s;

  std::vector<uint32_t> tokens = patternTokens(500, 16, 0);
  std::vector<uint32_t> evalTokens = patternTokens(120, 16, 5);
  if (Status s = writeTokens<uint16_t>(dir + "/tokens.bin", tokens); !s)
    return s;
  if (Status s = writeTokens<uint32_t>(dir + "/tokens32.bin", tokens); !s)
    return s;
  if (Status s = writeTokens<uint16_t>(dir + "/eval.bin", evalTokens); !s)
    return s;
  std::vector<uint32_t> outside = tokens;
  outside[250] = 300;
  if (Status s = writeTokens<uint16_t>(dir + "/tokens-outside.bin", outside);
      !s)
    return s;
  if (Status s = writeTokens<uint16_t>(dir + "/tokens-short.bin",
                                       patternTokens(4, 16, 0));
      !s)
    return s;
  uint8_t odd[3] = {1, 0, 2};
  return writeFileAtomically(dir + "/tokens-odd.bin", {{odd, sizeof(odd)}});
}

Status writeAll(const std::string &dir) {
  if (Status s = writeTraining(dir); !s)
    return s;
  fb::ExecutableT tiny = tinyModel(fb::DType::F32, 0.1);
  if (Status s = writeExecutable(dir + "/tiny.tpcx", tiny); !s)
    return s;
  if (Status s = writeExecutable(dir + "/tiny-nodrop.tpcx",
                                 tinyModel(fb::DType::F32, 0.0));
      !s)
    return s;
  if (Status s = writeExecutable(dir + "/tiny-bf16.tpcx",
                                 tinyModel(fb::DType::BF16, 0.0));
      !s)
    return s;

  fb::ExecutableT mesh = tinyModel();
  for (const char *axis : {"dp", "tp"}) {
    auto a = std::make_unique<fb::MeshAxisT>();
    a->name = axis;
    a->size = 2;
    mesh.mesh.push_back(std::move(a));
  }
  if (Status s = writeExecutable(dir + "/mesh4.tpcx", mesh); !s)
    return s;

  // Valid, but an arena no machine has (2^62 bytes).
  fb::ExecutableT huge = tinyModel();
  huge.arena_bytes = uint64_t(1) << 62;
  if (Status s = writeExecutable(dir + "/huge-arena.tpcx", huge); !s)
    return s;

  std::vector<uint8_t> payload = pack(tiny);
  std::vector<uint8_t> image =
      serializeExecutable(payload.data(), payload.size());
  image[image.size() / 2] ^= 0x10;
  if (Status s = writeFileAtomically(dir + "/corrupt.tpcx",
                                     {{image.data(), image.size()}});
      !s)
    return s;

  // Weights: random, norm scales near 1, under the published GPT-2 names.
  std::mt19937 gen(2024);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  Tensors weights;
  for (const auto &param : tiny.params) {
    std::vector<float> values;
    int64_t n = 1;
    for (int64_t d : param->hf_shape)
      n *= d;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(normal(gen) +
                       (param->init == fb::ParamInit::Ones ? 1.0f : 0.0f));
    weights[param->hf_name.substr(std::strlen("transformer."))] =
        tensorOf(DType::F32, param->hf_shape, values);
  }
  weights["h.0.attn.bias"] =
      tensorOf(DType::F32, {1, 1, 4, 4}, std::vector<float>(16, 1.0f));
  if (Status s = writeTensors(dir + "/weights.safetensors", weights); !s)
    return s;
  Tensors missing = weights;
  missing.erase("ln_f.weight");
  if (Status s = writeTensors(dir + "/weights-missing.safetensors", missing);
      !s)
    return s;
  Tensors reshaped = weights;
  reshaped["ln_f.weight"].shape = {2, 4};
  if (Status s = writeTensors(dir + "/weights-shape.safetensors", reshaped); !s)
    return s;

  // A batch of 2 x 4 (vocabulary 16): I32 ids, I64 labels with one ignored.
  Tensors batch;
  batch["input_ids"] = tensorOf(DType::I32, {2, 4},
                                std::vector<int32_t>{1, 5, 9, 2, 0, 15, 7, 7});
  batch["labels"] = tensorOf(DType::I64, {2, 4},
                             std::vector<int64_t>{5, 9, 2, -100, 15, 7, 7, 3});
  if (Status s = writeTensors(dir + "/inputs.safetensors", batch); !s)
    return s;
  Tensors bad = batch;
  bad["input_ids"] = tensorOf(DType::I32, {2, 4},
                              std::vector<int32_t>{1, 5, 9, 2, 0, 15, 16, 7});
  return writeTensors(dir + "/inputs-bad.safetensors", bad);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tpcrt-write-fixtures DIR\n");
    return 2;
  }
  if (Status s = writeAll(argv[1]); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
