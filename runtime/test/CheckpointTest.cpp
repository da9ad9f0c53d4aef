//===- CheckpointTest.cpp - checkpoint directories and files --------------===//
//
// saveCheckpoint / loadCheckpoint through the API on the training model of
// TestExecutables.h: a directory (Hugging Face's layout plus tpc's training
// state) and a single file hold the same tensors, a run resumed from either
// continues bit for bit, the params are sharded as save_pretrained shards
// them, a save into a directory removes what an earlier save left there, and
// every missing piece is an error naming it. tpc_run_cli.sh checks the same
// through tpc-run; hf_from_pretrained.py loads a directory in transformers.
//
//===----------------------------------------------------------------------===//

#include "SeededRun.h"
#include "TestExecutables.h"
#include "tpcrt/Checkpoint.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Safetensors.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

/// The config the tests' executables record (any JSON object will do: the
/// runtime only copies it).
const char kConfig[] = R"({"model_type":"gpt2","n_embd":8,"vocab_size":16,)"
                       R"("architectures":["GPT2LMHeadModel"],"n_layer":1})";

fb::ExecutableT trainingModel(const std::string &hfConfig = kConfig) {
  TrainingOptions o;
  o.microbatches = 2;
  o.dropout = 0.1;
  fb::ExecutableT exe = tinyTrainingModel(o);
  exe.hf_config = hfConfig;
  return exe;
}

/// A fresh directory under the test's temporary folder, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = ::testing::TempDir() + "tpcrt-ckpt-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    EXPECT_NE(::mkdtemp(buffer.data()), nullptr);
    path = buffer.data();
  }
  ~TempDir() { removeTree(path); }
  std::string operator/(const std::string &name) const {
    return path + "/" + name;
  }
  static void removeTree(const std::string &path) {
    if (DIR *dir = ::opendir(path.c_str())) {
      while (const dirent *entry = ::readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..")
          removeTree(path + "/" + name);
      }
      ::closedir(dir);
      ::rmdir(path.c_str());
    } else {
      ::unlink(path.c_str());
    }
  }
};

std::set<std::string> filesIn(const std::string &path) {
  std::set<std::string> names;
  if (DIR *dir = ::opendir(path.c_str())) {
    while (const dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.insert(name);
    }
    ::closedir(dir);
  }
  return names;
}

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Every tensor of a file, by name: dtype, shape and bytes.
struct Contents {
  std::map<std::string, std::string> tensors;
  std::map<std::string, std::string> metadata;
};

Contents contentsOf(const std::string &path) {
  SafetensorsFile file;
  Status s = SafetensorsFile::open(path, file);
  EXPECT_TRUE(s.isOk()) << s.message();
  Contents out;
  for (const auto &[name, view] : file.tensors())
    out.tensors[name] = std::string(dtypeName(view.dtype)) + " " +
                        formatShape(view.shape) + " " +
                        std::string(reinterpret_cast<const char *>(view.data),
                                    view.numBytes);
  out.metadata = file.metadata();
  return out;
}

/// A trainer whose data counters move with its steps, as tpc-run's do.
struct Trained : SeededRun {
  RunCounters counters;
  explicit Trained(const fb::ExecutableT &exe) : SeededRun(exe, {1, 6}) {
    counters.dataSeed = (uint64_t(1) << 63) + 5; // above the int64 range
  }
  void steps(int count) {
    for (int i = 0; i < count; ++i) {
      ASSERT_TRUE(step());
      ++counters.dataPosition;
      counters.evalPosition += 2;
    }
  }
  std::vector<uint8_t> bytes(uint32_t buffer) {
    const TensorRef &t = interpreter.program().buffers[buffer];
    std::vector<uint8_t> out(t.bytes);
    EXPECT_TRUE(interpreter.readBuffer(buffer, out.data(), out.size()));
    return out;
  }
  /// Every param and state buffer.
  std::vector<std::vector<uint8_t>> everything() {
    std::vector<std::vector<uint8_t>> out;
    for (const ParamRef &p : program().params)
      out.push_back(bytes(p.buffer));
    for (const StateRef &s : program().state)
      out.push_back(bytes(s.buffer));
    return out;
  }
};

std::vector<std::string> shards(std::vector<uint64_t> sizes, uint64_t max) {
  return shardCheckpointFiles(sizes, max);
}

TEST(CheckpointTest, TheFormatFollowsThePath) {
  EXPECT_EQ(checkpointFormatOf("c.safetensors"), CheckpointFormat::File);
  EXPECT_EQ(checkpointFormatOf("out/step3.safetensors"),
            CheckpointFormat::File);
  EXPECT_EQ(checkpointFormatOf("out/step3"), CheckpointFormat::Directory);
  EXPECT_EQ(checkpointFormatOf("c.ckpt"), CheckpointFormat::Directory);
  EXPECT_EQ(checkpointFormatOf("c.safetensors/"), CheckpointFormat::Directory);
}

// huggingface_hub's split_state_dict_into_shards_factory (save_pretrained),
// including its docstring's example: [6, 6, 2, 6, 2, 2] with a limit of 10
// give [6], [6 + 2], [6 + 2 + 2].
TEST(CheckpointTest, ShardsAsSavePretrained) {
  auto shard = [](int i, int n) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", i, n);
    return std::string(name);
  };
  EXPECT_EQ(shards({6, 6, 2, 6, 2, 2}, 10),
            (std::vector<std::string>{shard(1, 3), shard(2, 3), shard(2, 3),
                                      shard(3, 3), shard(3, 3), shard(3, 3)}));
  // A tensor above the limit is a shard of its own, appended when met; the
  // current shard goes on around it.
  EXPECT_EQ(shards({3, 20, 4, 5}, 10),
            (std::vector<std::string>{shard(2, 3), shard(1, 3), shard(2, 3),
                                      shard(3, 3)}));
  // At the limit still fits; one shard is model.safetensors.
  EXPECT_EQ(shards({5, 5}, 10),
            (std::vector<std::string>{"model.safetensors",
                                      "model.safetensors"}));
  EXPECT_EQ(shards({20}, 10),
            (std::vector<std::string>{"model.safetensors"}));
  EXPECT_TRUE(shards({}, 10).empty());
  EXPECT_EQ(kDefaultMaxShardBytes, 5000000000ull) << "save_pretrained's 5GB";
}

TEST(CheckpointTest, ADirectoryHoldsWhatTheSingleFileHolds) {
  TempDir tmp;
  Trained run(trainingModel());
  run.steps(3);
  ASSERT_TRUE(saveCheckpoint(tmp / "ckpt", run.interpreter, run.counters));
  ASSERT_TRUE(
      saveCheckpoint(tmp / "ckpt.safetensors", run.interpreter, run.counters));
  EXPECT_EQ(filesIn(tmp / "ckpt"),
            (std::set<std::string>{"config.json", "model.safetensors",
                                   "training_state.safetensors"}));

  // config.json: the executable's config, pretty-printed.
  std::string config = readText(tmp / "ckpt/config.json");
  EXPECT_EQ(config, "{\n"
                    "  \"architectures\": [\n"
                    "    \"GPT2LMHeadModel\"\n"
                    "  ],\n"
                    "  \"model_type\": \"gpt2\",\n"
                    "  \"n_embd\": 8,\n"
                    "  \"n_layer\": 1,\n"
                    "  \"vocab_size\": 16\n"
                    "}\n");

  Contents file = contentsOf(tmp / "ckpt.safetensors");
  Contents model = contentsOf(tmp / "ckpt/model.safetensors");
  Contents state = contentsOf(tmp / "ckpt/training_state.safetensors");
  EXPECT_EQ(model.metadata,
            (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(state.metadata,
            (std::map<std::string, std::string>{
                {"format", "pt"},
                {"tpc.format", "tpc-training-state"},
                {"tpc.version", "1"},
                {"random.seed", "77"},
                {"data.seed", "9223372036854775813"}}));
  // The params in model.safetensors, the rest in the training state, each
  // tensor as the single file has it but the seeds (metadata, not U64).
  const Program &program = run.program();
  EXPECT_EQ(model.tensors.size(), program.params.size());
  for (const ParamRef &param : program.params)
    EXPECT_EQ(model.tensors[param.hfName], file.tensors[param.hfName])
        << param.hfName;
  EXPECT_EQ(state.tensors.size(), program.state.size() + 3);
  for (const auto &[name, value] : state.tensors) {
    EXPECT_EQ(value, file.tensors[name]) << name;
    EXPECT_NE(value.substr(0, 4), "U64 ") << name << ": no U64";
  }
  EXPECT_EQ(file.tensors.size(),
            model.tensors.size() + state.tensors.size() + 2);
  EXPECT_TRUE(file.tensors.count("random.seed") &&
              file.tensors.count("data.seed"));
  EXPECT_EQ(state.tensors["step"].substr(0, 7), "I64 [] ");
  int64_t step = 0, position = 0, evalPosition = 0;
  std::memcpy(&step, state.tensors["step"].data() + 7, 8);
  std::memcpy(&position, state.tensors["data.position"].data() + 7, 8);
  std::memcpy(&evalPosition, state.tensors["eval.position"].data() + 7, 8);
  EXPECT_EQ(step, 3);
  EXPECT_EQ(position, 3);
  EXPECT_EQ(evalPosition, 6);
}

// From a directory, from the single file (the format before directories),
// and from a sharded directory, a run continues exactly as the one that
// never stopped.
TEST(CheckpointTest, ResumingFromADirectoryIsBitIdentical) {
  TempDir tmp;
  Trained full(trainingModel());
  full.steps(2);
  ASSERT_TRUE(saveCheckpoint(tmp / "half", full.interpreter, full.counters));
  ASSERT_TRUE(saveCheckpoint(tmp / "half.safetensors", full.interpreter,
                             full.counters));
  CheckpointOptions tiny;
  tiny.maxShardBytes = 600;
  ASSERT_TRUE(saveCheckpoint(tmp / "sharded", full.interpreter, full.counters,
                             tiny));
  full.steps(2);
  std::vector<std::vector<uint8_t>> expected = full.everything();

  for (const char *from : {"half", "half.safetensors", "sharded"}) {
    SCOPED_TRACE(from);
    Trained resumed(trainingModel());
    RunCounters counters;
    Status s = loadCheckpoint(tmp / from, resumed.interpreter, counters);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(resumed.interpreter.step(), 2u);
    EXPECT_EQ(counters.dataSeed, full.counters.dataSeed);
    EXPECT_EQ(counters.dataPosition, 2u);
    EXPECT_EQ(counters.evalPosition, 4u);
    resumed.counters = counters;
    resumed.steps(2);
    EXPECT_EQ(resumed.interpreter.step(), 4u);
    EXPECT_TRUE(resumed.everything() == expected)
        << "the resumed run's params or state differ";
    ASSERT_TRUE(saveCheckpoint(tmp / (std::string(from) + "-resumed"),
                               resumed.interpreter, resumed.counters));
  }
  ASSERT_TRUE(saveCheckpoint(tmp / "full", full.interpreter, full.counters));
  for (const char *from : {"half", "half.safetensors", "sharded"})
    for (const char *file : {"config.json", "model.safetensors",
                             "training_state.safetensors"})
      EXPECT_EQ(readText(tmp / (std::string(from) + "-resumed/" + file)),
                readText(tmp / ("full/" + std::string(file))))
          << from << ": " << file;
}

TEST(CheckpointTest, ShardedDirectoriesHaveAnIndex) {
  TempDir tmp;
  Trained run(trainingModel());
  run.steps(1);
  CheckpointOptions tiny;
  tiny.maxShardBytes = 600;
  ASSERT_TRUE(saveCheckpoint(tmp / "c", run.interpreter, run.counters, tiny));
  // The params in order: wte 512 bytes, ln_f.weight 32, ln_f.bias 32,
  // c_fc.weight 1024, c_fc.bias 128, down.weight 1024, down.bias 32: the two
  // above 600 alone, the others as they come.
  EXPECT_EQ(filesIn(tmp / "c"),
            (std::set<std::string>{"config.json",
                                   "model-00001-of-00004.safetensors",
                                   "model-00002-of-00004.safetensors",
                                   "model-00003-of-00004.safetensors",
                                   "model-00004-of-00004.safetensors",
                                   "model.safetensors.index.json",
                                   "training_state.safetensors"}));
  EXPECT_EQ(readText(tmp / "c/model.safetensors.index.json"),
            "{\n"
            "  \"metadata\": {\n"
            "    \"total_size\": 2784\n"
            "  },\n"
            "  \"weight_map\": {\n"
            "    \"transformer.h.0.mlp.c_fc.bias\": "
            "\"model-00004-of-00004.safetensors\",\n"
            "    \"transformer.h.0.mlp.c_fc.weight\": "
            "\"model-00001-of-00004.safetensors\",\n"
            "    \"transformer.h.0.mlp.down.bias\": "
            "\"model-00004-of-00004.safetensors\",\n"
            "    \"transformer.h.0.mlp.down.weight\": "
            "\"model-00003-of-00004.safetensors\",\n"
            "    \"transformer.ln_f.bias\": "
            "\"model-00002-of-00004.safetensors\",\n"
            "    \"transformer.ln_f.weight\": "
            "\"model-00002-of-00004.safetensors\",\n"
            "    \"transformer.wte.weight\": "
            "\"model-00002-of-00004.safetensors\"\n"
            "  }\n"
            "}\n");
  for (int i = 1; i <= 4; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "c/model-%05d-of-00004.safetensors", i);
    EXPECT_EQ(contentsOf(tmp / name).metadata,
              (std::map<std::string, std::string>{{"format", "pt"}}));
  }
}

// A save into a directory replaces what an earlier save wrote there (shards
// of another count, the single file or the index, which tpc-run and
// from_pretrained would read before the new files) and leaves the rest.
TEST(CheckpointTest, ASaveRemovesWhatAnEarlierSaveLeft) {
  TempDir tmp;
  Trained run(trainingModel());
  run.steps(1);
  ASSERT_EQ(::mkdir((tmp / "c").c_str(), 0777), 0);
  std::string other = "{}";
  ASSERT_TRUE(writeFileAtomically(tmp / "c/tokenizer.json",
                                  {{other.data(), other.size()}}));
  ASSERT_TRUE(writeFileAtomically(tmp / "c/model-00001-of-00009.safetensors",
                                  {{other.data(), other.size()}}));
  CheckpointOptions tiny;
  tiny.maxShardBytes = 600;
  ASSERT_TRUE(saveCheckpoint(tmp / "c", run.interpreter, run.counters));
  EXPECT_EQ(filesIn(tmp / "c"),
            (std::set<std::string>{"config.json", "model.safetensors",
                                   "tokenizer.json",
                                   "training_state.safetensors"}));
  ASSERT_TRUE(saveCheckpoint(tmp / "c", run.interpreter, run.counters, tiny));
  EXPECT_EQ(filesIn(tmp / "c").count("model.safetensors"), 0u);
  EXPECT_EQ(filesIn(tmp / "c").size(), 8u);
  tiny.maxShardBytes = 1200;
  ASSERT_TRUE(saveCheckpoint(tmp / "c", run.interpreter, run.counters, tiny));
  EXPECT_EQ(filesIn(tmp / "c"),
            (std::set<std::string>{"config.json",
                                   "model-00001-of-00003.safetensors",
                                   "model-00002-of-00003.safetensors",
                                   "model-00003-of-00003.safetensors",
                                   "model.safetensors.index.json",
                                   "tokenizer.json",
                                   "training_state.safetensors"}));
  ASSERT_TRUE(saveCheckpoint(tmp / "c", run.interpreter, run.counters));
  EXPECT_EQ(filesIn(tmp / "c"),
            (std::set<std::string>{"config.json", "model.safetensors",
                                   "tokenizer.json",
                                   "training_state.safetensors"}));
  RunCounters counters;
  Trained resumed(trainingModel());
  ASSERT_TRUE(loadCheckpoint(tmp / "c", resumed.interpreter, counters));
  EXPECT_TRUE(resumed.everything() == run.everything());
}

TEST(CheckpointTest, ErrorsNameWhatIsMissing) {
  TempDir tmp;
  Trained run(trainingModel());
  run.steps(1);
  CheckpointOptions tiny;
  tiny.maxShardBytes = 600;
  ASSERT_TRUE(saveCheckpoint(tmp / "c", run.interpreter, run.counters));
  ASSERT_TRUE(saveCheckpoint(tmp / "s", run.interpreter, run.counters, tiny));
  auto load = [&](const std::string &path) {
    Trained other(trainingModel());
    RunCounters counters;
    return loadCheckpoint(path, other.interpreter, counters).message();
  };
  EXPECT_EQ(load(tmp / "absent"), tmp / "absent" +
                                       ": no such checkpoint directory");

  // Another dropout seed (tpc-compile --seed) cannot continue the run.
  {
    fb::ExecutableT reseeded = trainingModel();
    reseeded.seed = 78;
    Trained other(reseeded);
    RunCounters counters;
    EXPECT_EQ(loadCheckpoint(tmp / "s", other.interpreter, counters).message(),
              tmp / "s/training_state.safetensors" +
                  ": the checkpoint's dropout seed 77 is not the "
                  "executable's 78 (tpc-compile --seed): resuming would not "
                  "continue the same run");
  }

  ASSERT_EQ(::unlink((tmp / "s/model-00003-of-00004.safetensors").c_str()), 0);
  EXPECT_NE(load(tmp / "s").find("model-00003-of-00004.safetensors"),
            std::string::npos)
      << load(tmp / "s");

  ASSERT_EQ(::unlink((tmp / "c/model.safetensors").c_str()), 0);
  EXPECT_EQ(load(tmp / "c"),
            tmp / "c" +
                ": no model.safetensors or model.safetensors.index.json in it");

  ASSERT_EQ(::unlink((tmp / "c/training_state.safetensors").c_str()), 0);
  EXPECT_EQ(load(tmp / "c"),
            tmp / "c" +
                ": no training_state.safetensors in it (tpc's training state: "
                "optimizer state, step, seeds, data positions; a save that "
                "did not finish, or a Hugging Face model directory: --weights " +
                tmp / "c" + " loads its weights alone)");

  // An executable compiled before executables carried their config: no
  // directory (before anything runs, and at the save itself).
  std::string refusal =
      tmp / "d" +
      ": the executable records no Hugging Face config (it was compiled "
      "before executables carried one): recompile it (tpc-import, "
      "tpc-compile) to save a checkpoint directory, or save a single file "
      "with a path ending in .safetensors";
  EXPECT_EQ(checkCheckpointTarget(tmp / "d", "").message(), refusal);
  EXPECT_TRUE(checkCheckpointTarget(tmp / "d.safetensors", ""));
  EXPECT_TRUE(checkCheckpointTarget(tmp / "d", kConfig));
  Trained old(trainingModel(""));
  EXPECT_EQ(saveCheckpoint(tmp / "d", old.interpreter, old.counters).message(),
            refusal);
  EXPECT_TRUE(filesIn(tmp / "d").empty());
  EXPECT_TRUE(
      saveCheckpoint(tmp / "d.safetensors", old.interpreter, old.counters));

  // A directory cannot replace a file.
  ASSERT_TRUE(writeFileAtomically(tmp / "plain", {{"x", 1}}));
  std::string notADirectory =
      tmp / "plain" +
      ": exists and is not a directory (a checkpoint directory; a "
      "single-file checkpoint takes a path ending in .safetensors)";
  EXPECT_EQ(checkCheckpointTarget(tmp / "plain", kConfig).message(),
            notADirectory);
  EXPECT_EQ(saveCheckpoint(tmp / "plain", run.interpreter, run.counters)
                .message(),
            notADirectory);
}

} // namespace
