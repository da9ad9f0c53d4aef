//===- WriteFixtures.cpp - files for the tpc-run command-line tests -------===//
//
// tpcrt-write-fixtures DIR writes the tiny model of TestExecutables.h as
// executables (f32 with dropout, f32 without, bf16), its weights under the
// published GPT-2 names (no "transformer." prefix, an extra attn.bias), a
// batch, and broken variants of each for the error paths; the tiny training
// model (AdamW and SGD variants), its weights, a batch and token files; the
// tiny model under Llama-family names with an untied head and its weights as
// LlamaForCausalLM and LlamaModel save them; Hugging Face model directories;
// a batch with Hugging Face's labels (= input_ids); a truncated file.
// tpc_run_cli.sh, tiny_reference.py and training_reference.py use them.
//
//===----------------------------------------------------------------------===//

#include "TestExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Safetensors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>

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
  // An executable compiled before executables recorded their Hugging Face
  // config: no checkpoint directory.
  if (Status s = writeExecutable(dir + "/tiny-train-nohf.tpcx", train); !s)
    return s;
  // What a checkpoint directory's config.json holds (the runtime copies it).
  const char *config =
      R"({"architectures":["GPT2LMHeadModel"],"model_type":"gpt2",)"
      R"("n_embd":8,"n_inner":32,"n_layer":1,"vocab_size":16,)"
      R"("embd_pdrop":0.1,"layer_norm_epsilon":1e-05})";
  train.hf_config = config;
  if (Status s = writeExecutable(dir + "/tiny-train.tpcx", train); !s)
    return s;
  TrainingOptions sgd = adamw;
  sgd.optimizer = fb::OpCode::SgdUpdate;
  sgd.cosine = false;
  sgd.maxNorm = 0.0;
  sgd.lr = 0.1;
  fb::ExecutableT sgdModel = tinyTrainingModel(sgd);
  sgdModel.hf_config = config;
  if (Status s = writeExecutable(dir + "/tiny-train-sgd.tpcx", sgdModel); !s)
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

/// The tiny model as a Llama-family executable names its params ("model."
/// for "transformer.") with an untied head: a param "lm_head.weight" of its
/// own, read by the head's linear in place of the token embedding.
fb::ExecutableT untiedLlamaNames(fb::ExecutableT exe) {
  const std::string gpt2 = "transformer.";
  for (auto &param : exe.params)
    if (param->hf_name.compare(0, gpt2.size(), gpt2) == 0)
      param->hf_name = "model." + param->hf_name.substr(gpt2.size());
  uint32_t wte = exe.params[0]->buffer;
  std::vector<int64_t> shape = exe.buffers[wte]->shape;
  uint64_t offset = (exe.arena_bytes + 63) / 64 * 64;
  exe.buffers.push_back(makeBuffer(offset, exe.buffers[wte]->dtype, shape));
  auto head = std::make_unique<fb::ParamT>();
  head->hf_name = "lm_head.weight";
  head->view_shape = shape;
  head->hf_shape = shape;
  head->buffer = static_cast<uint32_t>(exe.buffers.size() - 1);
  head->init = fb::ParamInit::Normal;
  head->init_std = 0.02;
  uint32_t logits = 0;
  for (const auto &output : exe.outputs)
    if (output->name == "logits")
      logits = output->buffer;
  for (auto &kernel : exe.kernels)
    if (kernel->op == fb::OpCode::Linear && kernel->results[0] == logits)
      kernel->operands[1] = head->buffer;
  exe.params.push_back(std::move(head));
  exe.arena_bytes = offset + exe.buffers.back()->size;
  exe.planned_peak_bytes = exe.arena_bytes;
  return exe;
}

/// Random values for every param of `exe` (norm scales near 1), by name.
Tensors randomWeights(const fb::ExecutableT &exe, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  Tensors weights;
  for (const auto &param : exe.params) {
    std::vector<float> values;
    int64_t n = 1;
    for (int64_t d : param->hf_shape)
      n *= d;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(normal(gen) +
                       (param->init == fb::ParamInit::Ones ? 1.0f : 0.0f));
    weights[param->hf_name] = tensorOf(DType::F32, param->hf_shape, values);
  }
  return weights;
}

/// The files of the Hugging Face round trip: Llama-family names and base
/// models, model directories, Hugging Face's labels, a truncated file.
Status writeHuggingFace(const std::string &dir, const Tensors &gpt2Weights) {
  fb::ExecutableT llama = untiedLlamaNames(tinyModel(fb::DType::F32, 0.0));
  if (Status s = writeExecutable(dir + "/tiny-llama.tpcx", llama); !s)
    return s;
  Tensors causal = randomWeights(llama, 99);
  if (Status s = writeTensors(dir + "/llama-causal.safetensors", causal); !s)
    return s;
  // LlamaModel.save_pretrained: no "model.", no head.
  Tensors base;
  for (const auto &[name, tensor] : causal)
    if (name.compare(0, 6, "model.") == 0)
      base[name.substr(6)] = tensor;
  if (Status s = writeTensors(dir + "/llama-base.safetensors", base); !s)
    return s;
  base["lm_head.weight"] = causal.at("lm_head.weight");
  if (Status s = writeTensors(dir + "/llama-base-head.safetensors", base); !s)
    return s;

  // Model directories: one file; sharded (an index and two shards); none.
  for (const char *sub : {"/hf-model", "/hf-sharded", "/hf-empty"})
    if (::mkdir((dir + sub).c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error(dir + sub +
                           ": cannot create: " + std::strerror(errno));
  if (Status s = writeTensors(dir + "/hf-model/model.safetensors", gpt2Weights);
      !s)
    return s;
  Tensors first, second;
  std::string index = "{\"weight_map\": {";
  for (const auto &[name, tensor] : gpt2Weights) {
    bool early = name.compare(0, 2, "h.") == 0;
    (early ? first : second)[name] = tensor;
    index += (index.back() == '{' ? "\"" : ", \"") + name + "\": \"" +
             (early ? "model-00001-of-00002.safetensors"
                    : "model-00002-of-00002.safetensors") +
             "\"";
  }
  index += "}}\n";
  if (Status s = writeTensors(
          dir + "/hf-sharded/model-00001-of-00002.safetensors", first);
      !s)
    return s;
  if (Status s = writeTensors(
          dir + "/hf-sharded/model-00002-of-00002.safetensors", second);
      !s)
    return s;
  if (Status s =
          writeFileAtomically(dir + "/hf-sharded/model.safetensors.index.json",
                              {{index.data(), index.size()}});
      !s)
    return s;

  // Hugging Face's labels are the ids; the same batch shifted by hand.
  std::vector<int64_t> ids = {1, 5, 9, 2, 0, 15, 7, 7};
  Tensors hf;
  hf["input_ids"] = tensorOf(DType::I64, {2, 4}, ids);
  hf["labels"] = tensorOf(DType::I64, {2, 4}, ids);
  if (Status s = writeTensors(dir + "/inputs-hf.safetensors", hf); !s)
    return s;
  hf["labels"] = tensorOf(DType::I64, {2, 4},
                          std::vector<int64_t>{5, 9, 2, -100, 15, 7, 7, -100});
  if (Status s = writeTensors(dir + "/inputs-hf-shifted.safetensors", hf); !s)
    return s;

  // The weights cut short after their header and half their data: the
  // header promises more bytes than the file has.
  std::map<std::string, TensorToWrite> out;
  for (const auto &[name, t] : gpt2Weights)
    out[name] = {t.dtype, t.shape, t.bytes.data(), t.bytes.size()};
  std::vector<uint8_t> image;
  if (Status s = serializeSafetensors(out, {}, image); !s)
    return s;
  uint64_t headerEnd = 8;
  for (int i = 0; i < 8; ++i)
    headerEnd += static_cast<uint64_t>(image[i]) << (8 * i);
  uint64_t keep = headerEnd + (image.size() - headerEnd) / 2;
  return writeFileAtomically(dir + "/weights-truncated.safetensors",
                             {{image.data(), keep}});
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
  Tensors weights;
  for (auto &[name, tensor] : randomWeights(tiny, 2024))
    weights[name.substr(std::strlen("transformer."))] = std::move(tensor);
  weights["h.0.attn.bias"] =
      tensorOf(DType::F32, {1, 1, 4, 4}, std::vector<float>(16, 1.0f));
  if (Status s = writeTensors(dir + "/weights.safetensors", weights); !s)
    return s;
  if (Status s = writeHuggingFace(dir, weights); !s)
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
