//===- RanksTest.cpp - params and inputs on several ranks -----------------===//
//
// The placement arithmetic (a whole tensor -> view -> padding -> a rank's
// block, and back) against Layout's blocks of an explicitly padded tensor;
// then every rank of a mesh executable, each run in this process with a
// stand-in world communicator (the model has no collectives), filled by
// --init-seed, --weights, --inputs, --synthetic-seed and token data: the
// blocks of all ranks put together must be, byte for byte, what the one-rank
// twin holds.
//
//===----------------------------------------------------------------------===//

#include "RanksExecutables.h"
#include "tpcrt/Comm.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/TokenData.h"
#include "tpcrt/Weights.h"

#include "gtest/gtest.h"

#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <numeric>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

//===----------------------------------------------------------------------===//
// Placement arithmetic
//===----------------------------------------------------------------------===//

struct PlacementCase {
  std::vector<int64_t> meshSizes;
  std::vector<int64_t> view, padded;
  Splits splits;
};

Mesh meshOf(const std::vector<int64_t> &sizes) {
  Mesh mesh;
  for (size_t a = 0; a < sizes.size(); ++a)
    mesh.names.push_back("m" + std::to_string(a));
  mesh.sizes = sizes;
  return mesh;
}

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

/// The padded tensor written out element by element: value (flat index in
/// the view) + 1 inside the view, 0 in the padding.
std::vector<int32_t> explicitlyPadded(const PlacementCase &c) {
  std::vector<int32_t> padded(static_cast<size_t>(product(c.padded)), 0);
  std::vector<int64_t> index(c.padded.size(), 0);
  for (size_t flat = 0; flat < padded.size(); ++flat) {
    int64_t rest = static_cast<int64_t>(flat), source = 0;
    bool inside = true;
    for (size_t d = c.padded.size(); d-- > 0;) {
      index[d] = rest % c.padded[d];
      rest /= c.padded[d];
    }
    for (size_t d = 0; d < c.padded.size(); ++d) {
      inside &= index[d] < c.view[d];
      source = source * c.view[d] + index[d];
    }
    if (inside)
      padded[flat] = static_cast<int32_t>(source + 1);
  }
  return padded;
}

TEST(RanksPlacement, BlocksOfEveryRankRebuildTheTensor) {
  std::vector<PlacementCase> cases = {
      {{2}, {5, 3}, {6, 3}, {{0}, {}}},
      {{2}, {4, 2, 3}, {4, 2, 4}, {{}, {0}, {}}},
      {{2, 2}, {3, 2}, {4, 2}, {{0, 1}, {}}},
      {{2, 2}, {3, 2}, {4, 2}, {{1, 0}, {}}},
      {{2, 3}, {7, 5}, {8, 6}, {{0}, {1}}},
      {{2, 3}, {7, 5}, {8, 6}, {{}, {1}}},
      {{3}, {4}, {6}, {{0}}},
      {{2}, {3, 4}, {3, 4}, {}},
      {{2}, {2, 3}, {3, 3}, {}},
      {{}, {}, {}, {}},
  };
  for (const PlacementCase &c : cases) {
    SCOPED_TRACE("view " + formatShape(c.view) + " padded " +
                 formatShape(c.padded) + " mesh " + formatShape(c.meshSizes));
    Mesh mesh = meshOf(c.meshSizes);
    std::vector<int32_t> whole(static_cast<size_t>(product(c.view)));
    std::iota(whole.begin(), whole.end(), 1);
    std::vector<int32_t> padded = explicitlyPadded(c);
    std::vector<int32_t> rebuilt(whole.size(), 0);
    for (int64_t r = 0; r < mesh.worldSize(); ++r) {
      std::vector<int64_t> coords = mesh.coordinates(r);
      TensorPlacement placement;
      ASSERT_TRUE(TensorPlacement::create(mesh, coords, c.view, c.padded,
                                          c.splits, placement));
      Block reference;
      ASSERT_TRUE(blockOf(mesh, coords, c.padded, c.splits, reference));
      ASSERT_EQ(placement.block.shape, reference.shape);
      ASSERT_EQ(placement.block.offset, reference.offset);
      std::vector<int32_t> expected(
          static_cast<size_t>(placement.blockElements()));
      extractBlock(padded.data(), c.padded, reference, expected.data(),
                   sizeof(int32_t));
      std::vector<int32_t> local(expected.size(), -7);
      extractPlaced(placement, whole.data(), local.data(), sizeof(int32_t));
      EXPECT_EQ(local, expected) << "rank " << r;
      insertPlaced(placement, local.data(), rebuilt.data(), sizeof(int32_t));
    }
    EXPECT_EQ(rebuilt, whole);
  }
}

std::vector<std::vector<int64_t>> runsOf(const TensorPlacement &placement) {
  std::vector<std::vector<int64_t>> runs;
  placement.forEachRun([&](int64_t local, int64_t source, int64_t count) {
    runs.push_back({local, source, count});
  });
  return runs;
}

TEST(RanksPlacement, RunsAreAsLongAsPossible) {
  Mesh two = meshOf({2});
  TensorPlacement p;
  // Whole and unpadded: one run.
  ASSERT_TRUE(TensorPlacement::create(two, {1}, {4, 5}, {}, {}, p));
  EXPECT_EQ(runsOf(p), (std::vector<std::vector<int64_t>>{{0, 0, 20}}));
  // Split on the last dim: one run per row.
  ASSERT_TRUE(TensorPlacement::create(two, {1}, {2, 6}, {}, {{}, {0}}, p));
  EXPECT_EQ(runsOf(p),
            (std::vector<std::vector<int64_t>>{{0, 3, 3}, {3, 9, 3}}));
  // The second half of [5, 3] padded to [6, 3]: rows 3-4, then padding.
  ASSERT_TRUE(TensorPlacement::create(two, {1}, {5, 3}, {6, 3}, {{0}, {}}, p));
  EXPECT_EQ(runsOf(p),
            (std::vector<std::vector<int64_t>>{{0, 9, 6}, {6, -1, 3}}));
  // Padding at the end of every row.
  ASSERT_TRUE(TensorPlacement::create(two, {0}, {2, 3}, {2, 4}, {}, p));
  EXPECT_EQ(runsOf(p), (std::vector<std::vector<int64_t>>{
                           {0, 0, 3}, {3, -1, 1}, {4, 3, 3}, {7, -1, 1}}));
  // A scalar.
  ASSERT_TRUE(TensorPlacement::create(two, {0}, {}, {}, {}, p));
  EXPECT_EQ(runsOf(p), (std::vector<std::vector<int64_t>>{{0, 0, 1}}));
}

TEST(RanksPlacement, BadShapesAreErrors) {
  Mesh two = meshOf({2});
  TensorPlacement p;
  Status s = TensorPlacement::create(two, {0}, {5, 3}, {4, 3}, {}, p);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "padded shape [4, 3] is smaller than the view shape [5, 3]");
  s = TensorPlacement::create(two, {0}, {5, 3}, {6}, {}, p);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "padded shape [6] and view shape [5, 3] differ in rank");
  s = TensorPlacement::create(two, {0}, {5, 3}, {}, {{0}, {}}, p);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "dimension 0 of size 5 is not divisible into 2 pieces");
}

//===----------------------------------------------------------------------===//
// Every rank of a mesh executable against the one-rank twin
//===----------------------------------------------------------------------===//

/// A world communicator that only knows its rank and size: enough for an
/// executable without collectives, which never calls the others.
class StandInWorld final : public Communicator {
public:
  StandInWorld(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backendName() const override { return "stand-in"; }
  Status allReduceSum(float *, std::size_t) override { return none(); }
  Status allReduceSum(int64_t *, std::size_t) override { return none(); }
  Status allReduceMax(float *, std::size_t) override { return none(); }
  Status allGather(const void *, void *, std::size_t) override {
    return none();
  }
  Status reduceScatterSum(const float *, float *, std::size_t) override {
    return none();
  }
  Status allToAll(const void *, void *, std::size_t) override { return none(); }
  Status broadcast(void *, std::size_t, int) override { return none(); }
  Status send(const void *, std::size_t, int, int) override { return none(); }
  Status recv(void *, std::size_t, int, int) override { return none(); }
  Status barrier() override { return none(); }
  Status split(int, int, std::unique_ptr<Communicator> &) override {
    return none();
  }

private:
  static Status none() {
    return Status::error("the stand-in world does not communicate");
  }
  int rank_, size_;
};

class RanksRun : public ::testing::TestWithParam<MeshAxes> {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcrt-ranks-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    meshExe = pack(ranksModel(GetParam(), /*collectives=*/false));
    twinExe = pack(ranksModel({}, false));
    for (const auto &axis : GetParam())
      ranks *= static_cast<int>(axis.second);
    worlds.resize(ranks);
    interpreters.resize(ranks);
    for (int r = 0; r < ranks; ++r) {
      worlds[r] = std::make_unique<StandInWorld>(r, ranks);
      const fb::Executable &exe = *fb::GetExecutable(meshExe.data());
      ASSERT_TRUE(checkExecutable(exe));
      Status s = Interpreter::create(exe, createCpuDevice(), interpreters[r],
                                     worlds[r].get());
      ASSERT_TRUE(s) << s.message();
    }
    const fb::Executable &twinRoot = *fb::GetExecutable(twinExe.data());
    ASSERT_TRUE(checkExecutable(twinRoot));
    ASSERT_TRUE(Interpreter::create(twinRoot, createCpuDevice(), twin));
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  /// The whole tensor of `param`'s buffer (or of a buffer laid out as it)
  /// put together from every rank's block.
  std::vector<uint8_t> gathered(size_t paramIndex, bool fromTwin = false) {
    std::vector<uint8_t> whole;
    int count = fromTwin ? 1 : ranks;
    for (int r = 0; r < count; ++r) {
      Interpreter &in = fromTwin ? twin : interpreters[r];
      const ParamRef &param = in.program().params[paramIndex];
      const TensorRef &buffer = in.program().buffers[param.buffer];
      uint64_t width = executableDTypeSize(buffer.dtype);
      whole.resize(static_cast<size_t>(product(param.viewShape)) * width);
      std::vector<uint8_t> local(buffer.bytes);
      EXPECT_TRUE(in.readBuffer(param.buffer, local.data(), local.size()));
      TensorPlacement placement;
      EXPECT_TRUE(paramPlacement(in, param, placement));
      // Padding is zero in every buffer.
      placement.forEachRun([&](int64_t at, int64_t source, int64_t n) {
        if (source >= 0)
          return;
        for (int64_t i = at * width; i < (at + n) * int64_t(width); ++i)
          EXPECT_EQ(local[i], 0) << param.hfName << " rank " << r;
      });
      insertPlaced(placement, local.data(), whole.data(), width);
    }
    return whole;
  }

  void expectParamsAsTwin() {
    const Program &program = twin.program();
    for (size_t i = 0; i < program.params.size(); ++i)
      EXPECT_EQ(gathered(i), gathered(i, true)) << program.params[i].hfName;
  }

  /// The inputs of every rank put together, by buffer: equal to the twin's.
  void expectInputsAsTwin(const std::vector<HostInputs> &mine,
                          const HostInputs &twins) {
    const Program &program = interpreters[0].program();
    ASSERT_EQ(mine.size(), static_cast<size_t>(ranks));
    for (size_t e = 0; e < twins.entries.size(); ++e) {
      std::vector<uint8_t> whole(twins.entries[e].bytes.size());
      std::vector<int64_t> shape = program.globalShapeOf(program.inputs[e]);
      for (int r = 0; r < ranks; ++r) {
        const HostInputs::Entry &entry = mine[r].entries[e];
        EXPECT_EQ(entry.bytes.size() * ranks / whole.size() * whole.size(),
                  entry.bytes.size() * ranks);
        insertBlock(entry.bytes.data(), entry.block, whole.data(), shape,
                    sizeof(int64_t));
      }
      EXPECT_EQ(whole, twins.entries[e].bytes) << program.inputs[e].name;
      EXPECT_EQ(mine[0].tokens, twins.tokens);
    }
  }

  std::string dir;
  std::vector<uint8_t> meshExe, twinExe;
  int ranks = 1;
  std::vector<std::unique_ptr<StandInWorld>> worlds;
  std::vector<Interpreter> interpreters;
  Interpreter twin;
};

TEST_P(RanksRun, InitSeedDrawsTheTwinsTensors) {
  for (Interpreter &in : interpreters)
    ASSERT_TRUE(initWeights(17, in));
  ASSERT_TRUE(initWeights(17, twin));
  expectParamsAsTwin();
}

/// Writes `count` values of `dtype` made from `value(i)` as tensor `name`.
struct TensorFile {
  std::list<std::vector<uint8_t>> storage;
  std::map<std::string, TensorToWrite> tensors;

  template <typename ValueFn>
  void add(const std::string &name, DType dtype, std::vector<int64_t> shape,
           ValueFn value) {
    int64_t n = product(shape);
    std::vector<uint8_t> &bytes = storage.emplace_back(n * dtypeSize(dtype));
    for (int64_t i = 0; i < n; ++i) {
      double v = value(i);
      if (dtype == DType::F64) {
        std::memcpy(&bytes[8 * i], &v, 8);
      } else if (dtype == DType::F32) {
        auto f = static_cast<float>(v);
        std::memcpy(&bytes[4 * i], &f, 4);
      } else if (dtype == DType::I64) {
        auto k = static_cast<int64_t>(v);
        std::memcpy(&bytes[8 * i], &k, 8);
      } else {
        auto f = static_cast<float>(v);
        uint16_t bits =
            dtype == DType::BF16 ? floatToBFloat16(f) : floatToHalf(f);
        std::memcpy(&bytes[2 * i], &bits, 2);
      }
    }
    tensors[name] = {dtype, std::move(shape), bytes.data(), bytes.size()};
  }
};

TEST_P(RanksRun, WeightsAreScatteredAsTheTwinLoadsThem) {
  // Every source dtype: raw copies (f32, bf16) and conversions (f64, f16).
  TensorFile file;
  file.add("a.weight", DType::F32, {5, 3}, [](int64_t i) { return i + 0.5; });
  file.add("b.weight", DType::F64, {4, 6},
           [](int64_t i) { return 1.0 / (i + 3); });
  file.add("c.bias", DType::F16, {3}, [](int64_t i) { return -i - 0.25; });
  file.add("d.weight", DType::BF16, {3, 2}, [](int64_t i) { return i * 1.5; });
  file.add("e.table", DType::F32, {8, 2}, [](int64_t i) { return i * 0.1; });
  std::string path = dir + "/w.safetensors";
  ASSERT_TRUE(writeSafetensors(path, file.tensors));
  for (Interpreter &in : interpreters) {
    Status s = loadWeights(path, in);
    ASSERT_TRUE(s) << s.message();
  }
  ASSERT_TRUE(loadWeights(path, twin));
  expectParamsAsTwin();
  // And the twin holds the file's values (a.weight is f32 both ways).
  std::vector<uint8_t> a = gathered(0, true);
  EXPECT_EQ(0, std::memcmp(a.data(), file.tensors["a.weight"].data, a.size()));
}

TEST_P(RanksRun, InputsAreBlocksOfTheGlobalBatch) {
  const Program &program = interpreters[0].program();
  // The global batch is [4, 3] whatever the layout.
  EXPECT_EQ(program.globalShapeOf(*program.findInput("input_ids")),
            (std::vector<int64_t>{4, 3}));
  TensorFile file;
  file.add("input_ids", DType::I64, {4, 3}, [](int64_t i) { return i % 8; });
  file.add("labels", DType::I64, {4, 3},
           [](int64_t i) { return (5 * i + 1) % 8; });
  std::string path = dir + "/batch.safetensors";
  ASSERT_TRUE(writeSafetensors(path, file.tensors));
  std::vector<HostInputs> mine(ranks);
  HostInputs twins;
  for (int r = 0; r < ranks; ++r)
    ASSERT_TRUE(readInputs(path, interpreters[r].program(), mine[r]));
  ASSERT_TRUE(readInputs(path, twin.program(), twins));
  expectInputsAsTwin(mine, twins);

  for (int r = 0; r < ranks; ++r)
    ASSERT_TRUE(syntheticInputs(23, interpreters[r].program(), mine[r]));
  ASSERT_TRUE(syntheticInputs(23, twin.program(), twins));
  expectInputsAsTwin(mine, twins);

  // A file holding one rank's block is refused with the global shape.
  TensorFile local;
  local.add("input_ids", DType::I64, {4 / ranks, 3}, [](int64_t) { return 1; });
  local.add("labels", DType::I64, {4 / ranks, 3}, [](int64_t) { return 1; });
  std::string localPath = dir + "/local.safetensors";
  ASSERT_TRUE(writeSafetensors(localPath, local.tensors));
  if (ranks > 1) {
    Status s = readInputs(localPath, program, mine[0]);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("expected [4, 3]"), std::string::npos)
        << s.message();
  }
}

TEST_P(RanksRun, TokenDataDrawsTheGlobalBatch) {
  std::vector<uint16_t> tokens(97);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint16_t>((i * 5 + i / 3) % 8);
  std::string path = dir + "/tokens.bin";
  ASSERT_TRUE(writeFileAtomically(
      path, {{tokens.data(), tokens.size() * sizeof(uint16_t)}}));
  TokenFile file;
  ASSERT_TRUE(TokenFile::open(path, TokenDType::U16, file));
  std::vector<TokenSampler> samplers(ranks);
  for (int r = 0; r < ranks; ++r)
    ASSERT_TRUE(TokenSampler::create(file, 3, "data", interpreters[r].program(),
                                     samplers[r]));
  TokenSampler twinSampler;
  ASSERT_TRUE(
      TokenSampler::create(file, 3, "data", twin.program(), twinSampler));
  // Draws 0 and 5: the data position counts global batches.
  for (uint64_t draw : {0, 5}) {
    std::vector<HostInputs> mine(ranks);
    for (int r = 0; r < ranks; ++r) {
      ASSERT_TRUE(samplers[r].sample(draw));
      mine[r] = samplers[r].inputs();
    }
    ASSERT_TRUE(twinSampler.sample(draw));
    expectInputsAsTwin(mine, twinSampler.inputs());
  }
}

INSTANTIATE_TEST_SUITE_P(Meshes, RanksRun,
                         ::testing::Values(MeshAxes{{"tp", 2}},
                                           MeshAxes{{"dp", 2}, {"tp", 2}},
                                           MeshAxes{{"dp", 4}, {"tp", 1}}),
                         [](const ::testing::TestParamInfo<MeshAxes> &info) {
                           std::string name;
                           for (const auto &[axis, size] : info.param)
                             name += axis + std::to_string(size);
                           return name;
                         });

} // namespace
