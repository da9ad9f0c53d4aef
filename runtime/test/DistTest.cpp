//===- DistTest.cpp - distributed executables without MPI -----------------===//
//
// The loader's checks of meshes, splits and collective kernels; the
// interpreter's check of the world against the mesh, collectives on a mesh
// of one rank and a communicator's error; the dropout kernels drawing at
// global indices, block by block, against the whole tensor. The collectives
// across ranks are checked under MPI by DistCheck.cpp.
//
//===----------------------------------------------------------------------===//

#include "DistExecutables.h"
#include "tpcrt/Comm.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include "gtest/gtest.h"

#include <functional>
#include <random>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

using Op = fb::OpCode;
constexpr fb::DType F32 = fb::DType::F32;
constexpr fb::DType BF16 = fb::DType::BF16;
constexpr fb::DType I64 = fb::DType::I64;

/// Buffers of distExecutable().
enum : uint32_t { W, STATE, X, H, HG, D, Y, G };

/// A valid executable on mesh dp=2, tp=2: a param w (view [8, 6] padded to
/// [8, 8], columns split over tp: buffer [8, 4]) with its state; an input x
/// split on the batch over dp; linear, all_gather of the columns over tp,
/// dropout split like x, all_gather over dp into the output y; the weight
/// gradient all-reduced in place over dp.
fb::ExecutableT distExecutable() {
  ExecutableBuilder b;
  setMesh(b.exe, {{"dp", 2}, {"tp", 2}});
  b.param("w", F32, {8, 4});
  fb::ParamT &w = *b.exe.params[0];
  w.view_shape = w.hf_shape = {8, 6};
  w.padded_shape = {8, 8};
  w.splits = makeSplits({{}, {1}});
  uint32_t state = b.buffer(F32, {8, 4});
  b.exe.state.push_back(std::make_unique<fb::StateT>());
  b.exe.state.back()->name = "exp_avg";
  b.exe.state.back()->param = 0;
  b.exe.state.back()->buffer = state;
  uint32_t x = b.buffer(F32, {2, 3, 8});
  b.exe.inputs.push_back(makeBinding("x", x));
  b.exe.inputs.back()->splits = makeSplits({{0}, {}, {}});
  uint32_t h = b.buffer(F32, {2, 3, 4});
  b.kernel(Op::Linear, {x, W}, {h});
  uint32_t hg = b.buffer(F32, {2, 3, 8});
  b.kernel(Op::AllGather, {h}, {hg}, {2, 1});
  uint32_t d = b.buffer(F32, {2, 3, 8});
  b.kernel(Op::Dropout, {hg}, {d}, {1}, {0.1});
  b.exe.kernels.back()->splits = makeSplits({{0}, {}, {}});
  uint32_t y = b.buffer(F32, {4, 3, 8});
  b.kernel(Op::AllGather, {d}, {y}, {0, 0});
  b.output("y", y);
  uint32_t g = b.buffer(F32, {8, 4});
  b.kernel(Op::LinearWeightGrad, {x, h}, {g});
  b.kernel(Op::AllReduce, {g}, {g}, {0});
  b.grad("w", g);
  EXPECT_EQ(std::vector<uint32_t>({W, STATE, X, H, HG, D, Y, G}),
            std::vector<uint32_t>({0, state, x, h, hg, d, y, g}));
  return b.finish();
}

/// Gives buffer `id` a new shape (and size), moved to the end of the arena
/// so that it overlaps nothing.
void reshape(fb::ExecutableT &e, uint32_t id, std::vector<int64_t> shape,
             fb::DType dtype = F32) {
  uint64_t offset = (e.arena_bytes + 63) / 64 * 64;
  e.buffers[id] = makeBuffer(offset, dtype, std::move(shape));
  e.arena_bytes = offset + e.buffers[id]->size;
}

Status check(const fb::ExecutableT &exe) {
  std::vector<uint8_t> payload = pack(exe);
  return checkExecutable(*fb::GetExecutable(payload.data()));
}

void expectRefused(const std::function<void(fb::ExecutableT &)> &mutate,
                   const std::string &expected) {
  fb::ExecutableT exe = distExecutable();
  mutate(exe);
  Status s = check(exe);
  ASSERT_FALSE(s) << "accepted; expected: " << expected;
  EXPECT_NE(s.message().find(expected), std::string::npos)
      << "message: " << s.message() << "\nexpected: " << expected;
}

void expectAccepted(const std::function<void(fb::ExecutableT &)> &mutate) {
  fb::ExecutableT exe = distExecutable();
  mutate(exe);
  Status s = check(exe);
  EXPECT_TRUE(s) << s.message();
}

TEST(DistLoaderTest, TheValidExecutableDecodes) {
  fb::ExecutableT exe = distExecutable();
  std::vector<uint8_t> payload = pack(exe);
  const fb::Executable &root = *fb::GetExecutable(payload.data());
  ASSERT_TRUE(checkExecutable(root));
  Program program;
  ASSERT_TRUE(decodeProgram(root, program));
  EXPECT_EQ(program.mesh.names, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(program.params[0].paddedShape, (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(program.params[0].splits, (Splits{{}, {1}}));
  EXPECT_EQ(program.inputs[0].splits, (Splits{{0}, {}, {}}));
  EXPECT_EQ(program.globalShapeOf(program.inputs[0]),
            (std::vector<int64_t>{4, 3, 8}));
  // Groups in first-use order: [tp], [dp] (the all_reduce reuses [dp]).
  EXPECT_EQ(program.groups, (std::vector<std::vector<uint32_t>>{{1}, {0}}));
  EXPECT_EQ(program.calls[1].group, 0);
  EXPECT_EQ(program.calls[3].group, 1);
  EXPECT_EQ(program.calls[5].group, 1);
  EXPECT_EQ(program.calls[2].globalShape, (std::vector<int64_t>{4, 3, 8}));

  // Rank 3 is (dp 1, tp 1): the second batch block, position 1 in both.
  ASSERT_TRUE(placeProgram(program, 3));
  EXPECT_EQ(program.coordinates, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(program.calls[2].globalOffset, (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(program.calls[1].groupPosition, 1);
  ASSERT_TRUE(placeProgram(program, 1));
  EXPECT_EQ(program.calls[2].globalOffset, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(program.calls[1].groupPosition, 1);
  EXPECT_EQ(program.calls[3].groupPosition, 0);
  EXPECT_FALSE(placeProgram(program, 4));
}

TEST(DistLoaderTest, ParamLayouts) {
  expectRefused(
      [](fb::ExecutableT &e) {
        e.params[0]->splits = makeSplits({{}, {5}});
      },
      "param 0 ('w'): splits of dimension 1: mesh axis 5 out of range (the "
      "mesh has 2 axes)");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.params[0]->splits = makeSplits({{1}, {1}});
      },
      "param 0 ('w'): splits: mesh axis 'tp' named twice");
  expectRefused(
      [](fb::ExecutableT &e) { e.params[0]->splits = makeSplits({{1}}); },
      "param 0 ('w'): splits name 1 dimensions, the tensor has 2");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.params[0]->padded_shape = {8, 4};
      },
      "param 0 ('w'): padded_shape [8, 4] is smaller than "
      "view_shape [8, 6] in dimension 1");
  expectRefused([](fb::ExecutableT &e) { e.params[0]->padded_shape = {64}; },
                "param 0 ('w'): padded_shape [64] and view_shape [8, 6] have "
                "different ranks");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.params[0]->padded_shape = {8, 7};
      },
      "param 0 ('w'): padded_shape [8, 7]: dimension 1 of size 7 is "
      "not divisible into 2 pieces");
  expectRefused(
      [](fb::ExecutableT &e) {
        reshape(e, W, {8, 8});
      },
      "param 0 ('w'): buffer 0 is [8, 8], expected [8, 4] (the "
      "block of padded_shape [8, 8] a rank holds)");
  // Split over both axes: a quarter of the columns.
  expectRefused(
      [](fb::ExecutableT &e) {
        e.params[0]->splits = makeSplits({{}, {0, 1}});
      },
      "param 0 ('w'): buffer 0 is [8, 4], expected [8, 2] (the block of "
      "padded_shape [8, 8] a rank holds)");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.params[0]->splits.clear();
        e.params[0]->padded_shape.clear();
      },
      "param 0 ('w'): buffer 0 is [8, 4], expected [8, 6] (its view_shape)");
  expectRefused([](fb::ExecutableT &e) { e.params[0]->splits.clear(); },
                "param 0 ('w'): buffer 0 is [8, 4], expected [8, 8] (its "
                "padded_shape)");
  // Rows split over dp too: the buffer is [4, 4].
  expectAccepted([](fb::ExecutableT &e) {
    e.params[0]->splits = makeSplits({{0}, {1}});
    reshape(e, W, {4, 4});
    reshape(e, STATE, {4, 4});
    reshape(e, X, {2, 3, 4});
    reshape(e, G, {4, 4});
  });
}

TEST(DistLoaderTest, StateGradsAndBindings) {
  expectRefused(
      [](fb::ExecutableT &e) {
        reshape(e, STATE, {8, 6});
      },
      "state 0 ('exp_avg') of param 'w': buffer 1 is f32 [8, 6], "
      "expected f32 [8, 4] (the param's layout)");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.inputs[0]->splits = makeSplits({{7}, {}, {}});
      },
      "input 0 ('x'): splits of dimension 0: mesh axis 7 out of range");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.inputs[0]->splits = makeSplits({{0}, {0}, {}});
      },
      "input 0 ('x'): splits: mesh axis 'dp' named twice");
  expectRefused(
      [](fb::ExecutableT &e) { e.inputs[0]->splits = makeSplits({{0}}); },
      "input 0 ('x'): splits name 1 dimensions, the tensor has 3");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.outputs[0]->splits = makeSplits({{0}, {}, {}});
      },
      "output 0 ('y'): has splits, but outputs are whole on every rank");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.grads[0]->splits = makeSplits({{}, {1}});
      },
      "grad 0 ('w'): has splits, but grads are whole on every rank");
}

TEST(DistLoaderTest, MeshSizes) {
  expectRefused([](fb::ExecutableT &e) { e.mesh[1]->size = 0; },
                "mesh axis 1 ('tp'): size 0 is not positive");
  expectRefused([](fb::ExecutableT &e) { e.mesh[1]->name = "dp"; },
                "mesh axis 1 ('dp'): duplicate axis name");
  expectRefused([](fb::ExecutableT &e) { e.mesh[1]->name.clear(); },
                "mesh axis 1 has no name");
  expectRefused([](fb::ExecutableT &e) { e.mesh[1]->size = int64_t(1) << 40; },
                "mesh axis 1 ('tp'): size 1099511627776 makes the world "
                "larger than 2147483647 ranks");
}

TEST(DistLoaderTest, KernelSplits) {
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[0]->splits = makeSplits({{0}, {}, {}});
      },
      "kernel 0 (linear): has splits, which only dropout, dropout_mask and "
      "the attention kernels take");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[2]->splits = makeSplits({{0}, {}});
      },
      "kernel 2 (dropout): splits of result [2, 3, 8]: splits name 2 "
      "dimensions, the tensor has 3");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[2]->splits = makeSplits({{0}, {}, {2}});
      },
      "kernel 2 (dropout): splits of result [2, 3, 8]: splits of dimension "
      "2: mesh axis 2 out of range");
  expectAccepted([](fb::ExecutableT &e) {
    e.kernels[2]->splits = makeSplits({{}, {}, {1, 0}});
  });

  // Causal attention may not split its queries (the mask is local).
  for (uint32_t flags : {0u, 1u}) {
    ExecutableBuilder b;
    setMesh(b.exe, {{"tp", 2}});
    uint32_t q = b.buffer(F32, {1, 2, 4, 8});
    b.exe.inputs.push_back(makeBinding("q", q));
    uint32_t o = b.buffer(F32, {1, 2, 4, 8});
    b.kernel(Op::Attention, {q, q, q}, {o}, {3}, {0.5, 0.1}, flags);
    b.exe.kernels.back()->splits = makeSplits({{}, {}, {0}, {}});
    b.output("o", o);
    Status s = check(b.finish());
    if (flags == 0) {
      EXPECT_TRUE(s) << s.message();
    } else {
      ASSERT_FALSE(s);
      EXPECT_EQ(s.message(),
                "kernel 0 (attention): causal attention with its query "
                "dimension split is not supported (splits of result [1, 2, "
                "4, 8])");
    }
  }
}

// A global shape (a rank's block times the ranks splitting it) must fit
// int64 in every dimension and in elements: the host fills inputs and the
// dropout kernels draw at global indices (found by test/fuzz).
TEST(DistLoaderTest, GlobalShapesFitInt64) {
  const int64_t ranks = int64_t(1) << 30;
  auto inputOn = [&](std::vector<int64_t> shape) {
    ExecutableBuilder b;
    setMesh(b.exe, {{"dp", ranks}});
    uint32_t x = b.buffer(I64, shape);
    b.exe.inputs.push_back(makeBinding("x", x));
    b.exe.inputs.back()->splits =
        makeSplits(TestSplits(shape.size(), std::vector<uint32_t>()));
    b.exe.inputs.back()->splits[0]->axes = {0};
    uint32_t y = b.buffer(I64, shape);
    b.kernel(Op::Copy, {x}, {y});
    b.output("y", y);
    return b.finish();
  };
  // 2^32 rows a rank, 2^62 in all: fits.
  Status s = check(inputOn({int64_t(1) << 32, 1}));
  EXPECT_TRUE(s) << s.message();
  s = check(inputOn({int64_t(1) << 40, 1}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "input 0 ('x'): the global shape of [1099511627776, 1] "
            "overflows: dimension 0 (1099511627776) times the 1073741824 "
            "ranks splitting it exceeds 2^63 - 1");
  s = check(inputOn({int64_t(1) << 32, 2}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "input 0 ('x'): the global shape [4611686018427387904, 2] of "
            "[4294967296, 2] has more than 2^63 - 1 elements");

  ExecutableBuilder b;
  setMesh(b.exe, {{"dp", ranks}});
  uint32_t mask = b.buffer(fb::DType::U8, {int64_t(1) << 40});
  b.kernel(Op::DropoutMask, {}, {mask}, {0}, {0.1});
  b.exe.kernels.back()->splits = makeSplits({{0}});
  b.output("mask", mask);
  s = check(b.finish());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "kernel 0 (dropout_mask): splits of mask [1099511627776]: the "
            "global shape of [1099511627776] overflows: dimension 0 "
            "(1099511627776) times the 1073741824 ranks splitting it exceeds "
            "2^63 - 1");
}

TEST(DistLoaderTest, CollectiveAttributes) {
  expectRefused([](fb::ExecutableT &e) { e.kernels[1]->int_attrs = {2}; },
                "kernel 1 (all_gather): has 1 int_attrs, expected 1 and at "
                "least one mesh axis");
  expectRefused([](fb::ExecutableT &e) { e.kernels[5]->int_attrs = {}; },
                "kernel 5 (all_reduce): has 0 int_attrs, expected 0 and at "
                "least one mesh axis");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->int_attrs = {2, 5};
      },
      "kernel 1 (all_gather): int_attrs[1] is 5, not a mesh axis "
      "(the mesh has 2 axes)");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->int_attrs = {2, -1};
      },
      "kernel 1 (all_gather): int_attrs[1] is -1, not a mesh axis");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->int_attrs = {2, 1, 1};
      },
      "kernel 1 (all_gather): group axes: mesh axis 'tp' named twice");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->int_attrs = {3, 1};
      },
      "kernel 1 (all_gather): dimension 3 (int_attrs[0]) is outside "
      "input [2, 3, 4]");
  expectRefused([](fb::ExecutableT &e) { e.kernels[1]->flags = 1; },
                "kernel 1 (all_gather): flags 1 set bits this opcode does not "
                "define (allowed 0)");
  expectRefused([](fb::ExecutableT &e) { e.kernels[1]->float_attrs = {1.0}; },
                "kernel 1 (all_gather): has 1 float_attrs, expected 0");
}

TEST(DistLoaderTest, CollectiveShapesAndDTypes) {
  expectRefused(
      [](fb::ExecutableT &e) {
        reshape(e, HG, {2, 3, 6});
      },
      "kernel 1 (all_gather): result dim 2 is 6, expected 4 x 2 = 8 "
      "(input [2, 3, 4], group size 2)");
  expectRefused(
      [](fb::ExecutableT &e) {
        reshape(e, HG, {2, 4, 8});
      },
      "kernel 1 (all_gather): result dim 1 is 4, expected 3 (the "
      "input's) (input [2, 3, 4], group size 2)");
  expectRefused(
      [](fb::ExecutableT &e) {
        reshape(e, HG, {2, 24});
      },
      "kernel 1 (all_gather): result [2, 24] should be [2, 3, 8]");
  // Over both axes the group has 4 ranks.
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->int_attrs = {2, 0, 1};
      },
      "kernel 1 (all_gather): result dim 2 is 8, expected 4 x 4 = "
      "16");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->op = Op::ReduceScatter;
        e.kernels[1]->int_attrs = {1, 1};
      },
      "kernel 1 (reduce_scatter): input dim 1 is 3, not divisible by the "
      "group size 2");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->op = Op::ReduceScatter;
        e.kernels[1]->int_attrs = {2, 1};
        reshape(e, HG, {2, 3, 4});
      },
      "kernel 1 (reduce_scatter): result dim 2 is 4, expected 4 / 2 = 2");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->op = Op::ShardSlice;
        e.kernels[1]->int_attrs = {0, 0};
        reshape(e, HG, {2, 3, 4});
      },
      "kernel 1 (shard_slice): result dim 0 is 2, expected 2 / 2 = 1");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->op = Op::AllToAll;
        e.kernels[1]->int_attrs = {2, 1, 1};
        reshape(e, HG, {2, 3, 4});
      },
      "kernel 1 (all_to_all): result [2, 3, 4] should be [2, 6, 2] (input "
      "[2, 3, 4] split along dim 2, concatenated along 1, group size 2)");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->op = Op::AllToAll;
        e.kernels[1]->int_attrs = {1, 2, 1};
      },
      "kernel 1 (all_to_all): input dim 1 is 3, not divisible by the group "
      "size 2");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.kernels[1]->op = Op::AllToAll;
        e.kernels[1]->int_attrs = {2, 4, 1};
      },
      "kernel 1 (all_to_all): concat dimension 4 (int_attrs[1]) is outside "
      "input [2, 3, 4]");
  // The result's dtype is the input's.
  expectRefused(
      [](fb::ExecutableT &e) {
        reshape(e, HG, {2, 3, 8}, BF16);
      },
      "kernel 1 (all_gather): result is bf16, expected f32");
  // all_gather, all_to_all: valid cases of both kinds.
  expectAccepted([](fb::ExecutableT &e) {
    e.kernels[1]->op = Op::AllToAll;
    e.kernels[1]->int_attrs = {2, 1, 1};
    reshape(e, HG, {2, 6, 2});
    reshape(e, D, {2, 6, 2});
    e.kernels[2]->splits.clear();
    reshape(e, Y, {4, 6, 2});
  });
  expectAccepted([](fb::ExecutableT &e) {
    e.kernels[1]->op = Op::AllToAll;
    e.kernels[1]->int_attrs = {2, 2, 1};
    reshape(e, HG, {2, 3, 4});
    reshape(e, D, {2, 3, 4});
    e.kernels[2]->splits.clear();
    reshape(e, Y, {4, 3, 4});
  });
}

/// One collective on mesh tp=2 (or none) from an input of `dtype`.
Status collective(Op op, fb::DType dtype, std::vector<int64_t> ints,
                  uint32_t flags = 0, bool onMesh = true) {
  ExecutableBuilder b;
  if (onMesh)
    setMesh(b.exe, {{"tp", 2}});
  uint32_t x = b.buffer(dtype, {4, 2});
  b.exe.inputs.push_back(makeBinding("x", x));
  uint32_t y = b.buffer(dtype, {4, 2});
  b.kernel(op, {x}, {y}, std::move(ints), {}, flags);
  b.output("y", y);
  return check(b.finish());
}

TEST(DistLoaderTest, CollectiveDTypes) {
  EXPECT_TRUE(collective(Op::AllReduce, F32, {0}));
  EXPECT_TRUE(collective(Op::AllReduce, F32, {0}, 1));
  EXPECT_TRUE(collective(Op::AllReduce, BF16, {0}, 1));
  EXPECT_TRUE(collective(Op::AllReduce, fb::DType::F16, {0}));
  EXPECT_TRUE(collective(Op::AllReduce, I64, {0}));
  EXPECT_EQ(collective(Op::AllReduce, I64, {0}, 1).message(),
            "kernel 0 (all_reduce): input is i64, expected f32, bf16 or f16 "
            "(a max)");
  EXPECT_EQ(collective(Op::AllReduce, fb::DType::I32, {0}).message(),
            "kernel 0 (all_reduce): input is i32, expected f32, bf16, f16 or "
            "i64 (a sum)");
  EXPECT_EQ(collective(Op::AllReduce, F32, {0}, 2).message(),
            "kernel 0 (all_reduce): flags 2 set bits this opcode does not "
            "define (allowed 1)");
  EXPECT_TRUE(collective(Op::AllToAll, BF16, {0, 0, 0}));
  // Data movement takes any dtype (token ids and labels split over dp).
  for (fb::DType dtype : {I64, fb::DType::I32, fb::DType::U8}) {
    std::string name = executableDTypeName(dtype);
    EXPECT_TRUE(collective(Op::AllToAll, dtype, {0, 0, 0})) << name;
    ExecutableBuilder b;
    setMesh(b.exe, {{"tp", 2}});
    uint32_t x = b.buffer(dtype, {4, 2});
    b.exe.inputs.push_back(makeBinding("x", x));
    uint32_t part = b.buffer(dtype, {2, 2}), whole = b.buffer(dtype, {4, 2});
    b.kernel(Op::ShardSlice, {x}, {part}, {0, 0});
    b.kernel(Op::AllGather, {part}, {whole}, {0, 0});
    b.output("y", whole);
    Status s = check(b.finish());
    EXPECT_TRUE(s) << name << ": " << s.message();
  }
  EXPECT_EQ(collective(Op::ReduceScatter, I64, {0, 0}).message(),
            "kernel 0 (reduce_scatter): input is i64, expected f32, bf16 or "
            "f16");
  // Without a mesh there is no axis to name.
  EXPECT_EQ(collective(Op::AllReduce, F32, {0}, 0, false).message(),
            "kernel 0 (all_reduce): int_attrs[0] is 0, not a mesh axis (the "
            "mesh has 0 axes)");
}

/// Kernels of VocabCase::build: embedding, its all_reduce, embedding_grad,
/// its all_gather, cross_entropy, cross_entropy_grad.
enum : size_t { EMB = 0, EMB_GRAD = 2, CE = 4, CE_GRAD = 5 };

TEST(DistLoaderTest, VocabularyParallelAttributes) {
  VocabCase c;
  c.axes = {1};
  TestMesh mesh = {{"dp", 2}, {"tp", 2}};
  auto refused = [&](const std::function<void(fb::ExecutableT &)> &mutate,
                     const std::string &expected) {
    fb::ExecutableT exe = c.build(mesh);
    mutate(exe);
    Status s = check(exe);
    ASSERT_FALSE(s) << "accepted; expected: " << expected;
    EXPECT_EQ(s.message(), expected);
  };

  fb::ExecutableT exe = c.build(mesh);
  std::vector<uint8_t> payload = pack(exe);
  const fb::Executable &root = *fb::GetExecutable(payload.data());
  ASSERT_TRUE(checkExecutable(root));
  Program program;
  ASSERT_TRUE(decodeProgram(root, program));
  EXPECT_EQ(program.groups, (std::vector<std::vector<uint32_t>>{{1}}));
  for (size_t k : {EMB, EMB_GRAD, CE, CE_GRAD})
    EXPECT_EQ(program.calls[k].group, 0) << "kernel " << k;
  EXPECT_EQ(program.calls[EMB].k, 6);
  EXPECT_EQ(program.calls[CE].cols, 6);
  EXPECT_EQ(program.calls[CE].k, 12);
  ASSERT_TRUE(placeProgram(program, 3));
  EXPECT_EQ(program.calls[EMB].groupPosition, 1);
  EXPECT_EQ(program.calls[CE_GRAD].groupPosition, 1);

  refused([](fb::ExecutableT &e) { e.kernels[EMB]->int_attrs = {2}; },
          "kernel 0 (embedding): int_attrs[0] is 2, not a mesh axis (the "
          "mesh has 2 axes)");
  refused(
      [](fb::ExecutableT &e) {
        e.kernels[EMB]->int_attrs = {1, 1};
      },
      "kernel 0 (embedding): group axes: mesh axis 'tp' named twice");
  refused([](fb::ExecutableT &e) { e.kernels[EMB]->float_attrs = {1.0}; },
          "kernel 0 (embedding): has 1 float_attrs, expected 0");
  refused([](fb::ExecutableT &e) { e.kernels[EMB_GRAD]->int_attrs = {-1}; },
          "kernel 2 (embedding_grad): int_attrs[0] is -1, not a mesh axis "
          "(the mesh has 2 axes)");
  refused([](fb::ExecutableT &e) { e.kernels[CE]->int_attrs = {}; },
          "kernel 4 (cross_entropy): has 0 int_attrs, expected 1");
  refused(
      [](fb::ExecutableT &e) {
        e.kernels[CE]->int_attrs = {-100, 13, 1};
      },
      "kernel 4 (cross_entropy): vocab (int_attrs[1]) is 13, expected "
      "[1, 12] (logits [2, 3, 6], group size 2)");
  refused(
      [](fb::ExecutableT &e) {
        e.kernels[CE]->int_attrs = {-100, 0, 1};
      },
      "kernel 4 (cross_entropy): vocab (int_attrs[1]) is 0, expected "
      "[1, 12] (logits [2, 3, 6], group size 2)");
  // Without axes the logits are the whole (padded) vocabulary.
  refused(
      [](fb::ExecutableT &e) {
        e.kernels[CE]->int_attrs = {-100, 12};
      },
      "kernel 4 (cross_entropy): vocab (int_attrs[1]) is 12, expected "
      "[1, 6] (logits [2, 3, 6])");
  refused(
      [](fb::ExecutableT &e) {
        e.kernels[CE_GRAD]->int_attrs = {-100, 7, 3};
      },
      "kernel 5 (cross_entropy_grad): int_attrs[2] is 3, not a mesh axis "
      "(the mesh has 2 axes)");
  refused(
      [](fb::ExecutableT &e) {
        e.kernels[CE_GRAD]->int_attrs = {-100, 20, 1};
      },
      "kernel 5 (cross_entropy_grad): vocab (int_attrs[1]) is 20, expected "
      "[1, 12] (logits [2, 3, 6], group size 2)");
  refused([](fb::ExecutableT &e) { e.kernels[CE_GRAD]->flags = 1; },
          "kernel 5 (cross_entropy_grad): flags 1 set bits this opcode does "
          "not define (allowed 0)");
  // Over both axes the group has 4 ranks: up to 24 classes.
  fb::ExecutableT both = c.build(mesh);
  both.kernels[CE]->int_attrs = {-100, 24, 0, 1};
  Status s = check(both);
  EXPECT_TRUE(s) << s.message();
}

//===----------------------------------------------------------------------===//
// The interpreter on a world
//===----------------------------------------------------------------------===//

Status makeInterpreter(const fb::ExecutableT &exe,
                       std::vector<uint8_t> &payload, Interpreter &out,
                       Communicator *world) {
  payload = pack(exe);
  const fb::Executable *root = fb::GetExecutable(payload.data());
  if (Status s = checkExecutable(*root); !s)
    return s;
  return Interpreter::create(*root, createCpuDevice(), out, world);
}

TEST(DistInterpreterTest, TheWorldMustMatchTheMesh) {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  std::unique_ptr<Communicator> local = createLocalCommunicator();
  Status s =
      makeInterpreter(distExecutable(), payload, interpreter, local.get());
  EXPECT_EQ(s.message(),
            "the executable's mesh dp=2,tp=2 needs 4 ranks, the run has 1");
  s = makeInterpreter(distExecutable(), payload, interpreter, nullptr);
  EXPECT_EQ(s.message(), "the executable's mesh dp=2,tp=2 needs 4 ranks, the "
                         "run has no communicator");
}

/// Rank 0 of a world of `size` ranks whose every call fails, except
/// split(), which makes another such world (the tests' groups are the whole
/// world).
class FailingCommunicator final : public Communicator {
public:
  explicit FailingCommunicator(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::string backendName() const override { return "failing"; }
  Status allReduceSum(float *, std::size_t) override { return fail("sum"); }
  Status allReduceSum(int64_t *, std::size_t) override { return fail("sum"); }
  Status allReduceMax(float *, std::size_t) override { return fail("max"); }
  Status allGather(const void *, void *, std::size_t) override {
    return fail("gather");
  }
  Status reduceScatterSum(const float *, float *, std::size_t) override {
    return fail("reduce-scatter");
  }
  Status allToAll(const void *, void *, std::size_t) override {
    return fail("all-to-all");
  }
  Status broadcast(void *, std::size_t, int) override { return fail("bcast"); }
  Status send(const void *, std::size_t, int, int) override {
    return fail("send");
  }
  Status recv(void *, std::size_t, int, int) override { return fail("recv"); }
  Status barrier() override { return fail("barrier"); }
  Status split(int, int key, std::unique_ptr<Communicator> &result) override {
    if (key != 0)
      return fail("split");
    result = std::make_unique<FailingCommunicator>(size_);
    return Status::ok();
  }

private:
  static Status fail(const char *what) {
    return Status::error(std::string(what) + ": the peer went away");
  }
  int size_;
};

TEST(DistInterpreterTest, AnExecutableWithoutMeshRunsOnOneRank) {
  ExecutableBuilder b;
  uint32_t x = b.buffer(F32, {4});
  b.exe.inputs.push_back(makeBinding("x", x));
  uint32_t y = b.buffer(F32, {4});
  b.kernel(Op::Copy, {x}, {y});
  b.output("y", y);
  fb::ExecutableT exe = b.finish();
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  FailingCommunicator two(2);
  EXPECT_EQ(makeInterpreter(exe, payload, interpreter, &two).message(),
            "the executable has no mesh (1 rank), the run has 2");
  FailingCommunicator one(1);
  ASSERT_TRUE(makeInterpreter(exe, payload, interpreter, &one));
  EXPECT_TRUE(interpreter.runStep());
  ASSERT_TRUE(makeInterpreter(exe, payload, interpreter, nullptr));
  EXPECT_EQ(interpreter.world(), nullptr);
  EXPECT_EQ(interpreter.rank(), 0);
  EXPECT_TRUE(interpreter.coordinates().empty());
}

TEST(DistInterpreterTest, ACommunicatorErrorNamesTheKernel) {
  ExecutableBuilder b;
  setMesh(b.exe, {{"tp", 2}});
  uint32_t x = b.buffer(F32, {4});
  b.exe.inputs.push_back(makeBinding("x", x));
  uint32_t y = b.buffer(F32, {4});
  b.kernel(Op::Copy, {x}, {y});
  uint32_t z = b.buffer(F32, {4});
  b.kernel(Op::AllReduce, {y}, {z}, {0}, {}, 1);
  b.output("z", z);
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  FailingCommunicator world(2);
  ASSERT_TRUE(makeInterpreter(b.finish(), payload, interpreter, &world));
  EXPECT_EQ(interpreter.world(), &world);
  EXPECT_EQ(interpreter.mesh().names, (std::vector<std::string>{"tp"}));
  Status s = interpreter.runStep();
  EXPECT_EQ(s.message(), "kernel 1 (all_reduce): max: the peer went away");
}

/// Collectives over axes of size 1 are copies: on a mesh dp=1, tp=1 every
/// opcode runs on the local communicator (with the staging of non-leading
/// dimensions), and a step allocates nothing.
TEST(DistInterpreterTest, OneRankMeshRunsEveryCollective) {
  ExecutableBuilder b;
  setMesh(b.exe, {{"dp", 1}, {"tp", 1}});
  uint32_t x = b.buffer(F32, {2, 3, 4});
  b.exe.inputs.push_back(makeBinding("x", x));
  b.exe.inputs.back()->splits = makeSplits({{0}, {1}, {}});
  std::vector<uint32_t> outs;
  auto add = [&](Op op, std::vector<int64_t> ints, fb::DType dtype = F32,
                 uint32_t from = UINT32_MAX) {
    uint32_t y = b.buffer(dtype, {2, 3, 4});
    b.kernel(op, {from == UINT32_MAX ? x : from}, {y}, std::move(ints));
    outs.push_back(y);
    b.output("y" + std::to_string(outs.size()), y);
    return y;
  };
  add(Op::AllReduce, {0, 1});
  add(Op::AllGather, {1, 1});
  add(Op::ReduceScatter, {2, 1, 0});
  add(Op::ShardSlice, {2, 0});
  add(Op::AllToAll, {2, 1, 0, 1});
  uint32_t half = b.buffer(BF16, {2, 3, 4});
  b.kernel(Op::Cast, {x}, {half});
  add(Op::AllGather, {1, 0}, BF16, half);
  add(Op::ReduceScatter, {1, 0}, BF16, half);
  uint32_t drop = b.buffer(F32, {2, 3, 4});
  b.kernel(Op::Dropout, {x}, {drop}, {1}, {0.5});
  b.exe.kernels.back()->splits = makeSplits({{1}, {}, {0}});
  b.output("dropped", drop);

  std::vector<uint8_t> payload;
  Interpreter interpreter;
  std::unique_ptr<Communicator> local = createLocalCommunicator();
  ASSERT_TRUE(makeInterpreter(b.finish(), payload, interpreter, local.get()));
  EXPECT_EQ(interpreter.rank(), 0);
  EXPECT_EQ(interpreter.coordinates(), (std::vector<int64_t>{0, 0}));
  std::vector<float> input(24);
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<float>(i) - 7.0f;
  ASSERT_TRUE(interpreter.writeBuffer(x, input.data(), 96));
  for (int step = 0; step < 2; ++step) {
    long before = allocationCount();
    Status s = interpreter.runStep();
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(allocationCount() - before, 0) << "step " << step;
  }
  for (uint32_t y : outs) {
    std::vector<float> got(24);
    if (interpreter.program().buffers[y].dtype == BF16) {
      std::vector<uint16_t> half(24);
      ASSERT_TRUE(interpreter.readBuffer(y, half.data(), 48));
      for (size_t i = 0; i < 24; ++i)
        got[i] = bfloat16ToFloat(half[i]);
    } else {
      ASSERT_TRUE(interpreter.readBuffer(y, got.data(), 96));
    }
    EXPECT_EQ(got, input) << "buffer " << y;
  }
  // The split dropout of one rank is the unsplit one.
  std::vector<float> dropped(24), expected(24);
  ASSERT_TRUE(interpreter.readBuffer(drop, dropped.data(), 96));
  uint64_t key = dropoutKey(interpreter.program().seed, 1, 1);
  ASSERT_TRUE(cpu::dropout(input.data(), 24, key, 0.5, 0, expected.data()));
  EXPECT_EQ(dropped, expected);
}

/// Cross-entropy over the first `vocab` of `columns` logits per position,
/// in double, written from the definition: the loss sum over positions not
/// ignored of log(sum_j e^x_j) - x_label, their count, and the gradient
/// scale * (softmax - onehot) (zero in the padding columns and on ignored
/// positions).
struct ReferenceCrossEntropy {
  double loss = 0.0;
  int64_t count = 0;
  std::vector<double> grad;

  ReferenceCrossEntropy(const std::vector<float> &logits, int64_t columns,
                        int64_t vocab, const std::vector<int64_t> &labels,
                        int64_t ignore, double scale)
      : grad(logits.size(), 0.0) {
    for (size_t p = 0; p < labels.size(); ++p) {
      if (labels[p] == ignore)
        continue;
      const float *row = logits.data() + p * columns;
      double sum = 0.0;
      for (int64_t j = 0; j < vocab; ++j)
        sum += std::exp(double(row[j]));
      loss += std::log(sum) - row[labels[p]];
      ++count;
      for (int64_t j = 0; j < vocab; ++j)
        grad[p * columns + j] =
            scale * (std::exp(double(row[j])) / sum - (j == labels[p]));
    }
  }
};

/// The vocabulary kernels with a padded vocabulary on one rank: without a
/// mesh ([ignore, vocab]), and on meshes of size-1 axes ([ignore, vocab,
/// axes...]: a group of one, position 0, the whole table and vocabulary),
/// against the reference; two steps allocate nothing.
TEST(DistInterpreterTest, PaddedVocabularyOnOneRank) {
  struct Setup {
    TestMesh mesh;
    std::vector<uint32_t> axes;
    int64_t vocab;
    fb::DType logitsType = F32;
  };
  for (const Setup &setup :
       {Setup{{}, {}, 9}, Setup{{{"tp", 1}}, {0}, 9},
        Setup{{{"dp", 1}, {"tp", 1}}, {1, 0}, 12}, Setup{{{"tp", 1}}, {0}, 1},
        Setup{{{"tp", 1}}, {0}, 9, BF16}, Setup{{}, {}, 9, BF16}}) {
    VocabCase c;
    c.vocab = setup.vocab;
    c.axes = setup.axes;
    c.logitsType = setup.logitsType;
    bool bf16 = setup.logitsType == BF16;
    std::string where = "vocab " + std::to_string(c.vocab) + " of " +
                        std::to_string(c.columns) + ", " +
                        std::to_string(c.axes.size()) + " axes" +
                        (bf16 ? ", bf16 logits" : "");
    VocabInputs in(c, 17);
    std::vector<uint8_t> payload;
    Interpreter interpreter;
    std::unique_ptr<Communicator> local = createLocalCommunicator();
    ASSERT_TRUE(makeInterpreter(c.build(setup.mesh), payload, interpreter,
                                setup.mesh.empty() ? nullptr : local.get()))
        << where;
    ASSERT_TRUE(writeVocabInputs(interpreter, c, in, setup.mesh, 0)) << where;
    for (int step = 0; step < 2; ++step) {
      long before = allocationCount();
      Status s = interpreter.runStep();
      ASSERT_TRUE(s) << where << ": " << s.message();
      EXPECT_EQ(allocationCount() - before, 0) << where << " step " << step;
    }
    auto read = [&](const std::string &name, auto element) {
      const TensorRef &t =
          interpreter.program()
              .buffers[interpreter.program().findOutput(name)->buffer];
      std::vector<decltype(element)> v(t.elements);
      EXPECT_TRUE(interpreter.readBuffer(t.buffer, v.data(), t.bytes));
      return v;
    };
    // bf16 logits: the reference sees the stored values; the gradient is
    // rounded to bf16 (8 bits of mantissa).
    std::vector<float> logits = in.logits;
    if (bf16)
      for (float &x : logits)
        x = bfloat16ToFloat(floatToBFloat16(x));
    // Softmax minus the one-hot, element by element: a few roundings and the
    // fast exp (3.4 u) against double, 1e-6 = 17 u; bf16 output: its half
    // ulp, 2^-9 relative, with room for the float32 part (1/256).
    double gradTolerance = bf16 ? 1.0 / 256 : 1e-6;
    ReferenceCrossEntropy want(logits, c.columns, c.vocab, in.labels, c.ignore,
                               in.scale);
    EXPECT_EQ(read("count", int64_t()), std::vector<int64_t>{want.count})
        << where;
    float loss = read("loss_sum", float())[0];
    EXPECT_NEAR(loss, want.loss, 1e-6 * std::abs(want.loss)) << where;
    std::vector<float> grad;
    if (bf16)
      for (uint16_t h : read("logits_grad", uint16_t()))
        grad.push_back(bfloat16ToFloat(h));
    else
      grad = read("logits_grad", float());
    ASSERT_EQ(grad.size(), want.grad.size()) << where;
    for (size_t i = 0; i < grad.size(); ++i)
      ASSERT_NEAR(grad[i], want.grad[i],
                  gradTolerance * std::abs(want.grad[i]) + 1e-7)
          << where << ": logits_grad element " << i;
    // The embedding of a table block that is the whole table.
    std::vector<float> rows, tableGrad(in.table.size(), 0.0f);
    for (size_t p = 0; p < in.ids.size(); ++p) {
      auto row = in.table.begin() + in.ids[p] * c.hidden;
      rows.insert(rows.end(), row, row + c.hidden);
      for (int64_t j = 0; j < c.hidden; ++j)
        tableGrad[in.ids[p] * c.hidden + j] += in.dY[p * c.hidden + j];
    }
    EXPECT_EQ(read("embedding", float()), rows) << where;
    EXPECT_EQ(read("table_grad", float()), tableGrad) << where;
  }
}

//===----------------------------------------------------------------------===//
// Dropout at global indices
//===----------------------------------------------------------------------===//

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Every split of a [4, 6, 8] tensor on mesh a=2, b=2, c=2 as the
/// contract's examples use them.
const std::vector<TestSplits> kSplits = {
    {{}, {}, {}},      {{0}, {}, {}},       {{}, {1}, {}},
    {{}, {}, {2}},     {{0}, {1}, {2}},     {{}, {0, 1}, {}},
    {{2}, {}, {1, 0}}, {{}, {}, {0, 1, 2}}, {{1, 2}, {0}, {}},
};

TEST(DistKernelTest, DropoutDrawsTheWholeTensorsMask) {
  TestMesh mesh = {{"a", 2}, {"b", 2}, {"c", 2}};
  std::vector<int64_t> shape = {4, 6, 8};
  std::vector<float> x = randomFloats(192, 1);
  uint64_t key = dropoutKey(42, 3, 5);
  for (int64_t first : {int64_t(0), int64_t(1000)}) {
    std::vector<float> whole(192);
    std::vector<uint8_t> wholeMask(192);
    ASSERT_TRUE(cpu::dropout(x.data(), 192, key, 0.3, first, whole.data()));
    ASSERT_TRUE(cpu::dropoutMask(192, key, 0.3, first, wholeMask.data()));
    for (const TestSplits &splits : kSplits)
      for (int64_t rank = 0; rank < 8; ++rank) {
        Place place(mesh, rank);
        std::vector<int64_t> local = shape, offset(3);
        for (size_t d = 0; d < 3; ++d)
          std::tie(offset[d], local[d]) = place.block(shape[d], splits[d]);
        cpu::GlobalBlock block{3, local.data(), shape.data(), offset.data()};
        std::vector<float> mine = blockOfWhole(x, shape, splits, place);
        std::vector<float> got(mine.size());
        std::vector<uint8_t> mask(mine.size());
        auto n = static_cast<int64_t>(mine.size());
        ASSERT_TRUE(
            cpu::dropout(mine.data(), n, key, 0.3, first, got.data(), &block));
        ASSERT_TRUE(cpu::dropoutMask(n, key, 0.3, first, mask.data(), &block));
        EXPECT_EQ(got, blockOfWhole(whole, shape, splits, place))
            << "rank " << rank << ", first " << first;
        EXPECT_EQ(mask, blockOfWhole(wholeMask, shape, splits, place))
            << "rank " << rank << ", first " << first;
      }
  }
  // A block that does not fit its tensor is refused, not read past.
  int64_t local[] = {4, 6, 8}, global[] = {4, 6, 8}, offset[] = {0, 1, 0};
  cpu::GlobalBlock bad{3, local, global, offset};
  std::vector<float> out(192);
  EXPECT_EQ(
      cpu::dropout(x.data(), 192, key, 0.3, 0, out.data(), &bad).message(),
      "dropout: block dimension 1 [1, +6) is outside the whole "
      "tensor's 6");
  EXPECT_EQ(cpu::dropout(x.data(), 100, key, 0.3, 0, out.data(), &bad)
                .message()
                .substr(0, 8),
            "dropout:");
}

/// Attention and its gradient on a block of batches, heads and queries
/// (keys whole) draw the whole tensor's probability mask: the block's
/// results equal the whole results' block, bit for bit where the block
/// keeps whole heads (the GEMMs per head are the same).
TEST(DistKernelTest, AttentionDropsTheWholeTensorsProbabilities) {
  const int64_t B = 2, H = 4, KV = 2, S = 8, D = 4;
  std::vector<float> q = randomFloats(B * H * S * D, 2);
  std::vector<float> k = randomFloats(B * KV * S * D, 3);
  std::vector<float> v = randomFloats(B * KV * S * D, 4);
  std::vector<float> dO = randomFloats(B * H * S * D, 5);
  cpu::AttentionDropout dropout{dropoutKey(7, 11, 2), 0.4, 64};
  for (bool causal : {false, true}) {
    std::vector<float> out(q.size()), dq(q.size()), dk(k.size()), dv(v.size());
    std::vector<float> scratch(cpu::attentionGradScratchSize(S, S));
    ASSERT_TRUE(cpu::attention(q.data(), k.data(), v.data(), B, H, KV, S, S, D,
                               D, causal, 0.5f, scratch.data(), out.data(),
                               &dropout));
    ASSERT_TRUE(cpu::attentionGrad(
        dO.data(), q.data(), k.data(), v.data(), B, H, KV, S, S, D, D, causal,
        0.5f, scratch.data(), dq.data(), dk.data(), dv.data(), &dropout));
    // Blocks: batch b0 of 1, query heads [h0, h0 + 2) with their kv head.
    for (int64_t b0 = 0; b0 < B; ++b0)
      for (int64_t h0 = 0; h0 < H; h0 += 2) {
        auto slice = [&](const std::vector<float> &t, int64_t heads,
                         int64_t first, int64_t count) {
          std::vector<float> part;
          for (int64_t h = first; h < first + count; ++h) {
            auto at = t.begin() + ((b0 * heads + h) * S * D);
            part.insert(part.end(), at, at + S * D);
          }
          return part;
        };
        std::vector<float> qs = slice(q, H, h0, 2),
                           ks = slice(k, KV, h0 / 2, 1),
                           vs = slice(v, KV, h0 / 2, 1),
                           dOs = slice(dO, H, h0, 2);
        cpu::AttentionDropout local = dropout;
        local.batchOffset = b0;
        local.headOffset = h0;
        local.globalHeads = H;
        local.globalSeqQ = S;
        std::vector<float> o(qs.size()), g(qs.size()), gk(ks.size()),
            gv(vs.size());
        ASSERT_TRUE(cpu::attention(qs.data(), ks.data(), vs.data(), 1, 2, 1, S,
                                   S, D, D, causal, 0.5f, scratch.data(),
                                   o.data(), &local));
        ASSERT_TRUE(cpu::attentionGrad(dOs.data(), qs.data(), ks.data(),
                                       vs.data(), 1, 2, 1, S, S, D, D, causal,
                                       0.5f, scratch.data(), g.data(),
                                       gk.data(), gv.data(), &local));
        EXPECT_EQ(o, slice(out, H, h0, 2)) << "b " << b0 << " h " << h0;
        EXPECT_EQ(g, slice(dq, H, h0, 2)) << "b " << b0 << " h " << h0;
        // dk, dv of one kv head sum over its query heads: these are all of
        // them, in the same order.
        EXPECT_EQ(gk, slice(dk, KV, h0 / 2, 1)) << "b " << b0 << " h " << h0;
        EXPECT_EQ(gv, slice(dv, KV, h0 / 2, 1)) << "b " << b0 << " h " << h0;
      }
  }
  // Queries split (not causal): each block of rows draws the whole
  // tensor's rows of the mask, and each output row is its own dot products,
  // so the rows match bit for bit too.
  std::vector<float> out(q.size());
  std::vector<float> scratch(cpu::attentionScratchSize(S, S));
  ASSERT_TRUE(cpu::attention(q.data(), k.data(), v.data(), B, H, KV, S, S, D, D,
                             false, 0.5f, scratch.data(), out.data(),
                             &dropout));
  for (int64_t q0 = 0; q0 < S; q0 += S / 2) {
    std::vector<float> qs;
    for (int64_t bh = 0; bh < B * H; ++bh)
      qs.insert(qs.end(), q.begin() + (bh * S + q0) * D,
                q.begin() + (bh * S + q0 + S / 2) * D);
    cpu::AttentionDropout local = dropout;
    local.queryOffset = q0;
    local.globalSeqQ = S;
    std::vector<float> o(qs.size());
    ASSERT_TRUE(cpu::attention(qs.data(), k.data(), v.data(), B, H, KV, S / 2,
                               S, D, D, false, 0.5f, scratch.data(), o.data(),
                               &local));
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t i = 0; i < S / 2 * D; ++i) {
        float want = out[(bh * S + q0) * D + i];
        EXPECT_EQ(o[bh * S / 2 * D + i], want)
            << "q0 " << q0 << " bh " << bh << " i " << i;
      }
  }
}

//===----------------------------------------------------------------------===//
// Vocabulary blocks
//===----------------------------------------------------------------------===//

/// A table of 12 rows in 3 blocks of 4: each id reads its row in the block
/// holding it and a zero row in the others, so the blocks' results add up
/// to the whole table's (exactly: one term is not zero); the gradient blocks
/// are the whole gradient's rows. Ids outside the whole table are errors in
/// every block; a bf16 block converts its rows.
TEST(DistKernelTest, EmbeddingBlocksAddUpToTheWholeTable) {
  const int64_t rows = 12, hidden = 3, blocks = 3, b = rows / blocks;
  std::vector<float> table = randomFloats(rows * hidden, 8);
  std::vector<int64_t> ids = {0, 11, 4, 3, 4, 8, 7};
  auto n = static_cast<int64_t>(ids.size());
  std::vector<float> dY = randomFloats(n * hidden, 9);
  std::vector<float> whole(n * hidden), wholeGrad(rows * hidden);
  ASSERT_TRUE(
      cpu::embedding(table.data(), rows, hidden, ids.data(), n, whole.data()));
  ASSERT_TRUE(cpu::embeddingGrad(dY.data(), ids.data(), n, rows, hidden,
                                 wholeGrad.data()));
  std::vector<float> sum(whole.size(), 0.0f);
  for (int64_t k = 0; k < blocks; ++k) {
    cpu::VocabBlock block{k * b, rows};
    const float *mine = table.data() + k * b * hidden;
    std::vector<float> out(whole.size(), NAN), grad(b * hidden, NAN);
    ASSERT_TRUE(cpu::embeddingRows(mine, cpu::FloatType::F32, b, hidden,
                                   ids.data(), n, cpu::FloatType::F32,
                                   out.data(), &block));
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < hidden; ++j) {
        float v = out[p * hidden + j];
        bool held = ids[p] / b == k;
        EXPECT_EQ(v, held ? whole[p * hidden + j] : 0.0f)
            << "block " << k << " id " << ids[p];
        sum[p * hidden + j] += v;
      }
    ASSERT_TRUE(cpu::embeddingGrad(dY.data(), ids.data(), n, b, hidden,
                                   grad.data(), &block));
    EXPECT_EQ(grad,
              std::vector<float>(wholeGrad.begin() + k * b * hidden,
                                 wholeGrad.begin() + (k + 1) * b * hidden))
        << "block " << k;
    // 16-bit storage: the held rows converted, the others zero.
    std::vector<uint16_t> half;
    for (int64_t i = 0; i < b * hidden; ++i)
      half.push_back(floatToBFloat16(mine[i]));
    std::vector<uint16_t> outHalf(whole.size(), 0xFFFF);
    ASSERT_TRUE(cpu::embeddingRows(half.data(), cpu::FloatType::BF16, b, hidden,
                                   ids.data(), n, cpu::FloatType::BF16,
                                   outHalf.data(), &block));
    for (int64_t p = 0; p < n; ++p)
      EXPECT_EQ(outHalf[p * hidden],
                ids[p] / b == k ? half[(ids[p] - k * b) * hidden] : 0)
          << "bf16 block " << k << " id " << ids[p];
  }
  EXPECT_EQ(sum, whole);

  cpu::VocabBlock last{8, rows};
  std::vector<float> out(whole.size());
  std::vector<int64_t> bad = {3, 12};
  EXPECT_EQ(cpu::embeddingRows(table.data(), cpu::FloatType::F32, b, hidden,
                               bad.data(), 2, cpu::FloatType::F32, out.data(),
                               &last)
                .message(),
            "embedding: id 12 at position 1 is outside [0, 12)");
  bad = {-1};
  EXPECT_EQ(
      cpu::embeddingGrad(dY.data(), bad.data(), 1, b, hidden, out.data(), &last)
          .message(),
      "embedding_grad: id -1 at position 0 is outside [0, 12)");
}

/// Labels are checked against the real classes before anything else: a
/// label in the padding is an error, as is one past the padded columns.
TEST(DistKernelTest, CrossEntropyLabelsAreRealClasses) {
  std::vector<float> logits = randomFloats(2 * 4, 3), max(2);
  cpu::VocabBlock block{4, 6}; // columns 4..7 of a vocabulary of 6 classes
  std::vector<int64_t> labels = {-100, 6};
  EXPECT_EQ(cpu::crossEntropyBlockMax(logits.data(), labels.data(), 2, 4, block,
                                      -100, max.data())
                .message(),
            "cross_entropy: label 6 at position 1 is outside [0, 6)");
  labels = {5, -100};
  ASSERT_TRUE(cpu::crossEntropyBlockMax(logits.data(), labels.data(), 2, 4,
                                        block, -100, max.data()));
  // Two classes here (global 4 and 5): the max of the first two columns.
  EXPECT_EQ(max[0], std::max(logits[0], logits[1]));
  std::vector<float> sums(2), target(2), grad(8);
  ASSERT_TRUE(cpu::crossEntropyBlockSums(logits.data(), labels.data(), 2, 4,
                                         block, -100, max.data(), sums.data(),
                                         target.data()));
  EXPECT_EQ(target, (std::vector<float>{logits[1], 0.0f}));
  ASSERT_TRUE(cpu::crossEntropyBlockGrad(logits.data(), labels.data(), 2, 4,
                                         block, -100, max.data(), sums.data(),
                                         0.5f, grad.data()));
  EXPECT_EQ(grad[2], 0.0f);
  EXPECT_EQ(grad[3], 0.0f);
  EXPECT_EQ(std::vector<float>(grad.begin() + 4, grad.end()),
            std::vector<float>(4, 0.0f));
  EXPECT_NEAR(grad[0] + grad[1], 0.0f, 1e-6); // softmax over these two - 1
  labels = {-3, -100};
  EXPECT_EQ(cpu::crossEntropyBlockGrad(logits.data(), labels.data(), 2, 4,
                                       block, -100, max.data(), sums.data(),
                                       0.5f, grad.data())
                .message(),
            "cross_entropy_grad: label -3 at position 0 is outside [0, 6)");
}

} // namespace
