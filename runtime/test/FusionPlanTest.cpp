//===- FusionPlanTest.cpp - the CUDA device's fused pairs, on the CPU -----===//
//
// cuda/FusionPlan.h without a GPU: executables built with
// TestExecutables.h, checked and decoded as the loader does, and the pairs
// the CUDA device would run as one kernel. A mask applied and added at
// once (either operand, any float storage, forward and backward forms, in
// one function of an action list) is fused; a mask whose result is read
// twice, is an output or a gradient, is pooled, is not added by the very
// next kernel (or not by the next kernel at all, or by one in another
// function), is added with a broadcast, or whose add writes bytes of its
// input or mask other than the very bytes of its input, is not. A linear
// and the tanh gelu right after it are fused (the epilogue writing the
// linear's result too, unless the gelu writes over it); the erf form, a
// gelu of another storage type, in another function, or writing over the
// linear's operands are not (two buffers of one pool lie apart where their
// slot 0s do: a run addresses one slot of both). A weight gradient and the
// sum_to of its dY right after it are fused (in either weight layout,
// accumulating or not; and so are an input gradient and the tanh gelu_grad of
// its result, but for the erf form, a result read again, mixed types, two
// functions); the sum staged where it shares bytes with x); a sum over fewer
// than the tokens, of another tensor or in another function is not. A bias
// add with the dropout + add pair after it (or an add, without dropout) is
// one group, unless its result is read again, the last add's result meets
// the biased input (but its very bytes) or the bias, or the next kernel is
// in another function (the pair then fuses alone). Runs of
// casts and zeros (KernelBatches.h) are batched while their members are
// independent float conversions of one function, none pooled. SwiGLU's
// pairs (silu + the mul of its result, a mul + the silu_grad of it) are
// fused, the first result written only where read or bound, unless a mul
// broadcasts, a result lies partly over an operand, or the two kernels are
// in two functions.
//
//===----------------------------------------------------------------------===//

#include "FusionPlan.h"
#include "KernelBatches.h"
#include "TestExecutables.h"

#include "tpcrt/Executable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::test;

namespace {

using Op = fb::OpCode;
using DT = fb::DType;

struct Planned {
  Program program;
  std::vector<FusionStep> plan;
  std::vector<std::string> refusals;
};

/// Checks and decodes `exe` as the loader does, and plans its fusions.
void planOf(const fb::ExecutableT &exe, Planned &out) {
  std::vector<uint8_t> payload = pack(exe);
  const fb::Executable &root = *fb::GetExecutable(payload.data());
  Status s = checkExecutable(root);
  ASSERT_TRUE(s) << s.message();
  s = decodeProgram(root, out.program);
  ASSERT_TRUE(s) << s.message();
  out.plan = planFusions(out.program, &out.refusals);
}

/// The kernels of the pair builder, by index.
constexpr uint32_t kGelu = 0, kMask = 1, kApply = 2;

/// One mask applied and added: gelu(p) -> x; dropout_mask -> m;
/// apply_mask(x, m) -> y; add(y, r) -> z (or add(r, y)); z an output. The
/// options break one rule at a time.
struct Pair {
  DT xType = DT::F32, yType = DT::F32, rType = DT::F32, zType = DT::F32;
  bool maskedRhs = false;
  bool yOutput = false, yGrad = false;
  /// mul(y, z) -> w after the add.
  bool readTwice = false;
  /// gelu(r) -> g between the apply_mask and the add, which adds g.
  bool between = false;
  /// r of [8]: broadcast over x's [4, 8].
  bool broadcast = false;
  /// The next kernel adds two other values; gelu(y) -> w reads y later.
  bool addsOthers = false;
  /// add(y, r) -> y.
  bool inPlace = false;

  uint32_t x = 0, m = 0, y = 0, r = 0, z = 0;
  /// The add's kernel index.
  uint32_t add = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {4, 8});
    r = b.param("r", rType,
                broadcast ? std::vector<int64_t>{8}
                          : std::vector<int64_t>{4, 8});
    uint32_t q = b.param("q", DT::F32, {4, 8});
    x = b.buffer(xType, {4, 8});
    m = b.buffer(DT::U8, {4, 8});
    y = b.buffer(yType, {4, 8});
    z = inPlace ? y : b.buffer(zType, {4, 8});
    b.kernel(Op::Gelu, {p}, {x});
    b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});
    b.kernel(Op::ApplyMask, {x, m}, {y}, {}, {0.1});
    uint32_t rhs = r;
    if (between) {
      rhs = b.buffer(rType, {4, 8});
      b.kernel(Op::Gelu, {r}, {rhs});
    }
    add = static_cast<uint32_t>(b.exe.kernels.size());
    if (addsOthers) {
      b.kernel(Op::Add, {q, r}, {z});
      uint32_t w = b.buffer(DT::F32, {4, 8});
      b.kernel(Op::Gelu, {y}, {w});
      b.output("w", w);
    } else if (maskedRhs) {
      b.kernel(Op::Add, {rhs, y}, {z});
    } else {
      b.kernel(Op::Add, {y, rhs}, {z});
    }
    if (readTwice) {
      uint32_t w = b.buffer(DT::F32, {4, 8});
      b.kernel(Op::Mul, {y, z}, {w});
      b.output("w", w);
    }
    if (inPlace) {
      uint32_t w = b.buffer(DT::F32, {4, 8});
      b.kernel(Op::Gelu, {z}, {w});
      b.output("w", w);
    } else {
      b.output("z", z);
    }
    if (yOutput)
      b.output("y", y);
    if (yGrad)
      b.grad("q", y);
    b.exe.seed = 7;
    return b.finish();
  }
};

/// Moves `buffers` to a region of `bytes` past the end of the arena, each
/// at its given offset in it.
void relocate(fb::ExecutableT &exe,
              const std::vector<std::pair<uint32_t, uint64_t>> &buffers,
              uint64_t bytes) {
  uint64_t region = exe.arena_bytes;
  for (auto [buffer, offset] : buffers)
    exe.buffers[buffer]->offset = region + offset;
  exe.arena_bytes += bytes;
  exe.planned_peak_bytes = exe.arena_bytes;
}

void expectFused(const Planned &p, uint32_t head, uint32_t tail) {
  ASSERT_GT(p.plan.size(), std::max(head, tail));
  EXPECT_EQ(p.plan[head].role, FusionRole::Head);
  EXPECT_EQ(p.plan[head].partner, tail);
  EXPECT_EQ(p.plan[tail].role, FusionRole::Tail);
  EXPECT_EQ(p.plan[tail].partner, head);
  for (uint32_t i = 0; i < p.plan.size(); ++i) {
    if (i != head && i != tail) {
      EXPECT_EQ(p.plan[i].role, FusionRole::None) << "kernel " << i;
    }
  }
  EXPECT_TRUE(p.refusals.empty()) << p.refusals.front();
}

/// One refusal was said, and it says `why`.
void expectOneRefusal(const Planned &p, const std::string &why) {
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_NE(p.refusals[0].find(why), std::string::npos)
      << "refusal: " << p.refusals[0] << "\nexpected: " << why;
}

void expectRefused(const Planned &p, const std::string &why) {
  for (const FusionStep &step : p.plan)
    EXPECT_EQ(step.role, FusionRole::None);
  expectOneRefusal(p, why);
}

template <typename AnyPair>
void expectRefused(AnyPair pair, const std::string &why) {
  Planned p;
  planOf(pair.build(), p);
  expectRefused(p, why);
}

/// `pair` with `buffers` moved to a region of their own (relocate()): refused
/// for `why`.
template <typename AnyPair>
void expectRefusedRelocated(
    AnyPair pair, const std::vector<std::pair<uint32_t, uint64_t>> &buffers,
    const std::string &why) {
  fb::ExecutableT exe = pair.build();
  relocate(exe, buffers, 1024);
  Planned p;
  planOf(exe, p);
  expectRefused(p, why);
}

TEST(FusionPlanTest, MaskAppliedAndAddedIsFused) {
  Pair pair;
  Planned p;
  planOf(pair.build(), p);
  ASSERT_EQ(p.plan.size(), 4u);
  expectFused(p, kApply, pair.add);
}

TEST(FusionPlanTest, EitherOperandAndAnyFloatStorage) {
  // The backward form: a bf16 gradient masked, added to an f32 one.
  Pair pair;
  pair.maskedRhs = true;
  pair.xType = DT::BF16;
  pair.yType = DT::BF16;
  pair.zType = DT::F32;
  Planned p;
  planOf(pair.build(), p);
  expectFused(p, kApply, pair.add);

  Pair halves;
  halves.xType = halves.yType = halves.rType = halves.zType = DT::F16;
  Planned h;
  planOf(halves.build(), h);
  expectFused(h, kApply, halves.add);
}

TEST(FusionPlanTest, ResultReadTwiceIsNotFused) {
  Pair pair;
  pair.readTwice = true;
  expectRefused(pair, "read by another kernel, or twice");
}

TEST(FusionPlanTest, ResultAddedToItselfIsNotFused) {
  // add(y, y): one kernel reading y twice.
  ExecutableBuilder b;
  uint32_t p = b.param("p", DT::F32, {4, 8});
  uint32_t x = b.buffer(DT::F32, {4, 8}), m = b.buffer(DT::U8, {4, 8});
  uint32_t y = b.buffer(DT::F32, {4, 8}), z = b.buffer(DT::F32, {4, 8});
  b.kernel(Op::Gelu, {p}, {x});
  b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});
  b.kernel(Op::ApplyMask, {x, m}, {y}, {}, {0.1});
  b.kernel(Op::Add, {y, y}, {z});
  b.output("z", z);
  Planned planned;
  planOf(b.finish(), planned);
  expectRefused(planned, "read by another kernel, or twice");
}

TEST(FusionPlanTest, OutputOrGradientIsNotFused) {
  Pair output;
  output.yOutput = true;
  expectRefused(output, "binding, param or state");
  Pair grad;
  grad.yGrad = true;
  expectRefused(grad, "binding, param or state");
}

TEST(FusionPlanTest, AddNotNextIsNotFused) {
  Pair pair;
  pair.between = true;
  expectRefused(pair, "the next kernel is not an add");
  Pair others;
  others.addsOthers = true;
  expectRefused(others, "the add does not read its result");
}

TEST(FusionPlanTest, BroadcastAddIsNotFused) {
  Pair pair;
  pair.broadcast = true;
  pair.maskedRhs = false;
  expectRefused(pair, "the add broadcasts");
}

TEST(FusionPlanTest, AddInPlaceIsNotFused) {
  Pair pair;
  pair.inPlace = true;
  expectRefused(pair, "written by another kernel");
}

TEST(FusionPlanTest, AddWritingTheInputsBytes) {
  // z in the very bytes of x (x dead after the apply_mask): fused, each
  // element read before it is written.
  {
    Pair pair;
    fb::ExecutableT exe = pair.build();
    relocate(exe, {{pair.x, 0}, {pair.z, 0}}, 256);
    Planned p;
    planOf(exe, p);
    expectFused(p, kApply, pair.add);
  }
  // Half a row on: an element of z lands on another element of x.
  {
    Pair pair;
    fb::ExecutableT exe = pair.build();
    relocate(exe, {{pair.x, 0}, {pair.z, 64}}, 256);
    Planned p;
    planOf(exe, p);
    expectRefused(p, "overlaps the masked input");
  }
  // The same first byte, but bf16 x under f32 z: elements misaligned.
  {
    Pair pair;
    pair.xType = DT::BF16;
    fb::ExecutableT exe = pair.build();
    relocate(exe, {{pair.x, 0}, {pair.z, 0}}, 256);
    Planned p;
    planOf(exe, p);
    expectRefused(p, "overlaps the masked input");
  }
  // z over the mask (dead after the apply_mask).
  {
    Pair pair;
    fb::ExecutableT exe = pair.build();
    relocate(exe, {{pair.m, 0}, {pair.z, 0}}, 256);
    Planned p;
    planOf(exe, p);
    expectRefused(p, "overlaps the mask");
  }
}

struct FunctionRange {
  const char *name;
  uint32_t first, count;
};

/// `exe` cut into `functions`, one action running each in turn.
void runByActions(fb::ExecutableT &exe,
                  const std::vector<FunctionRange> &functions) {
  for (const FunctionRange &range : functions) {
    auto f = std::make_unique<fb::FunctionT>();
    f->name = range.name;
    f->first_kernel = range.first;
    f->kernel_count = range.count;
    exe.functions.push_back(std::move(f));
  }
  exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
  for (uint32_t f = 0; f < exe.functions.size(); ++f)
    exe.stage_actions[0]->actions.emplace_back(f, 0, 0);
}

/// The pair as functions run by actions: [gelu] [dropout_mask, apply_mask,
/// add], or with `split` [gelu] [dropout_mask, apply_mask] [add]; with
/// `pooledY`, y in a pool of one slot.
fb::ExecutableT actionPair(bool split, bool pooledY) {
  Pair pair;
  fb::ExecutableT exe = pair.build();
  if (split)
    runByActions(exe, {{"prologue", 0, 1}, {"mask", 1, 2}, {"add", 3, 1}});
  else
    runByActions(exe, {{"prologue", 0, 1}, {"mask and add", 1, 3}});
  if (pooledY) {
    auto pool = std::make_unique<fb::PoolT>();
    pool->slots = 1;
    pool->stride = (exe.buffers[pair.y]->size + 63) / 64 * 64;
    exe.pools.push_back(std::move(pool));
    exe.buffers[pair.y]->pool = 0;
  }
  return exe;
}

TEST(FusionPlanTest, ActionsFuseWithinOneFunction) {
  Planned p;
  planOf(actionPair(false, false), p);
  ASSERT_TRUE(p.program.hasActions());
  expectFused(p, kApply, 3);

  Planned split;
  planOf(actionPair(true, false), split);
  expectRefused(split, "the add is in another function");

  Planned pooled;
  planOf(actionPair(false, true), pooled);
  expectRefused(pooled, "its result is pooled");
}

TEST(FusionPlanTest, SeveralPairsInOneProgram) {
  // A block's two residual adds, the second reading the first's sum.
  ExecutableBuilder b;
  uint32_t p = b.param("p", DT::F32, {4, 8});
  uint32_t r = b.param("r", DT::F32, {4, 8});
  uint32_t m = b.buffer(DT::U8, {4, 8});
  uint32_t x0 = b.buffer(DT::F32, {4, 8}), y0 = b.buffer(DT::F32, {4, 8});
  uint32_t z0 = b.buffer(DT::F32, {4, 8}), x1 = b.buffer(DT::F32, {4, 8});
  uint32_t y1 = b.buffer(DT::F32, {4, 8}), z1 = b.buffer(DT::F32, {4, 8});
  b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});    // 0
  b.kernel(Op::Gelu, {p}, {x0});                     // 1
  b.kernel(Op::ApplyMask, {x0, m}, {y0}, {}, {0.1}); // 2
  b.kernel(Op::Add, {r, y0}, {z0});                  // 3
  b.kernel(Op::Gelu, {z0}, {x1});                    // 4
  b.kernel(Op::ApplyMask, {x1, m}, {y1}, {}, {0.1}); // 5
  b.kernel(Op::Add, {y1, z0}, {z1});                 // 6
  b.output("z", z1);
  Planned planned;
  planOf(b.finish(), planned);
  ASSERT_EQ(planned.plan.size(), 7u);
  EXPECT_TRUE(planned.refusals.empty());
  std::vector<FusionRole> roles;
  for (const FusionStep &step : planned.plan)
    roles.push_back(step.role);
  using R = FusionRole;
  EXPECT_EQ(roles, (std::vector<R>{R::None, R::None, R::Head, R::Tail, R::None,
                                   R::Head, R::Tail}));
  EXPECT_EQ(planned.plan[2].partner, 3u);
  EXPECT_EQ(planned.plan[6].partner, 5u);
}

/// A linear and the gelu of its result: silu(p) -> x; linear(x, w, b) -> h;
/// gelu(h) -> g (tanh form); mul(h, g) -> o (h read again, as the
/// backward's stash is). The options break one rule at a time.
struct GeluPair {
  bool bias = true, erf = false, gBf16 = false, geluOfOther = false;
  bool hReadAgain = true;
  /// g an output (else only mul(h, g) -> o reads it: g may be pooled).
  bool gOutput = true;
  uint32_t x = 0, h = 0, g = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {6, 16});
    x = b.buffer(DT::F32, {6, 16});
    b.kernel(Op::Silu, {p}, {x});
    uint32_t w = b.param("w", DT::F32, {24, 16});
    std::vector<uint32_t> operands = {x, w};
    if (bias)
      operands.push_back(b.param("b", DT::F32, {24}));
    h = b.buffer(DT::F32, {6, 24});
    g = b.buffer(gBf16 ? DT::BF16 : DT::F32, {6, 24});
    uint32_t other = b.param("other", DT::F32, {6, 24});
    b.kernel(Op::Linear, operands, {h}, {}, {}, 1); // w as [out, in]
    b.kernel(Op::Gelu, {geluOfOther ? other : h}, {g}, {}, {}, erf ? 0 : 1);
    if (hReadAgain) {
      uint32_t o = b.buffer(DT::F32, {6, 24});
      b.kernel(Op::Mul, {h, gBf16 ? h : g}, {o});
      b.output("o", o);
    }
    if (gOutput)
      b.output("g", g);
    return b.finish();
  }
};

TEST(FusionPlanTest, LinearAndGeluAreFused) {
  for (bool bias : {true, false}) {
    GeluPair pair;
    pair.bias = bias;
    Planned p;
    planOf(pair.build(), p);
    expectFused(p, 1, 2);
    EXPECT_TRUE(p.plan[1].writesHead); // h is read again: the aux matrix
    EXPECT_TRUE(p.plan[2].writesHead);
  }
}

TEST(FusionPlanTest, GeluOverTheLinearsResultWritesOnlyIt) {
  // g in the very bytes of h (h dead after the gelu): the epilogue writes
  // g alone.
  GeluPair pair;
  pair.hReadAgain = false;
  fb::ExecutableT exe = pair.build();
  relocate(exe, {{pair.h, 0}, {pair.g, 0}}, 1024);
  Planned p;
  planOf(exe, p);
  expectFused(p, 1, 2);
  EXPECT_FALSE(p.plan[1].writesHead);
  // (g partly over h the loader refuses: a gelu's result overlapping its
  // input is the very bytes or none.)
}

TEST(FusionPlanTest, LinearAndGeluRefusals) {
  auto refused = [](GeluPair pair, const std::string &why) {
    Planned p;
    planOf(pair.build(), p);
    expectRefused(p, why);
  };
  GeluPair erf;
  erf.erf = true;
  refused(erf, "the erf form");
  GeluPair bf16;
  bf16.gBf16 = true;
  refused(bf16, "another storage type");
  // Not a candidate at all: the gelu reads something else.
  GeluPair other;
  other.geluOfOther = true;
  Planned p;
  planOf(other.build(), p);
  for (const FusionStep &step : p.plan)
    EXPECT_EQ(step.role, FusionRole::None);
  EXPECT_TRUE(p.refusals.empty());
  // g over x (dead after the linear, but read by the fused matmul while it
  // writes g).
  GeluPair overX;
  fb::ExecutableT exe = overX.build();
  relocate(exe, {{overX.x, 0}, {overX.g, 0}}, 1024);
  Planned q;
  planOf(exe, q);
  expectRefused(q, "overlaps an operand of the linear");
}

/// `buffers` moved into pools of 2 slots, one stride 64 bytes above the
/// largest of them: buffer i into pool `pools[i]` (a new pool per distinct
/// index) at `offsets[i]` past the pool's region.
void pool(fb::ExecutableT &exe, const std::vector<uint32_t> &buffers,
          const std::vector<uint32_t> &pools,
          const std::vector<uint64_t> &offsets) {
  uint64_t stride = 0;
  for (uint32_t buffer : buffers)
    stride = std::max(stride, (exe.buffers[buffer]->size + 127) / 64 * 64);
  uint32_t numPools = *std::max_element(pools.begin(), pools.end()) + 1;
  uint64_t region = exe.arena_bytes;
  for (uint32_t i = 0; i < numPools; ++i) {
    auto pool = std::make_unique<fb::PoolT>();
    pool->slots = 2;
    pool->stride = stride;
    exe.pools.push_back(std::move(pool));
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    exe.buffers[buffers[i]]->pool = static_cast<int32_t>(pools[i]);
    exe.buffers[buffers[i]]->offset = region + offsets[i];
  }
  exe.arena_bytes += 4 * stride * numPools;
  exe.planned_peak_bytes = exe.arena_bytes;
}

TEST(FusionPlanTest, LinearAndGeluInOnePoolCompareOneSlot) {
  // x and g apart in one slot of one pool (a pipeline's stash): a run
  // addresses the same slot of both, so the pair fuses, although slot 1 of
  // x lies over slot 0 of g. In two pools the slots may differ: refused.
  GeluPair pair;
  pair.gOutput = false;
  fb::ExecutableT exe = pair.build();
  runByActions(exe, {{"all", 0, 4}});
  fb::ExecutableT twoPools = exe;
  uint64_t apart = (exe.buffers[pair.x]->size + 63) / 64 * 64;
  pool(exe, {pair.x, pair.g}, {0, 0}, {0, apart});
  Planned p;
  planOf(exe, p);
  expectFused(p, 1, 2);
  pool(twoPools, {pair.x, pair.g}, {0, 1}, {0, apart});
  Planned q;
  planOf(twoPools, q);
  expectRefused(q, "overlaps an operand of the linear");
}

TEST(FusionPlanTest, LinearAndGeluInTwoFunctionsAreNot) {
  GeluPair pair;
  fb::ExecutableT exe = pair.build();
  runByActions(exe, {{"linear", 0, 2}, {"gelu", 2, 2}});
  Planned p;
  planOf(exe, p);
  expectRefused(p, "the gelu is in another function");
}

/// An input gradient and the GeLU gradient of its result: silu(p) -> dY
/// [6, 24]; silu(q) -> x [6, 16]; linear_input_grad(dY, w) -> dH [6, 16]
/// (w as [out, in]); gelu_grad(dH, x) -> dA (tanh form); dA an output. The
/// options break one rule at a time.
struct GeluGradPair {
  bool erf = false, dARawBf16 = false, dHReadAgain = false;
  uint32_t dY = 0, x = 0, dH = 0, dA = 0;
  /// The pair's first kernel.
  uint32_t head = 2;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {6, 24});
    uint32_t q = b.param("q", DT::F32, {6, 16});
    uint32_t w = b.param("w", DT::F32, {24, 16});
    dY = b.buffer(DT::F32, {6, 24});
    x = b.buffer(DT::F32, {6, 16});
    dH = b.buffer(DT::F32, {6, 16});
    dA = b.buffer(dARawBf16 ? DT::BF16 : DT::F32, {6, 16});
    b.kernel(Op::Silu, {p}, {dY});
    b.kernel(Op::Silu, {q}, {x});
    b.kernel(Op::LinearInputGrad, {dY, w}, {dH}, {}, {}, 1);
    b.kernel(Op::GeluGrad, {dH, x}, {dA}, {}, {}, erf ? 0 : 1);
    if (dHReadAgain) {
      uint32_t o = b.buffer(DT::F32, {6, 16});
      b.kernel(Op::Silu, {dH}, {o});
      b.output("o", o);
    }
    b.output("dA", dA);
    return b.finish();
  }
};

TEST(FusionPlanTest, InputGradientAndGeluGradientAreFused) {
  GeluGradPair pair;
  Planned p;
  planOf(pair.build(), p);
  if (HasFatalFailure())
    return;
  expectFused(p, pair.head, pair.head + 1);
  // dA in the very bytes of x (x dead after the gelu_grad): still fused.
  GeluGradPair overX;
  fb::ExecutableT exe = overX.build();
  relocate(exe, {{overX.x, 0}, {overX.dA, 0}}, 1024);
  Planned q;
  planOf(exe, q);
  if (HasFatalFailure())
    return;
  expectFused(q, overX.head, overX.head + 1);
}

TEST(FusionPlanTest, InputGradientAndGeluGradientRefusals) {
  auto refused = [](GeluGradPair pair, const std::string &why) {
    Planned p;
    planOf(pair.build(), p);
    expectRefused(p, why);
  };
  GeluGradPair erf;
  erf.erf = true;
  refused(erf, "the erf form");
  GeluGradPair again;
  again.dHReadAgain = true;
  refused(again, "read by another kernel");
  GeluGradPair bf16;
  bf16.dARawBf16 = true;
  refused(bf16, "differ in storage type");
  GeluGradPair split;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"dY and x", 0, 2}, {"dX", 2, 1}, {"gelu", 3, 1}});
  Planned p;
  planOf(exe, p);
  expectRefused(p, "the gelu_grad is in another function");
  // dA over dY (dead after the input gradient, but read by the fused
  // matmul while its epilogue writes dA).
  GeluGradPair overDY;
  overDY.build();
  expectRefusedRelocated(overDY, {{overDY.dY, 0}, {overDY.dA, 0}},
                         "overlaps an operand of the input gradient");
}

/// A product and the add of it: silu(p) -> dY [6, 24]; silu(q) -> r
/// [6, 16]; linear_input_grad(dY, w) -> dX [6, 16] (or linear(dY, w[, b]):
/// w as [out, in] = [16, 24]); add(r, dX) (or add(dX, r)) -> z; z an
/// output. The options break one rule at a time.
struct ProductAddPair {
  bool forward = false, bias = false, productFirst = false;
  bool zBf16 = false, productReadAgain = false, broadcast = false;
  uint32_t dY = 0, r = 0, dX = 0, z = 0;
  /// The pair's first kernel.
  uint32_t head = 2;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {6, 24});
    uint32_t q = b.param("q", DT::F32,
                         broadcast ? std::vector<int64_t>{16}
                                   : std::vector<int64_t>{6, 16});
    uint32_t w = forward ? b.param("w", DT::F32, {16, 24})
                         : b.param("w", DT::F32, {24, 16});
    uint32_t bv = b.param("b", DT::F32, {16});
    dY = b.buffer(DT::F32, {6, 24});
    r = b.buffer(DT::F32, broadcast ? std::vector<int64_t>{16}
                                    : std::vector<int64_t>{6, 16});
    dX = b.buffer(DT::F32, {6, 16});
    z = b.buffer(zBf16 ? DT::BF16 : DT::F32, {6, 16});
    b.kernel(Op::Silu, {p}, {dY});
    b.kernel(Op::Silu, {q}, {r});
    if (forward && bias)
      b.kernel(Op::Linear, {dY, w, bv}, {dX}, {}, {}, 1);
    else if (forward)
      b.kernel(Op::Linear, {dY, w}, {dX}, {}, {}, 1);
    else
      b.kernel(Op::LinearInputGrad, {dY, w}, {dX}, {}, {}, 1);
    if (productFirst)
      b.kernel(Op::Add, {dX, r}, {z});
    else
      b.kernel(Op::Add, {r, dX}, {z});
    if (productReadAgain) {
      uint32_t o = b.buffer(DT::F32, {6, 16});
      b.kernel(Op::Silu, {dX}, {o});
      b.output("o", o);
    }
    b.output("z", z);
    return b.finish();
  }
};

TEST(FusionPlanTest, ProductAndItsAddAreFused) {
  for (bool forward : {false, true})
    for (bool productFirst : {false, true}) {
      ProductAddPair pair;
      pair.forward = forward;
      pair.productFirst = productFirst;
      Planned p;
      planOf(pair.build(), p);
      if (HasFatalFailure())
        return;
      expectFused(p, pair.head, pair.head + 1);
      EXPECT_EQ(fusion::addendOperand(p.program.calls[pair.head],
                                      p.program.calls[pair.head + 1]),
                productFirst ? 1u : 0u);
    }
  // z in the very bytes of the addend r (C is D): still fused.
  ProductAddPair overR;
  fb::ExecutableT exe = overR.build();
  relocate(exe, {{overR.r, 0}, {overR.z, 0}}, 1024);
  Planned q;
  planOf(exe, q);
  if (HasFatalFailure())
    return;
  expectFused(q, overR.head, overR.head + 1);
}

TEST(FusionPlanTest, ProductAndItsAddRefusals) {
  ProductAddPair bias;
  bias.forward = bias.bias = true;
  expectRefused(bias, "the linear has a bias");
  ProductAddPair again;
  again.productReadAgain = true;
  expectRefused(again, "read by another kernel");
  ProductAddPair bf16;
  bf16.zBf16 = true;
  expectRefused(bf16, "differ in storage type");
  ProductAddPair broadcast;
  broadcast.broadcast = broadcast.productFirst = true;
  expectRefused(broadcast, "a tensor of its size");
  ProductAddPair split;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"dY and r", 0, 2}, {"dX", 2, 1}, {"add", 3, 1}});
  Planned p;
  planOf(exe, p);
  expectRefused(p, "the add is in another function");
  // z over dY (read by the fused matmul while it writes z).
  ProductAddPair overDY;
  overDY.build();
  expectRefusedRelocated(overDY, {{overDY.dY, 0}, {overDY.z, 0}},
                         "overlaps an operand of the product");
  // (z over part of r: the loader refuses such an add already.)
}

/// A weight gradient and the bias gradient of one linear: silu(p) -> dY
/// [2, 3, 24]; silu(q) -> x [2, 3, 16]; linear_weight_grad(x, dY) -> dW
/// (w as [out, in], or [in, out]; accumulating: first a plain one into dW,
/// then the pair adds to it); sum_to(dY or another tensor) -> db; dW and db
/// the gradients of params w and b. The options break one rule at a time.
struct BiasGradPair {
  bool outIn = true, accumulate = false;
  /// The sum_to sums another tensor of dY's shape.
  bool sumsOther = false;
  /// The sum_to keeps dY's last two dimensions ([3, 24]).
  bool keepsTwo = false;
  uint32_t x = 0, dY = 0, dW = 0, db = 0;
  /// The pair's kernels.
  uint32_t head = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {2, 3, 24});
    uint32_t q = b.param("q", DT::F32, {2, 3, 16});
    uint32_t other = b.param("other", DT::F32, {2, 3, 24});
    std::vector<int64_t> wShape =
        outIn ? std::vector<int64_t>{24, 16} : std::vector<int64_t>{16, 24};
    b.param("w", DT::F32, wShape);
    b.param("b", DT::F32,
            keepsTwo ? std::vector<int64_t>{3, 24} : std::vector<int64_t>{24});
    dY = b.buffer(DT::F32, {2, 3, 24});
    x = b.buffer(DT::F32, {2, 3, 16});
    dW = b.buffer(DT::F32, wShape);
    b.kernel(Op::Silu, {p}, {dY});
    b.kernel(Op::Silu, {q}, {x});
    if (accumulate)
      b.kernel(Op::LinearWeightGrad, {x, dY}, {dW}, {}, {}, outIn);
    head = static_cast<uint32_t>(b.exe.kernels.size());
    if (accumulate)
      b.kernel(Op::LinearWeightGradAccumulate, {x, dY, dW}, {dW}, {}, {},
               outIn);
    else
      b.kernel(Op::LinearWeightGrad, {x, dY}, {dW}, {}, {}, outIn);
    db = b.buffer(DT::F32, keepsTwo ? std::vector<int64_t>{3, 24}
                                    : std::vector<int64_t>{24});
    b.kernel(Op::SumTo, {sumsOther ? other : dY}, {db});
    b.grad("w", dW);
    b.grad("b", db);
    return b.finish();
  }
};

TEST(FusionPlanTest, WeightGradientAndItsBiasGradientAreFused) {
  for (bool outIn : {true, false})
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE(std::string(outIn ? "out_in" : "in_out") +
                   (accumulate ? ", accumulating" : ""));
      BiasGradPair pair;
      pair.outIn = outIn;
      pair.accumulate = accumulate;
      Planned p;
      planOf(pair.build(), p);
      if (HasFatalFailure())
        return;
      expectFused(p, pair.head, pair.head + 1);
      EXPECT_FALSE(p.plan[pair.head].stagesSum);
    }
}

TEST(FusionPlanTest, BiasGradientOverTheInputGoesThroughScratch) {
  // db in bytes of x (dead after the weight gradient, so the memory plan
  // may hand them over): fused, the sum staged.
  BiasGradPair pair;
  fb::ExecutableT exe = pair.build();
  relocate(exe, {{pair.x, 0}, {pair.db, 64}}, 1024);
  Planned p;
  planOf(exe, p);
  if (HasFatalFailure())
    return;
  expectFused(p, pair.head, pair.head + 1);
  EXPECT_TRUE(p.plan[pair.head].stagesSum);
  EXPECT_TRUE(p.plan[pair.head + 1].stagesSum);
}

TEST(FusionPlanTest, WeightGradientAndBiasGradientRefusals) {
  // Not a candidate: the sum_to sums another tensor.
  BiasGradPair other;
  other.sumsOther = true;
  Planned p;
  planOf(other.build(), p);
  for (const FusionStep &step : p.plan)
    EXPECT_EQ(step.role, FusionRole::None);
  EXPECT_TRUE(p.refusals.empty());
  // A sum over the batch only ([2, 3, 24] -> [3, 24]).
  BiasGradPair two;
  two.keepsTwo = true;
  Planned q;
  planOf(two.build(), q);
  expectRefused(q, "does not sum dY over its tokens");
  // In two functions of an action list.
  BiasGradPair split;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"dY and x", 0, 2}, {"W", 2, 1}, {"sum", 3, 1}});
  Planned r;
  planOf(exe, r);
  expectRefused(r, "the sum_to is in another function");
}

/// A norm's backward: silu(p) -> dY [2, 3, cols]; silu(q) -> x;
/// layer_norm_param_grad(dY, x) -> (dW, dB) (rms_norm_param_grad -> (dW));
/// its input gradient (dY, x, w) -> dX; add(r, dX) -> z (or add(dX, r));
/// z an output, dW (and dB) gradients. The options break one rule at a
/// time.
struct NormBackwardGroup {
  bool rms = false, dXLhs = false;
  int64_t cols = 24;
  /// The input gradient's epsilon differs from the parameter gradient's.
  bool otherEpsilon = false;
  /// gelu(dX) -> z instead of the add.
  bool noAdd = false;
  /// mul(dX, z) -> w after the add (an output).
  bool dXReadAgain = false;
  /// The parameter gradient after the add (computed later, as a
  /// zero-bubble schedule's W did before tpc-autodiff moved the norms'
  /// parameter gradients into B): the input gradient and the add alone.
  bool paramGradLast = false;
  /// apply_mask(z, m) -> d after the add (with `noAdd`, of dX: no gelu),
  /// d an output: the branch's dropout.
  bool masked = false;
  uint32_t dY = 0, x = 0, w = 0, dW = 0, dB = 0, dX = 0, r = 0, z = 0;
  uint32_t m = 0, d = 0;
  /// The parameter gradient's kernel (the input gradient and the add
  /// follow it).
  uint32_t head = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    std::vector<int64_t> shape{2, 3, cols};
    uint32_t p = b.param("p", DT::F32, shape);
    uint32_t q = b.param("q", DT::F32, shape);
    w = b.param("w", DT::F32, {cols});
    b.param("b", DT::F32, {cols});
    r = b.param("r", DT::F32, shape);
    dY = b.buffer(DT::F32, shape);
    x = b.buffer(DT::F32, shape);
    dW = b.buffer(DT::F32, {cols});
    dB = b.buffer(DT::F32, {cols});
    dX = b.buffer(DT::F32, shape);
    z = b.buffer(DT::F32, shape);
    b.kernel(Op::Silu, {p}, {dY});
    b.kernel(Op::Silu, {q}, {x});
    if (masked) {
      m = b.buffer(DT::U8, shape);
      d = b.buffer(DT::F32, shape);
      b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});
    }
    head = static_cast<uint32_t>(b.exe.kernels.size());
    std::vector<uint32_t> params{dW};
    if (!rms)
      params.push_back(dB);
    if (!paramGradLast)
      b.kernel(rms ? Op::RmsNormParamGrad : Op::LayerNormParamGrad, {dY, x},
               params, {}, {1e-5});
    b.kernel(rms ? Op::RmsNormInputGrad : Op::LayerNormInputGrad, {dY, x, w},
             {dX}, {}, {otherEpsilon ? 1e-6 : 1e-5});
    if (noAdd && masked)
      b.kernel(Op::ApplyMask, {dX, m}, {d}, {}, {0.1});
    else if (noAdd)
      b.kernel(Op::Gelu, {dX}, {z}, {}, {}, 1);
    else if (dXLhs)
      b.kernel(Op::Add, {dX, r}, {z});
    else
      b.kernel(Op::Add, {r, dX}, {z});
    if (masked && !noAdd)
      b.kernel(Op::ApplyMask, {z, m}, {d}, {}, {0.1});
    if (masked)
      b.output("d", d);
    if (dXReadAgain) {
      uint32_t product = b.buffer(DT::F32, shape);
      b.kernel(Op::Mul, {dX, z}, {product});
      b.output("product", product);
    }
    if (paramGradLast)
      b.kernel(rms ? Op::RmsNormParamGrad : Op::LayerNormParamGrad, {dY, x},
               params, {}, {1e-5});
    if (!(noAdd && masked))
      b.output("z", z);
    else
      b.output("dX", dX);
    b.grad("w", dW);
    if (!rms)
      b.grad("b", dB);
    return b.finish();
  }
};

/// The parameter gradient, input gradient and add of `g` are one group
/// (withAdd) or the first two are (the add then refused, and said so).
void expectNormGroup(const Planned &p, const NormBackwardGroup &g,
                     bool withAdd) {
  ASSERT_GT(p.plan.size(), g.head + 2u);
  EXPECT_EQ(p.plan[g.head].role, FusionRole::Head);
  EXPECT_EQ(p.plan[g.head].partner, g.head + 1);
  EXPECT_EQ(p.plan[g.head + 1].role,
            withAdd ? FusionRole::Link : FusionRole::Tail);
  EXPECT_EQ(p.plan[g.head + 1].partner, g.head);
  EXPECT_EQ(p.plan[g.head + 2].role,
            withAdd ? FusionRole::Tail : FusionRole::None);
  if (withAdd) {
    EXPECT_EQ(p.plan[g.head + 2].partner, g.head + 1);
  }
  for (uint32_t i = 0; i < p.plan.size(); ++i) {
    if (i < g.head || i > g.head + 2) {
      EXPECT_EQ(p.plan[i].role, FusionRole::None) << "kernel " << i;
    }
  }
  EXPECT_EQ(p.refusals.size(), withAdd ? 0u : 1u);
}

Planned planned(const fb::ExecutableT &exe) {
  Planned p;
  planOf(exe, p);
  return p;
}

/// `check` on each norm (layer, rms) and add operand order, the group
/// given so, its other options as `base` has them.
template <typename Check>
void forEachNormForm(const NormBackwardGroup &base, Check check) {
  for (bool rms : {false, true})
    for (bool dXLhs : {false, true}) {
      SCOPED_TRACE(std::string(rms ? "rms_norm" : "layer_norm") +
                   (dXLhs ? ", dX the lhs" : ""));
      NormBackwardGroup g = base;
      g.rms = rms;
      g.dXLhs = dXLhs;
      check(g);
    }
}

TEST(FusionPlanTest, NormBackwardAndItsResidualAddAreFused) {
  forEachNormForm({}, [](NormBackwardGroup &g) {
    Planned p = planned(g.build());
    expectNormGroup(p, g, true);
  });
}

TEST(FusionPlanTest, NormBackwardWithoutTheAdd) {
  // No add after the input gradient: the two gradients alone.
  NormBackwardGroup gelu;
  gelu.noAdd = true;
  Planned p = planned(gelu.build());
  expectNormGroup(p, gelu, false);
  EXPECT_NE(p.refusals[0].find("the next kernel is not an add"),
            std::string::npos)
      << p.refusals[0];
  // dX read by another kernel too: the add cannot take it.
  NormBackwardGroup twice;
  twice.dXReadAgain = true;
  Planned q = planned(twice.build());
  expectNormGroup(q, twice, false);
  EXPECT_NE(q.refusals[0].find("read by another kernel"), std::string::npos)
      << q.refusals[0];
}

TEST(FusionPlanTest, NormBackwardOverItsOperandsBytes) {
  // z on the very bytes of dY, or of x: each element is read by the thread
  // that writes it. Fused.
  uint64_t bytes = 2 * 3 * 24 * 4;
  for (bool onX : {false, true}) {
    SCOPED_TRACE(onX ? "z on x" : "z on dY");
    NormBackwardGroup g;
    fb::ExecutableT exe = g.build();
    relocate(exe, {{onX ? g.x : g.dY, 0}, {g.z, 0}}, bytes);
    expectNormGroup(planned(exe), g, true);
  }
  // z a float past x's start: the add is refused, the gradients fused.
  NormBackwardGroup shifted;
  fb::ExecutableT exe = shifted.build();
  relocate(exe, {{shifted.x, 0}, {shifted.z, 4}}, 2 * bytes);
  Planned p = planned(exe);
  expectNormGroup(p, shifted, false);
  EXPECT_NE(p.refusals[0].find("overlaps dY, x or the residual"),
            std::string::npos)
      << p.refusals[0];
}

/// The parameter gradient of `g` refused for `why` (and said so); its
/// input gradient and add then fused alone.
void expectParamGradApart(const Planned &p, const NormBackwardGroup &g,
                          const std::string &why) {
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_NE(p.refusals[0].find(why), std::string::npos)
      << "refusal: " << p.refusals[0] << "\nexpected: " << why;
  ASSERT_GT(p.plan.size(), g.head + 2u);
  EXPECT_EQ(p.plan[g.head].role, FusionRole::None);
  EXPECT_EQ(p.plan[g.head + 1].role, FusionRole::Head);
  EXPECT_EQ(p.plan[g.head + 2].role, FusionRole::Tail);
}

TEST(FusionPlanTest, NormBackwardRefusals) {
  NormBackwardGroup epsilon;
  epsilon.otherEpsilon = true;
  expectParamGradApart(planned(epsilon.build()), epsilon,
                       "rows, columns or epsilon differ");
  NormBackwardGroup wide;
  wide.cols = kNormBackwardMostColumns + 8;
  expectParamGradApart(
      planned(wide.build()), wide,
      "more columns than the fused kernel's shared memory holds");
  // The input gradient in another function of an action list.
  NormBackwardGroup split;
  fb::ExecutableT exe = split.build();
  runByActions(
      exe,
      {{"dY and x", 0, 2}, {"param grad", 2, 1}, {"input grad and add", 3, 2}});
  expectParamGradApart(planned(exe), split,
                       "the input gradient is in another function");
  // The add in another function: the gradients fused alone.
  NormBackwardGroup addApart;
  fb::ExecutableT exe2 = addApart.build();
  runByActions(exe2, {{"dY and x", 0, 2}, {"grads", 2, 2}, {"residual", 4, 1}});
  Planned p = planned(exe2);
  expectNormGroup(p, addApart, false);
  EXPECT_NE(p.refusals[0].find("the add is in another function"),
            std::string::npos)
      << p.refusals[0];
}

/// A loss and its gradient: silu(p) -> logits [2, 3, 10]; cross_entropy(
/// logits, labels) -> (sum, count); cross_entropy_grad(logits, labels,
/// scale) -> dLogits; scale a param (or the loss's own sum); dLogits the
/// gradient of param g, sum and count outputs.
struct LossPair {
  bool scaleIsTheSum = false;
  /// count no output (read by nothing).
  bool countUnread = false;
  /// The gradient's ignore index differs.
  bool otherIgnore = false;
  uint32_t head = 0, count = 0, dLogits = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {2, 3, 10});
    uint32_t scale = b.param("scale", DT::F32, {});
    b.param("g", DT::F32, {2, 3, 10});
    uint32_t labels = b.input("labels", {2, 3}, 10);
    uint32_t logits = b.buffer(DT::F32, {2, 3, 10});
    uint32_t sum = b.buffer(DT::F32, {});
    count = b.buffer(DT::I64, {});
    dLogits = b.buffer(DT::F32, {2, 3, 10});
    b.kernel(Op::Silu, {p}, {logits});
    head = static_cast<uint32_t>(b.exe.kernels.size());
    b.kernel(Op::CrossEntropy, {logits, labels}, {sum, count}, {-100});
    b.kernel(Op::CrossEntropyGrad,
             {logits, labels, scaleIsTheSum ? sum : scale}, {dLogits},
             {otherIgnore ? -1 : -100});
    b.output("sum", sum);
    if (!countUnread)
      b.output("count", count);
    b.grad("g", dLogits);
    return b.finish();
  }
};

TEST(FusionPlanTest, LossAndItsGradientAreFused) {
  LossPair pair;
  Planned p;
  planOf(pair.build(), p);
  if (HasFatalFailure())
    return;
  expectFused(p, pair.head, pair.head + 1);
}

TEST(FusionPlanTest, LossCountUnderTheGradientIsNotWritten) {
  // The count dies unread at the loss and the memory plan gives its bytes
  // to the gradient: fused, the count (result 1) left unwritten, since the
  // fused kernels write the loss's results last.
  LossPair pair;
  pair.countUnread = true;
  fb::ExecutableT exe = pair.build();
  relocate(exe, {{pair.count, 0}, {pair.dLogits, 0}}, 2 * 3 * 10 * 4);
  Planned p = planned(exe);
  expectFused(p, pair.head, pair.head + 1);
  EXPECT_EQ(p.plan[pair.head].unwrittenHeadResults, 2u);
  EXPECT_EQ(p.plan[pair.head + 1].unwrittenHeadResults, 2u);
  // Elsewhere it is written.
  LossPair apart;
  apart.countUnread = true;
  Planned q = planned(apart.build());
  expectFused(q, apart.head, apart.head + 1);
  EXPECT_EQ(q.plan[apart.head].unwrittenHeadResults, 0u);
}

TEST(FusionPlanTest, LossAndItsGradientRefusals) {
  LossPair ownSum;
  ownSum.scaleIsTheSum = true;
  expectRefused(planned(ownSum.build()),
                "the gradient's scale is the loss's result");
  LossPair ignore;
  ignore.otherIgnore = true;
  expectRefused(planned(ignore.build()),
                "the two differ in ignore index, rows or columns");
  LossPair split;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"logits", 0, 1}, {"loss", 1, 1}, {"grad", 2, 1}});
  expectRefused(planned(exe), "the gradient is in another function");
}

/// A step's start: casts of f32 params to bf16 and zeroed f32 sums, one
/// kernel each; then a gelu (not a member) and one more cast.
struct CastRun {
  /// The second cast reads the first's result (f32 again).
  bool dependent = false;
  /// The second cast in a pool.
  bool pooled = false;
  /// The first cast to f32 (the same type: a copy, not a member).
  bool sameType = false;

  uint32_t c0 = 0, c1 = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p0 = b.param("p0", DT::F32, {4, 8});
    uint32_t p1 = b.param("p1", DT::F32, {8, 3});
    uint32_t p2 = b.param("p2", DT::F32, {5});
    c0 = b.buffer(sameType ? DT::F32 : DT::BF16, {4, 8});
    c1 = b.buffer(dependent ? DT::F32 : DT::BF16,
                  dependent ? std::vector<int64_t>{4, 8}
                            : std::vector<int64_t>{8, 3});
    uint32_t sum = b.buffer(DT::F32, {8, 3});
    uint32_t g = b.buffer(DT::BF16, {4, 8});
    uint32_t c2 = b.buffer(DT::BF16, {5});
    b.kernel(Op::Cast, {p0}, {c0});
    b.kernel(Op::Cast, {dependent ? c0 : p1}, {c1});
    b.kernel(Op::Zeros, {}, {sum});
    b.kernel(Op::Gelu, {c0}, {g});
    b.kernel(Op::Cast, {p2}, {c2});
    b.output("g", g);
    if (!pooled)
      b.output("c1", c1);
    b.output("sum", sum);
    b.output("c2", c2);
    fb::ExecutableT exe = b.finish();
    if (pooled) {
      auto pool = std::make_unique<fb::PoolT>();
      pool->slots = 1;
      pool->stride = (exe.buffers[c1]->size + 63) / 64 * 64;
      exe.pools.push_back(std::move(pool));
      exe.buffers[c1]->pool = 0;
    }
    return exe;
  }
};

std::vector<std::vector<uint32_t>> castBatches(const fb::ExecutableT &exe) {
  Planned p;
  planOf(exe, p);
  return planCastBatches(p.program);
}

using Batches = std::vector<std::vector<uint32_t>>;

TEST(FusionPlanTest, CastsAndZerosRunAsOneBatch) {
  // The two casts and the zeros; the gelu ends the run, the last cast is
  // alone.
  EXPECT_EQ(castBatches(CastRun().build()), (Batches{{0, 1, 2}}));
}

TEST(FusionPlanTest, CastBatchesRefusals) {
  CastRun dependent;
  dependent.dependent = true;
  // The second cast reads the first's result: a new run from the second.
  EXPECT_EQ(castBatches(dependent.build()), (Batches{{1, 2}}));
  CastRun pooled;
  pooled.pooled = true;
  fb::ExecutableT pooledExe = pooled.build();
  runByActions(pooledExe, {{"all", 0, 5}});
  EXPECT_EQ(castBatches(pooledExe), Batches{});
  CastRun sameType;
  sameType.sameType = true;
  // A cast to its own type is a copy: not a member.
  EXPECT_EQ(castBatches(sameType.build()), (Batches{{1, 2}}));
  CastRun split;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"first", 0, 1}, {"rest", 1, 4}});
  EXPECT_EQ(castBatches(exe), (Batches{{1, 2}}));
}

TEST(FusionPlanTest, CastBatchesKeepAnOperandFromTheNextResult) {
  // gelu(p) -> t; cast(t) -> a; cast(q) -> b with b on t's bytes (t dies
  // at the first cast): in one launch the second would write t while the
  // first reads it.
  ExecutableBuilder b;
  uint32_t p = b.param("p", DT::F32, {4, 8});
  uint32_t q = b.param("q", DT::F32, {4, 8});
  uint32_t t = b.buffer(DT::F32, {4, 8});
  uint32_t a = b.buffer(DT::BF16, {4, 8});
  uint32_t r = b.buffer(DT::BF16, {4, 8});
  b.kernel(Op::Gelu, {p}, {t});
  b.kernel(Op::Cast, {t}, {a});
  b.kernel(Op::Cast, {q}, {r});
  b.output("a", a);
  b.output("r", r);
  fb::ExecutableT exe = b.finish();
  EXPECT_EQ(castBatches(exe), (Batches{{1, 2}}));
  exe.buffers[r]->offset = exe.buffers[t]->offset;
  EXPECT_EQ(castBatches(exe), Batches{});
}

TEST(FusionPlanTest, NormInputGradAndItsAddAloneAreFused) {
  NormBackwardGroup later;
  later.paramGradLast = true;
  forEachNormForm(later, [](NormBackwardGroup &g) {
    Planned p = planned(g.build());
    // head: the input gradient; then the add; the parameter gradient
    // after them runs alone.
    expectFused(p, g.head, g.head + 1);
    EXPECT_EQ(p.plan[g.head + 2].role, FusionRole::None);
  });
}

TEST(FusionPlanTest, NormInputGradAndItsAddAloneRefusals) {
  NormBackwardGroup readAgain;
  readAgain.paramGradLast = true;
  readAgain.dXReadAgain = true;
  Planned p = planned(readAgain.build());
  EXPECT_EQ(p.plan[readAgain.head].role, FusionRole::None);
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_NE(p.refusals[0].find("+ add: the input gradient is read by another "
                               "kernel, bound or pooled"),
            std::string::npos)
      << p.refusals[0];
  NormBackwardGroup split;
  split.paramGradLast = true;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"inputs", 0, 3}, {"add", 3, 2}});
  Planned q = planned(exe);
  EXPECT_EQ(q.plan[split.head].role, FusionRole::None);
}

/// GPT-2's row-parallel branch with tp > 1: gelu(p) -> x; dropout_mask ->
/// m; add(x, b) -> y (b of [8], repeated over x's rows); apply_mask(y, m)
/// -> d; add(d, r) -> z (or add(r, d)); z an output. Without `dropout`,
/// add(x, b) -> y; add(y, r) -> z.
struct BiasGroup {
  bool dropout = true, residualLhs = false;
  DT xType = DT::F32, yType = DT::F32;
  /// mul(y, z) -> w after the group.
  bool readTwice = false;
  /// b computed (gelu(c) -> b, before the mask): a buffer that dies at the
  /// bias add, whose bytes z may take.
  bool computedBias = false;

  uint32_t x = 0, bias = 0, m = 0, y = 0, d = 0, r = 0, z = 0;
  /// The bias add's kernel index (the apply_mask, if any, and the last add
  /// follow it).
  uint32_t head = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {4, 8});
    bias = b.param("b", DT::F32, {8});
    r = b.param("r", DT::F32, {4, 8});
    uint32_t c = bias;
    x = b.buffer(xType, {4, 8});
    m = b.buffer(DT::U8, {4, 8});
    y = b.buffer(yType, {4, 8});
    d = b.buffer(yType, {4, 8});
    z = b.buffer(DT::F32, {4, 8});
    b.kernel(Op::Gelu, {p}, {x});
    if (computedBias) {
      bias = b.buffer(DT::F32, {8});
      b.kernel(Op::Gelu, {c}, {bias});
    }
    b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});
    head = static_cast<uint32_t>(b.exe.kernels.size());
    b.kernel(Op::Add, {x, bias}, {y});
    uint32_t added = y;
    if (dropout) {
      b.kernel(Op::ApplyMask, {y, m}, {d}, {}, {0.1});
      added = d;
    }
    if (residualLhs)
      b.kernel(Op::Add, {r, added}, {z});
    else
      b.kernel(Op::Add, {added, r}, {z});
    b.output("z", z);
    if (readTwice) {
      uint32_t w = b.buffer(DT::F32, {4, 8});
      b.kernel(Op::Mul, {y, z}, {w});
      b.output("w", w);
    }
    if (!dropout)
      b.output("m", m);
    b.exe.seed = 7;
    return b.finish();
  }
};

/// The bias add at `head`, the apply_mask and the add after it: one group.
void expectBiasGroup(const Planned &p, uint32_t head) {
  ASSERT_GT(p.plan.size(), head + 2);
  EXPECT_EQ(p.plan[head].role, FusionRole::Head);
  EXPECT_EQ(p.plan[head].partner, head + 1);
  EXPECT_EQ(p.plan[head + 1].role, FusionRole::Link);
  EXPECT_EQ(p.plan[head + 1].partner, head);
  EXPECT_EQ(p.plan[head + 2].role, FusionRole::Tail);
  EXPECT_EQ(p.plan[head + 2].partner, head + 1);
  for (uint32_t i = 0; i < p.plan.size(); ++i)
    if (i < head || i > head + 2) {
      EXPECT_EQ(p.plan[i].role, FusionRole::None) << "kernel " << i;
    }
  EXPECT_TRUE(p.refusals.empty()) << p.refusals.front();
}

/// The bias add at `head` refused for `why`; the apply_mask and add after
/// it still a pair.
void expectBiasRefusedMaskPaired(const Planned &p, uint32_t head,
                                 const std::string &why) {
  EXPECT_EQ(p.plan[head].role, FusionRole::None);
  EXPECT_EQ(p.plan[head + 1].role, FusionRole::Head);
  EXPECT_EQ(p.plan[head + 2].role, FusionRole::Tail);
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_NE(p.refusals[0].find("(add) + next: "), std::string::npos)
      << p.refusals[0];
  const std::string &said = p.refusals[0];
  EXPECT_TRUE(said.size() >= why.size() &&
              said.compare(said.size() - why.size(), why.size(), why) == 0)
      << "refusal: " << said << "\nexpected it to end: " << why;
}

TEST(FusionPlanTest, BiasDropoutAndResidualAddAreFused) {
  for (bool residualLhs : {false, true}) {
    BiasGroup g;
    g.residualLhs = residualLhs;
    fb::ExecutableT exe = g.build();
    expectBiasGroup(planned(exe), g.head);
  }
  // bf16 activations (x, y and d), an f32 residual stream.
  BiasGroup halves;
  halves.xType = halves.yType = DT::BF16;
  fb::ExecutableT exe = halves.build();
  expectBiasGroup(planned(exe), halves.head);
  // z in the very bytes of x (dead at the bias add): fused.
  BiasGroup inPlace;
  exe = inPlace.build();
  relocate(exe, {{inPlace.x, 0}, {inPlace.z, 0}}, 256);
  expectBiasGroup(planned(exe), inPlace.head);
}

TEST(FusionPlanTest, BiasAndResidualAddAreFusedWithoutDropout) {
  for (bool residualLhs : {false, true}) {
    BiasGroup g;
    g.dropout = false;
    g.residualLhs = residualLhs;
    fb::ExecutableT exe = g.build();
    expectFused(planned(exe), g.head, g.head + 1);
  }
}

TEST(FusionPlanTest, BiasGroupRefusals) {
  // y read again: the bias add runs alone, the mask and its add fuse.
  BiasGroup readTwice;
  readTwice.readTwice = true;
  fb::ExecutableT exe = readTwice.build();
  expectBiasRefusedMaskPaired(planned(exe), readTwice.head,
                              "its result is read by another kernel, bound "
                              "or pooled");
  // z half a row into x, or over the bias.
  BiasGroup shifted;
  exe = shifted.build();
  relocate(exe, {{shifted.x, 0}, {shifted.z, 64}}, 256);
  expectBiasRefusedMaskPaired(planned(exe), shifted.head,
                              "overlaps the biased input");
  BiasGroup overBias;
  overBias.computedBias = true;
  exe = overBias.build();
  relocate(exe, {{overBias.bias, 0}, {overBias.z, 0}}, 256);
  expectBiasRefusedMaskPaired(planned(exe), overBias.head, "overlaps the bias");
  // The bias add in a function of its own.
  BiasGroup split;
  exe = split.build();
  runByActions(exe, {{"bias", 0, 3}, {"branch", 3, 2}});
  expectBiasRefusedMaskPaired(planned(exe), split.head,
                              "the next kernel is in another function");
  // The mask's add broadcasts: refused by the pair's own rule, nothing
  // fused.
  ExecutableBuilder b;
  uint32_t p = b.param("p", DT::F32, {4, 8}), bias = b.param("b", DT::F32, {8});
  uint32_t r = b.param("r", DT::F32, {8});
  uint32_t x = b.buffer(DT::F32, {4, 8}), m = b.buffer(DT::U8, {4, 8});
  uint32_t y = b.buffer(DT::F32, {4, 8}), d = b.buffer(DT::F32, {4, 8});
  uint32_t z = b.buffer(DT::F32, {4, 8});
  b.kernel(Op::Gelu, {p}, {x});
  b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});
  b.kernel(Op::Add, {x, bias}, {y});
  b.kernel(Op::ApplyMask, {y, m}, {d}, {}, {0.1});
  b.kernel(Op::Add, {d, r}, {z});
  b.output("z", z);
  b.exe.seed = 7;
  Planned broadcast = planned(b.finish());
  for (const FusionStep &step : broadcast.plan)
    EXPECT_EQ(step.role, FusionRole::None);
  ASSERT_EQ(broadcast.refusals.size(), 2u);
  EXPECT_NE(broadcast.refusals[0].find("(add) + next: the add broadcasts"),
            std::string::npos)
      << broadcast.refusals[0];
  EXPECT_NE(broadcast.refusals[1].find("(apply_mask): the add broadcasts"),
            std::string::npos)
      << broadcast.refusals[1];
}

/// The members from `head` on (`count` of them) are one group, in order.
void expectChain(const Planned &p, uint32_t head, uint32_t count) {
  ASSERT_GE(p.plan.size(), head + count);
  for (uint32_t i = 0; i < count; ++i) {
    FusionRole role = i == 0           ? FusionRole::Head
                      : i + 1 == count ? FusionRole::Tail
                                       : FusionRole::Link;
    EXPECT_EQ(p.plan[head + i].role, role) << "member " << i;
    EXPECT_EQ(p.plan[head + i].partner, i == 0 ? head + 1 : head + i - 1)
        << "member " << i;
  }
  for (uint32_t i = 0; i < p.plan.size(); ++i)
    if (i < head || i >= head + count) {
      EXPECT_EQ(p.plan[i].role, FusionRole::None) << "kernel " << i;
    }
}

TEST(FusionPlanTest, NormBackwardAddAndTheBranchMaskAreFused) {
  NormBackwardGroup masked;
  masked.masked = true;
  forEachNormForm(masked, [](NormBackwardGroup &g) {
    Planned p = planned(g.build());
    expectChain(p, g.head, 4);
    EXPECT_TRUE(p.refusals.empty()) << p.refusals.front();
  });
  // No add: the two gradients and the mask of dX (the add said refused).
  NormBackwardGroup noAdd;
  noAdd.noAdd = noAdd.masked = true;
  fb::ExecutableT exe = noAdd.build();
  Planned p = planned(exe);
  expectChain(p, noAdd.head, 3);
  ASSERT_EQ(p.refusals.size(), 1u);
  EXPECT_NE(p.refusals[0].find("+ add: the next kernel is not an add"),
            std::string::npos)
      << p.refusals[0];
  // The parameter gradient later: the input gradient, the add, the mask.
  NormBackwardGroup alone;
  alone.paramGradLast = alone.masked = true;
  exe = alone.build();
  Planned q = planned(exe);
  expectChain(q, alone.head, 3);
  // d in the very bytes of dY (each element written by the thread that
  // read it): fused.
  NormBackwardGroup overDy;
  overDy.masked = true;
  exe = overDy.build();
  relocate(exe, {{overDy.dY, 0}, {overDy.d, 0}}, 1024);
  expectChain(planned(exe), overDy.head, 4);
}

TEST(FusionPlanTest, NormBackwardMaskRefusals) {
  // d half a row into dY: the group of three, the mask apart, said.
  NormBackwardGroup shifted;
  shifted.masked = true;
  fb::ExecutableT exe = shifted.build();
  relocate(exe, {{shifted.dY, 0}, {shifted.d, 48}}, 1024);
  Planned p = planned(exe);
  expectChain(p, shifted.head, 3);
  EXPECT_EQ(p.plan[shifted.head + 3].role, FusionRole::None);
  // (Then the apply_mask as the dropout + add pair's head: no add follows.)
  ASSERT_EQ(p.refusals.size(), 2u);
  EXPECT_NE(p.refusals[0].find("(add) + apply_mask: the mask's result "
                               "overlaps dY, x or the residual"),
            std::string::npos)
      << p.refusals[0];
  // The mask in another function: the same.
  NormBackwardGroup split;
  split.masked = true;
  exe = split.build();
  runByActions(exe, {{"norm", 0, split.head + 3}, {"mask", split.head + 3, 1}});
  Planned q = planned(exe);
  expectChain(q, split.head, 3);
  ASSERT_EQ(q.refusals.size(), 2u);
  EXPECT_NE(q.refusals[0].find("the apply_mask is in another function"),
            std::string::npos)
      << q.refusals[0];
}

/// A forward residual add group and the norm of its result: [add(x, bias)
/// -> y] [apply_mask -> d] add(., r) -> z, then layer_norm(z, w, nb) (or
/// rms_norm(z, w)) -> out; z and out outputs (the residual stream is read
/// again).
struct ForwardNormGroup {
  bool bias = false, dropout = true, rms = false, residualLhs = false;
  DT xType = DT::F32, zType = DT::F32, outType = DT::F32;
  uint32_t x = 0, biasParam = 0, m = 0, y = 0, d = 0, r = 0, z = 0, w = 0;
  uint32_t out = 0;
  /// The group's first kernel; `count` members (the norm last).
  uint32_t head = 0, count = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    std::vector<int64_t> shape{2, 3, 8};
    uint32_t p = b.param("p", DT::F32, shape);
    biasParam = b.param("bias", DT::F32, {8});
    r = b.param("r", DT::F32, shape);
    w = b.param("w", DT::F32, {8});
    uint32_t nb = b.param("nb", DT::F32, {8});
    x = b.buffer(xType, shape);
    m = b.buffer(DT::U8, shape);
    y = b.buffer(xType, shape);
    d = b.buffer(xType, shape);
    z = b.buffer(zType, shape);
    out = b.buffer(outType, shape);
    b.kernel(Op::Gelu, {p}, {x});
    if (dropout)
      b.kernel(Op::DropoutMask, {}, {m}, {1}, {0.1});
    head = static_cast<uint32_t>(b.exe.kernels.size());
    uint32_t branch = x;
    if (bias) {
      b.kernel(Op::Add, {x, biasParam}, {y});
      branch = y;
    }
    if (dropout) {
      b.kernel(Op::ApplyMask, {branch, m}, {d}, {}, {0.1});
      branch = d;
    }
    if (residualLhs)
      b.kernel(Op::Add, {r, branch}, {z});
    else
      b.kernel(Op::Add, {branch, r}, {z});
    if (rms)
      b.kernel(Op::RmsNorm, {z, w}, {out}, {}, {1e-5});
    else
      b.kernel(Op::LayerNorm, {z, w, nb}, {out}, {}, {1e-5});
    count = static_cast<uint32_t>(b.exe.kernels.size()) - head;
    b.output("z", z);
    b.output("out", out);
    b.exe.seed = 7;
    return b.finish();
  }
};

/// `check` on each residual add group form (dropout + add, bias + dropout
/// + add, bias + add, an add alone), norm (layer, rms) and add operand
/// order, the group given so, its other options as `base` has them.
template <typename Check>
void forEachForwardNormForm(const ForwardNormGroup &base, Check check) {
  for (auto [bias, dropout] : {std::pair{false, true}, std::pair{true, true},
                               std::pair{true, false}, std::pair{false, false}})
    for (bool rms : {false, true})
      for (bool residualLhs : {false, true}) {
        SCOPED_TRACE(std::string(bias ? "bias + " : "") +
                     (dropout ? "dropout + " : "") + "add + " +
                     (rms ? "rms_norm" : "layer_norm") +
                     (residualLhs ? ", the residual the lhs" : ""));
        ForwardNormGroup g = base;
        g.bias = bias;
        g.dropout = dropout;
        g.rms = rms;
        g.residualLhs = residualLhs;
        check(g);
      }
}

TEST(FusionPlanTest, ResidualAddAndTheNextNormAreFused) {
  forEachForwardNormForm({}, [](ForwardNormGroup &g) {
    fb::ExecutableT exe = g.build();
    Planned p = planned(exe);
    expectChain(p, g.head, g.count);
    EXPECT_TRUE(p.refusals.empty()) << p.refusals.front();
  });
  // bf16 activations and norm output, an f32 residual stream.
  ForwardNormGroup halves;
  halves.xType = halves.outType = DT::BF16;
  forEachForwardNormForm(halves, [](ForwardNormGroup &g) {
    fb::ExecutableT exe = g.build();
    expectChain(planned(exe), g.head, g.count);
  });
  // The norm's result on the very bytes of the branch x (each element's
  // out written by the thread that read x there): fused.
  forEachForwardNormForm({}, [](ForwardNormGroup &g) {
    fb::ExecutableT exe = g.build();
    relocate(exe, {{g.x, 0}, {g.out, 0}}, 256);
    expectChain(planned(exe), g.head, g.count);
  });
}

/// The group of `g` without its norm (refused for `why`, said as
/// "kernel K (add) + <norm>: why"); an add alone then runs alone.
void expectNormRefused(const Planned &p, const ForwardNormGroup &g,
                       const std::string &why) {
  uint32_t members = g.count - 1;
  std::string said = std::string("(add) + ") +
                     (g.rms ? "rms_norm" : "layer_norm") + ": " + why;
  if (members == 1)
    return expectRefused(p, said);
  expectChain(p, g.head, members);
  EXPECT_EQ(p.plan[g.head + members].role, FusionRole::None);
  expectOneRefusal(p, said);
}

TEST(FusionPlanTest, ResidualAddAndTheNextNormRefusals) {
  // The norm's result half a row into x. (Over z the loader refuses it:
  // a norm's result never overlaps its input.)
  forEachForwardNormForm({}, [](ForwardNormGroup &g) {
    fb::ExecutableT exe = g.build();
    relocate(exe, {{g.x, 0}, {g.out, 16}}, 512);
    expectNormRefused(planned(exe), g,
                      "the norm's result overlaps a tensor the group reads");
  });
  // The norm in a function of its own.
  forEachForwardNormForm({}, [](ForwardNormGroup &g) {
    fb::ExecutableT exe = g.build();
    uint32_t norm = g.head + g.count - 1;
    runByActions(exe, {{"branch", 0, norm}, {"norm", norm, 1}});
    expectNormRefused(planned(exe), g, "the norm is in another function");
  });
  // An add alone that broadcasts (the embedding's positions): nothing
  // fused, said as the add's.
  ExecutableBuilder b;
  uint32_t p = b.param("p", DT::F32, {4, 8}),
           pos = b.param("pos", DT::F32, {8});
  uint32_t w = b.param("w", DT::F32, {8});
  uint32_t x = b.buffer(DT::F32, {4, 8}), z = b.buffer(DT::F32, {4, 8});
  uint32_t out = b.buffer(DT::F32, {4, 8});
  b.kernel(Op::Gelu, {p}, {x});
  b.kernel(Op::Add, {x, pos}, {z});
  b.kernel(Op::RmsNorm, {z, w}, {out}, {}, {1e-5});
  b.output("z", z);
  b.output("out", out);
  Planned broadcast = planned(b.finish());
  for (const FusionStep &step : broadcast.plan)
    EXPECT_EQ(step.role, FusionRole::None);
  ASSERT_EQ(broadcast.refusals.size(), 1u);
  EXPECT_NE(broadcast.refusals[0].find("(add) + rms_norm: the add broadcasts"),
            std::string::npos)
      << broadcast.refusals[0];
}

/// Three params' AdamW updates (one batch) and the gradients' norm after
/// them: sum_squares(g0, g1[, g2 or another tensor]).
struct UpdatesAndNorm {
  /// The norm's last operand: 0 g2, 1 a gradient no update reads, 2 none.
  int last = 0;
  /// A gelu between the updates and the norm.
  bool apart = false;
  /// The norm before the updates (clipping).
  bool before = false;
  /// g1 twice in the norm.
  bool twice = false;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    std::vector<uint32_t> params, grads;
    for (int i = 0; i < 3; ++i) {
      params.push_back(b.param("p" + std::to_string(i), DT::F32, {4, 2 + i}));
      grads.push_back(b.buffer(DT::F32, {4, 2 + i}));
    }
    uint32_t step = b.input("step", {}, 0);
    uint32_t lr = b.buffer(DT::F32, {}), norm = b.buffer(DT::F32, {});
    uint32_t other = b.buffer(DT::F32, {4, 3}), g = b.buffer(DT::F32, {4, 2});
    for (int i = 0; i < 3; ++i)
      b.kernel(Op::Gelu, {params[i]}, {grads[i]}, {}, {}, 1);
    b.kernel(Op::Gelu, {params[1]}, {other}, {}, {}, 1);
    b.kernel(Op::LrSchedule, {step}, {lr}, {0, 0}, {1e-3, 0.0});
    std::vector<uint32_t> squared = {grads[0], grads[1]};
    if (twice)
      squared.push_back(grads[1]);
    if (last == 0)
      squared.push_back(grads[2]);
    else if (last == 1)
      squared.push_back(other);
    if (before)
      b.kernel(Op::SumSquares, squared, {norm});
    for (int i = 0; i < 3; ++i) {
      uint32_t m = b.state("exp_avg", i), v = b.state("exp_avg_sq", i);
      b.kernel(Op::AdamWUpdate, {params[i], grads[i], m, v, lr, step},
               {params[i], m, v}, {}, {0.9, 0.999, 1e-8, 0.01});
    }
    if (apart)
      b.kernel(Op::Gelu, {params[0]}, {g}, {}, {}, 1);
    if (!before)
      b.kernel(Op::SumSquares, squared, {norm});
    b.output("grad_norm", norm);
    return b.finish();
  }
};

/// The batch's sum_squares and each member's operand there, or nullopt.
std::optional<SquaresInUpdates> squaresOf(const fb::ExecutableT &exe) {
  Planned p;
  planOf(exe, p);
  std::vector<std::vector<uint32_t>> batches = planOptimizerBatches(p.program);
  EXPECT_EQ(batches.size(), 1u);
  SquaresInUpdates squares;
  if (batches.empty() || !squaresAfterBatch(p.program, batches[0], squares))
    return std::nullopt;
  return squares;
}

TEST(FusionPlanTest, GradientNormSummedByTheUpdates) {
  // g0, g1, g2: members 0, 1, 2 give operands 0, 1, 2.
  std::optional<SquaresInUpdates> all = squaresOf(UpdatesAndNorm().build());
  ASSERT_TRUE(all);
  EXPECT_EQ(all->operandOfMember, (std::vector<int32_t>{0, 1, 2}));
  // Two of the three gradients: the third update sums nothing.
  UpdatesAndNorm two;
  two.last = 2;
  std::optional<SquaresInUpdates> some = squaresOf(two.build());
  ASSERT_TRUE(some);
  EXPECT_EQ(some->operandOfMember, (std::vector<int32_t>{0, 1, -1}));
}

TEST(FusionPlanTest, GradientNormSummedByTheUpdatesRefusals) {
  // An operand no update reads, a kernel between, the norm before the
  // updates (clipping), an operand twice: the sum_squares sums alone.
  UpdatesAndNorm other, apart, before, twice;
  other.last = 1;
  apart.apart = true;
  before.before = true;
  twice.twice = true;
  for (UpdatesAndNorm *c : {&other, &apart, &before, &twice})
    EXPECT_FALSE(squaresOf(c->build()));
}

/// SwiGLU's pairs: gelu(p) -> g [6, 24], gelu(q) -> u, gelu(r) -> d;
/// forward: silu(g)
/// -> s, mul(u, s) -> h (s an output: the backward reads it); backward
/// (`backward`): mul(d, u) -> ds, silu_grad(ds, g) -> dg. The options
/// break one rule at a time.
struct SwigluPair {
  bool backward = false;
  /// s (the forward) is read by no other kernel and bound to nothing.
  bool headUnread = false;
  /// ds (the backward) is an output too.
  bool headOutput = false;
  /// The mul's other operand is [24], broadcast over [6, 24].
  bool broadcast = false;
  /// The mul reads s as its lhs.
  bool headIsLhs = false;
  /// g is bf16, the storage of the backward's result.
  bool gateBf16 = false;
  uint32_t g = 0, u = 0, d = 0, s = 0, out = 0;
  /// The pair's first kernel.
  uint32_t head = 0;

  fb::ExecutableT build() {
    ExecutableBuilder b;
    uint32_t p = b.param("p", DT::F32, {6, 24});
    uint32_t q = b.param("q", DT::F32,
                         broadcast ? std::vector<int64_t>{24}
                                   : std::vector<int64_t>{6, 24});
    uint32_t r = b.param("r", DT::F32, {6, 24});
    g = b.buffer(gateBf16 ? DT::BF16 : DT::F32, {6, 24});
    u = b.buffer(DT::F32, broadcast ? std::vector<int64_t>{24}
                                    : std::vector<int64_t>{6, 24});
    d = b.buffer(DT::F32, {6, 24});
    s = b.buffer(DT::BF16, {6, 24});
    out = b.buffer(DT::BF16, {6, 24});
    b.kernel(Op::Gelu, {p}, {g});
    b.kernel(Op::Gelu, {q}, {u});
    b.kernel(Op::Gelu, {r}, {d});
    head = static_cast<uint32_t>(b.exe.kernels.size());
    if (!backward) {
      b.kernel(Op::Silu, {g}, {s});
      if (headIsLhs)
        b.kernel(Op::Mul, {s, u}, {out});
      else
        b.kernel(Op::Mul, {u, s}, {out});
      if (!headUnread)
        b.output("s", s);
    } else {
      b.kernel(Op::Mul, {d, u}, {s});
      b.kernel(Op::SiluGrad, {s, g}, {out});
      if (headOutput)
        b.output("ds", s);
    }
    b.output("out", out);
    return b.finish();
  }
};

TEST(FusionPlanTest, SwigluPairsAreFused) {
  // The forward (either operand order; the silu's output written, as the
  // backward reads it, or not where nothing does) and the backward (the
  // product written only where it is read or bound).
  for (bool backward : {false, true})
    for (bool headIsLhs : {false, true})
      for (bool unread : {false, true}) {
        if (backward && headIsLhs)
          continue;
        SwigluPair pair;
        pair.backward = backward;
        pair.headIsLhs = headIsLhs;
        pair.headUnread = unread;
        pair.headOutput = backward && !unread;
        Planned p;
        planOf(pair.build(), p);
        if (HasFatalFailure())
          return;
        expectFused(p, pair.head, pair.head + 1);
        EXPECT_EQ(p.plan[pair.head + 1].writesHead, !unread)
            << "backward " << backward << " lhs " << headIsLhs;
      }
  // The result on the very bytes of an operand (the gate, dead after it).
  SwigluPair overGate;
  overGate.backward = true;
  overGate.gateBf16 = true;
  fb::ExecutableT exe = overGate.build();
  relocate(exe, {{overGate.g, 0}, {overGate.out, 0}}, 1024);
  Planned q;
  planOf(exe, q);
  if (HasFatalFailure())
    return;
  expectFused(q, overGate.head, overGate.head + 1);
}

TEST(FusionPlanTest, SwigluPairsRefusals) {
  SwigluPair broadcast;
  broadcast.broadcast = true;
  broadcast.headIsLhs = true;
  expectRefused(broadcast, "a mul broadcasts");
  // The result over half of an operand (the gate, dead after the silu).
  // (The silu's output, where written, is live at the second kernel: a
  // valid plan puts neither result over it nor it over an operand.)
  SwigluPair half;
  half.build();
  expectRefusedRelocated(half, {{half.g, 0}, {half.out, 96}},
                         "the second kernel's result overlaps an operand");
  // In two functions of an action list.
  SwigluPair split;
  split.backward = true;
  fb::ExecutableT exe = split.build();
  runByActions(exe, {{"operands", 0, 3}, {"mul", 3, 1}, {"silu_grad", 4, 1}});
  Planned p;
  planOf(exe, p);
  expectRefused(p, "the second kernel is in another function");
}

} // namespace
