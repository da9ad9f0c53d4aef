//===- RanksFixtures.cpp - files for the tpc-run rank tests ---------------===//
//
// tpcrt-ranks-fixtures write DIR
//   writes the rank model of RanksExecutables.h on [tp=2] (ranks2.tpcx),
//   [dp=2, tp=2] (ranks4.tpcx) and one rank (twin.tpcx), its weights, a
//   batch, token files and a checkpoint with non-zero optimizer state.
// tpcrt-ranks-fixtures pipeline DIR
//   writes the training step of PipelineExecutables.h on [pp=2]
//   (pipe2.tpcx), [pp=2, dp=2] (pipe4.tpcx) and their one-stage twins
//   (pipe-twin.tpcx, pipe-dp.tpcx on [dp=2]), its weights, a batch and
//   token files.
// tpcrt-ranks-fixtures same A B NAME...
//   exit status 0 when the named tensors of safetensors files A and B have
//   the same dtype, shape and bytes; else prints what differs.
// tpcrt-ranks-fixtures padded OUT WEIGHTS
//   exit status 0 when OUT's a_padded [6, 3] is WEIGHTS' a.weight [5, 3]
//   followed by a row of zeros.
//
// tpc_run_ranks.sh and tpc_run_pipeline.sh use them.
//
//===----------------------------------------------------------------------===//

#include "ActionExecutables.h"
#include "PipelineExecutables.h"
#include "RanksExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Safetensors.h"

#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

/// Tensors to write, with the bytes behind them.
struct Tensors {
  std::list<std::vector<uint8_t>> storage;
  std::map<std::string, TensorToWrite> tensors;

  template <typename T>
  void add(const std::string &name, DType dtype, std::vector<int64_t> shape,
           const std::vector<T> &values) {
    std::vector<uint8_t> &bytes =
        storage.emplace_back(values.size() * sizeof(T));
    if (!values.empty())
      std::memcpy(bytes.data(), values.data(), bytes.size());
    tensors[name] = {dtype, std::move(shape), bytes.data(), bytes.size()};
  }

  Status write(const std::string &path,
               const std::map<std::string, std::string> &metadata = {}) {
    return writeSafetensors(path, tensors, metadata);
  }
};

/// Every executable records a Hugging Face config, so that tpc-run saves
/// checkpoint directories of it (the runtime only copies it there).
Status writeExecutable(const std::string &path, fb::ExecutableT exe) {
  if (exe.hf_config.empty())
    exe.hf_config = R"({"model_type":"tpc-test","vocab_size":8})";
  std::vector<uint8_t> payload = pack(exe);
  return writeExecutableFile(path, payload.data(), payload.size());
}

/// Distinct, exactly representable values.
std::vector<float> values(size_t count, float first, float step) {
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i)
    out[i] = first + step * static_cast<float>(i);
  return out;
}

std::vector<uint16_t> bf16Values(size_t count, float first, float step) {
  std::vector<uint16_t> out;
  for (float v : values(count, first, step))
    out.push_back(floatToBFloat16(v));
  return out;
}

/// The weights, under the model's names.
void addWeights(Tensors &t) {
  t.add("a.weight", DType::F32, {5, 3}, values(15, 1.0f, 0.5f));
  t.add("b.weight", DType::F32, {4, 6}, values(24, -3.0f, 0.25f));
  t.add("c.bias", DType::F32, {3}, values(3, 0.75f, -0.5f));
  t.add("d.weight", DType::BF16, {3, 2}, bf16Values(6, 2.0f, -0.75f));
  t.add("e.table", DType::F32, {8, 2}, values(16, -1.0f, 0.125f));
}

template <typename T>
Status writeTokens(const std::string &path, size_t count, unsigned start) {
  std::vector<T> tokens(count);
  for (size_t i = 0; i < count; ++i)
    tokens[i] = static_cast<T>((start + 3 * i + i / 5) % 8);
  return writeFileAtomically(path, {{tokens.data(), count * sizeof(T)}});
}

Status writeAll(const std::string &dir) {
  if (Status s = writeExecutable(dir + "/ranks2.tpcx", ranksModel({{"tp", 2}}));
      !s)
    return s;
  if (Status s = writeExecutable(dir + "/ranks4.tpcx",
                                 ranksModel({{"dp", 2}, {"tp", 2}}));
      !s)
    return s;
  if (Status s = writeExecutable(dir + "/twin.tpcx", ranksModel({})); !s)
    return s;

  Tensors weights;
  addWeights(weights);
  weights.add("unused", DType::F32, {2}, values(2, 0.0f, 1.0f));
  if (Status s = weights.write(dir + "/weights.safetensors"); !s)
    return s;

  Tensors batch;
  batch.add("input_ids", DType::I64, {4, 3},
            std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4});
  batch.add("labels", DType::I32, {4, 3},
            std::vector<int32_t>{7, 6, 5, 4, 3, 2, 1, 0, 7, 6, 5, 4});
  if (Status s = batch.write(dir + "/batch.safetensors"); !s)
    return s;

  if (Status s = writeTokens<uint16_t>(dir + "/tokens.bin", 200, 0); !s)
    return s;
  if (Status s = writeTokens<uint16_t>(dir + "/eval.bin", 60, 4); !s)
    return s;

  // A checkpoint as tpc-run writes one, with optimizer state that is not
  // zero, so loading it scatters the state too.
  Tensors ckpt;
  addWeights(ckpt);
  ckpt.add("a.weight.exp_avg", DType::F32, {5, 3}, values(15, 0.5f, -0.125f));
  ckpt.add("b.weight.exp_avg", DType::F32, {4, 6}, values(24, 7.0f, -0.5f));
  ckpt.add("step", DType::I64, {}, std::vector<int64_t>{3});
  ckpt.add("random.seed", DType::U64, {}, std::vector<uint64_t>{5});
  ckpt.add("data.seed", DType::U64, {}, std::vector<uint64_t>{0});
  ckpt.add("data.position", DType::I64, {}, std::vector<int64_t>{0});
  ckpt.add("eval.position", DType::I64, {}, std::vector<int64_t>{0});
  return ckpt.write(dir + "/ckpt-in.safetensors",
                    {{"format", "tpc-checkpoint"}, {"version", "1"}});
}

/// The pipeline fixtures.
Status writePipeline(const std::string &dir) {
  PipelineOptions options;
  if (Status s = writeExecutable(dir + "/pipe2.tpcx", pipelineModel(options));
      !s)
    return s;
  options.dp = 2;
  if (Status s = writeExecutable(dir + "/pipe4.tpcx", pipelineModel(options));
      !s)
    return s;
  options.stages = 1;
  if (Status s = writeExecutable(dir + "/pipe-dp.tpcx", pipelineModel(options));
      !s)
    return s;
  options.dp = 1;
  if (Status s =
          writeExecutable(dir + "/pipe-twin.tpcx", pipelineModel(options));
      !s)
    return s;
  // The step of ActionExecutables.h as functions and actions and unrolled,
  // on one stage and on two, 4 microbatches.
  for (int64_t stages : {1, 2})
    for (bool actions : {true, false}) {
      ActionModelOptions act;
      act.stages = stages;
      act.microbatches = 4;
      act.actions = actions;
      std::string name = dir + "/act" + std::to_string(stages) +
                         (actions ? "" : "-unrolled") + ".tpcx";
      if (Status s = writeExecutable(name, actionModel(act)); !s)
        return s;
    }
  // And on two stages with started transfers, both stages sending first.
  ActionModelOptions started;
  started.stages = 2;
  started.microbatches = 4;
  started.startedTransfers = true;
  if (Status s = writeExecutable(dir + "/act2-started.tpcx",
                                 actionModel(started));
      !s)
    return s;
  Tensors weights;
  weights.add("e.weight", DType::F32, {8, 4}, values(32, -1.0f, 0.0625f));
  weights.add("w0.weight", DType::F32, {4, 4}, values(16, 0.5f, -0.0625f));
  weights.add("w1.weight", DType::F32, {4, 4}, values(16, -0.375f, 0.05f));
  if (Status s = weights.write(dir + "/pipe-weights.safetensors"); !s)
    return s;
  Tensors batch;
  batch.add("input_ids", DType::I64, {4, 3},
            std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4});
  batch.add("labels", DType::I64, {4, 3},
            std::vector<int64_t>{7, 6, 5, -100, 3, 2, 1, 0, 7, 6, 5, 4});
  if (Status s = batch.write(dir + "/pipe-batch.safetensors"); !s)
    return s;
  if (Status s = writeTokens<uint16_t>(dir + "/pipe-tokens.bin", 200, 1); !s)
    return s;
  return writeTokens<uint16_t>(dir + "/pipe-eval.bin", 60, 5);
}

/// Compares the named tensors of two files.
int same(const std::string &a, const std::string &b,
         const std::vector<std::string> &names) {
  SafetensorsFile fa, fb;
  if (Status s = SafetensorsFile::open(a, fa); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (Status s = SafetensorsFile::open(b, fb); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  int differences = 0;
  for (const std::string &name : names) {
    const TensorView *x = fa.find(name), *y = fb.find(name);
    if (!x || !y) {
      std::printf("%s: missing in %s\n", name.c_str(),
                  x ? b.c_str() : a.c_str());
      ++differences;
    } else if (x->dtype != y->dtype || x->shape != y->shape ||
               x->numBytes != y->numBytes ||
               std::memcmp(x->data, y->data, x->numBytes) != 0) {
      std::printf("%s: %s %s differs from %s %s\n", name.c_str(),
                  dtypeName(x->dtype), formatShape(x->shape).c_str(),
                  dtypeName(y->dtype), formatShape(y->shape).c_str());
      ++differences;
    }
  }
  return differences == 0 ? 0 : 1;
}

/// a_padded of `out` is a.weight of `weights` and a row of zeros.
int padded(const std::string &out, const std::string &weights) {
  SafetensorsFile fo, fw;
  if (!SafetensorsFile::open(out, fo) || !SafetensorsFile::open(weights, fw)) {
    std::printf("cannot open %s or %s\n", out.c_str(), weights.c_str());
    return 1;
  }
  const TensorView *p = fo.find("a_padded"), *a = fw.find("a.weight");
  if (!p || !a || p->shape != std::vector<int64_t>{6, 3} ||
      a->shape != std::vector<int64_t>{5, 3} || p->dtype != DType::F32 ||
      a->dtype != DType::F32) {
    std::printf("no F32 a_padded [6, 3] in %s or a.weight [5, 3] in %s\n",
                out.c_str(), weights.c_str());
    return 1;
  }
  if (std::memcmp(p->data, a->data, a->numBytes) != 0) {
    std::printf("a_padded's first 5 rows are not a.weight\n");
    return 1;
  }
  for (uint64_t i = a->numBytes; i < p->numBytes; ++i)
    if (p->data[i] != 0) {
      std::printf("a_padded's padding row is not zero\n");
      return 1;
    }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "write" && argc == 3) {
    if (Status s = writeAll(argv[2]); !s) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    return 0;
  }
  if (mode == "pipeline" && argc == 3) {
    if (Status s = writePipeline(argv[2]); !s) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    return 0;
  }
  if (mode == "same" && argc >= 5)
    return same(argv[2], argv[3],
                std::vector<std::string>(argv + 4, argv + argc));
  if (mode == "padded" && argc == 4)
    return padded(argv[2], argv[3]);
  std::fprintf(stderr, "usage: tpcrt-ranks-fixtures write DIR | pipeline DIR "
                       "| same A B NAME... | padded OUT WEIGHTS\n");
  return 2;
}
