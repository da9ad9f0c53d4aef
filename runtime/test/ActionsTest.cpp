//===- ActionsTest.cpp - functions, pools and action lists ----------------===//
//
// Executables whose stages run action lists (Executable.stage_actions) over
// functions compiled once: the training step of ActionExecutables.h with
// dropout as actions against its unrolled twin (loss, gradients, params and
// state the same, the executable growing with the microbatches by its
// actions alone), the measured peak over (action, kernel) time with a
// pooled buffer's slots, inputs pooled by microbatch (dp=2 blocks), the
// loader's refusals, and the interpreter's messages. The two-stage run on
// MPI ranks is in PipelineCheck.cpp.
//
//===----------------------------------------------------------------------===//

#include "ActionExecutables.h"
#include "ForwardingDevice.h"
#include "SeededRun.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Random.h"
#include "tpcrt/Weights.h"

#include "gtest/gtest.h"

#include <climits>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

using Op = fb::OpCode;

Status check(const fb::ExecutableT &exe) {
  std::vector<uint8_t> payload = pack(exe);
  return checkExecutable(*fb::GetExecutable(payload.data()));
}

void expectRefused(fb::ExecutableT exe,
                   const std::function<void(fb::ExecutableT &)> &mutate,
                   const std::string &expected) {
  mutate(exe);
  Status s = check(exe);
  ASSERT_FALSE(s) << "accepted; expected: " << expected;
  EXPECT_NE(s.message().find(expected), std::string::npos)
      << "message: " << s.message() << "\nexpected: " << expected;
}

/// A seeded run (labels 1 and 7 ignored) that reads buffers back.
struct Runner : SeededRun {
  explicit Runner(const fb::ExecutableT &exe,
                  std::unique_ptr<Device> device = nullptr)
      : SeededRun(exe, {1, 7}, std::move(device)) {}
  std::vector<uint8_t> bytes(uint32_t buffer) {
    std::vector<uint8_t> out(program().buffers[buffer].bytes);
    Status s = interpreter.readBuffer(buffer, out.data(), out.size());
    EXPECT_TRUE(s.isOk()) << s.message();
    return out;
  }
};

/// The values named like a checkpoint's and the outputs and gradients.
std::map<std::string, uint32_t> namedValues(const Program &program) {
  std::map<std::string, uint32_t> values;
  for (const ParamRef &param : program.params)
    values[param.hfName] = param.buffer;
  for (const StateRef &state : program.state)
    values[program.params[state.param].hfName + "." + state.name] =
        state.buffer;
  for (const BindingRef &output : program.outputs)
    values["output " + output.name] = output.buffer;
  for (const BindingRef &grad : program.grads)
    values["grad " + grad.name] = grad.buffer;
  return values;
}

/// The same bytes, an f32 +0 and -0 taken as equal (an accumulator that
/// starts at 0 turns a first term of -0 into +0); describes the first
/// difference.
std::string difference(const std::vector<uint8_t> &got,
                       const std::vector<uint8_t> &want) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " bytes, expected " +
           std::to_string(want.size());
  for (size_t i = 0; i + 4 <= got.size(); i += 4) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    if (g == w || ((g | w) & 0x7fffffffu) == 0)
      continue;
    float gf, wf;
    std::memcpy(&gf, &g, 4);
    std::memcpy(&wf, &w, 4);
    return "float " + std::to_string(i / 4) + " is " + std::to_string(gf) +
           ", expected " + std::to_string(wf);
  }
  return "";
}

/// Runs both forms of the one-stage step for `steps` steps and compares
/// every value after each.
void expectSameSteps(const ActionModelOptions &options, int steps) {
  ActionModelOptions unrolledOptions = options;
  unrolledOptions.actions = false;
  Runner actions(actionModel(options)), unrolled(actionModel(unrolledOptions));
  ASSERT_TRUE(actions.program().hasActions());
  ASSERT_FALSE(unrolled.program().hasActions());
  std::map<std::string, uint32_t> mine = namedValues(actions.program()),
                                  theirs = namedValues(unrolled.program());
  ASSERT_EQ(mine.size(), theirs.size());
  int signedZeros = 0;
  for (int step = 1; step <= steps; ++step) {
    Status s = actions.step();
    ASSERT_TRUE(s) << s.message();
    s = unrolled.step();
    ASSERT_TRUE(s) << s.message();
    for (const auto &[name, buffer] : mine) {
      std::vector<uint8_t> got = actions.bytes(buffer),
                           want = unrolled.bytes(theirs.at(name));
      EXPECT_EQ(difference(got, want), "") << "step " << step << ": " << name;
      signedZeros += got != want;
    }
  }
  // 4 params, 4 states, 3 outputs, 4 gradients.
  EXPECT_EQ(mine.size(), 15u);
  EXPECT_EQ(signedZeros, 0) << "values that differ in the sign of a zero";
  // Evaluation runs the loss's runs of every microbatch.
  ASSERT_TRUE(actions.interpreter.evaluate());
  ASSERT_TRUE(unrolled.interpreter.evaluate());
  uint32_t loss = actions.program().findOutput("loss")->buffer;
  EXPECT_EQ(difference(actions.bytes(loss),
                       unrolled.bytes(
                           unrolled.program().findOutput("loss")->buffer)),
            "");
}

TEST(ActionsTest, OneStageStepEqualsItsUnrolledTwin) {
  ActionModelOptions options;
  options.microbatches = 3;
  expectSameSteps(options, 3);
  options.dropout = 0.0;
  expectSameSteps(options, 2);
}

/// tpc-compile numbers an action's slot by its microbatch: the stash pool
/// of 2 slots takes slots 0, 1, 2, 3 as 0, 1, 0, 1, and the step is the
/// same as with slots numbered microbatch % 2.
TEST(ActionsTest, SlotsNumberedByMicrobatchWrapInTheStashPool) {
  ActionModelOptions options;
  options.microbatches = 4;
  options.slotsAreMicrobatches = true;
  fb::ExecutableT exe = actionModel(options);
  uint32_t most = 0;
  for (const fb::Action &a : exe.stage_actions[0]->actions)
    most = std::max(most, a.slot());
  EXPECT_EQ(most, 3u);
  expectSameSteps(options, 2);
  // Two stages, started transfers: the loader takes the wrapped slots.
  options.stages = 2;
  options.startedTransfers = true;
  Status s = check(actionModel(options));
  EXPECT_TRUE(s) << s.message();
}

/// The comparison sees the microbatches' dropout streams: the unrolled twin
/// whose copies all draw from first index 0 differs, and so does a run
/// without dropout.
TEST(ActionsTest, TheComparisonSeesTheMicrobatchesStreams) {
  ActionModelOptions options;
  ActionModelOptions wrong = options;
  wrong.actions = false;
  wrong.sameStream = true;
  ActionModelOptions plain = options;
  plain.dropout = 0.0;
  Runner actions(actionModel(options)), same(actionModel(wrong)),
      noDropout(actionModel(plain));
  ASSERT_TRUE(actions.step());
  ASSERT_TRUE(same.step());
  ASSERT_TRUE(noDropout.step());
  auto loss = [](Runner &r) {
    return r.bytes(r.program().findOutput("loss")->buffer);
  };
  EXPECT_NE(difference(loss(actions), loss(same)), "");
  EXPECT_NE(difference(loss(actions), loss(noDropout)), "");
  // Each microbatch's attention draws b * heads * s_q * s_k elements.
  for (const KernelCall &call : actions.program().calls) {
    if (call.op == Op::Attention) {
      EXPECT_EQ(call.streamElements, options.rows * options.seq * options.seq);
    } else if (call.op == Op::DropoutMask) {
      EXPECT_EQ(call.streamElements,
                options.rows * options.seq * options.hidden);
    }
  }
}

TEST(ActionsTest, AStepRunsTheActionsAndAllocatesNothing) {
  ActionModelOptions options;
  options.microbatches = 4;
  Runner runner(actionModel(options));
  const Program &program = runner.program();
  // start, 4 counts, scale, 4 F, 4 B, end.
  EXPECT_EQ(program.actions.size(), 15u);
  uint64_t runs = 0;
  for (const ActionRef &action : program.actions)
    runs += action.end - action.begin;
  EXPECT_EQ(program.numRuns, runs);
  EXPECT_GT(program.numRuns, program.calls.size());
  runner.interpreter.setTiming(true);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(runner.inputs.copyTo(runner.interpreter));
    long before = allocationCount();
    Status s = runner.interpreter.runStep();
    long allocations = allocationCount() - before;
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(allocations, 0) << "step " << step;
  }
  // One timing per run; a kernel's total is the sum of its runs.
  const std::vector<RunTiming> &runTimings = runner.interpreter.runTimings();
  ASSERT_EQ(runTimings.size(), program.numRuns);
  int64_t sum = 0, total = 0;
  uint32_t kernel = program.calls[program.actions[6].begin].index; // F's first
  for (const RunTiming &run : runTimings)
    if (run.kernel == kernel)
      sum += run.timing.durationNs;
  total = runner.interpreter.timings()[kernel].durationNs;
  EXPECT_EQ(sum, total);
  size_t run = 0;
  for (size_t a = 0; a < 7; ++a)
    run += program.actions[a].end - program.actions[a].begin;
  EXPECT_EQ(runTimings[run].action, 7u);
  EXPECT_EQ(runTimings[run].kernel,
            program.calls[program.actions[7].begin].index);
}

/// The CPU device with run marks as a queueing device has them: it counts
/// the synchronizes and the marks, and gives run i 1000 (i + 1) ns.
class MarkingDevice final : public test::ForwardingDevice {
public:
  explicit MarkingDevice(std::unique_ptr<Device> inner)
      : ForwardingDevice(std::move(inner)) {}
  const char *name() const override { return "marking-cpu"; }
  Status synchronize() override {
    ++synchronizes;
    return ForwardingDevice::synchronize();
  }
  bool markRuns(size_t runs) override {
    marked = runs;
    nextMark = 0;
    return true;
  }
  Status markRun(size_t run) override {
    // In order, each once.
    if (run != nextMark++)
      return Status::error("mark " + std::to_string(run) + " out of order");
    return Status::ok();
  }
  Status runDurations(std::vector<int64_t> &nanoseconds) override {
    nanoseconds.resize(marked);
    for (size_t run = 0; run < marked; ++run)
      nanoseconds[run] = 1000 * static_cast<int64_t>(run + 1);
    return Status::ok();
  }

  size_t synchronizes = 0, marked = 0, nextMark = 0;
};

TEST(ActionsTest, ADeviceWithRunMarksTimesTheStepWithoutWaitingPerKernel) {
  ActionModelOptions options;
  options.microbatches = 3;
  auto owned = std::make_unique<MarkingDevice>(createCpuDevice());
  MarkingDevice &device = *owned;
  Runner runner(actionModel(options), std::move(owned));
  const Program &program = runner.program();
  runner.interpreter.setTiming(true);
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(runner.inputs.copyTo(runner.interpreter));
    device.synchronizes = 0;
    long before = allocationCount();
    Status s = runner.interpreter.runStep();
    long allocations = allocationCount() - before;
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(allocations, 0) << "step " << step;
    // One synchronize for the step (the untimed step's), every run marked.
    EXPECT_EQ(device.synchronizes, 1u) << "step " << step;
    EXPECT_EQ(device.nextMark, program.numRuns);
  }
  EXPECT_TRUE(runner.interpreter.timedByDevice());
  // The device's durations, back to back; a kernel's total sums its runs.
  const std::vector<RunTiming> &runs = runner.interpreter.runTimings();
  ASSERT_EQ(runs.size(), program.numRuns);
  std::map<uint32_t, int64_t> totals;
  for (size_t run = 0; run < runs.size(); ++run) {
    EXPECT_EQ(runs[run].timing.durationNs, 1000 * int64_t(run + 1));
    if (run > 0) {
      EXPECT_EQ(runs[run].timing.startNs,
                runs[run - 1].timing.startNs + runs[run - 1].timing.durationNs);
    }
    totals[runs[run].kernel] += runs[run].timing.durationNs;
  }
  for (const auto &[kernel, total] : totals)
    EXPECT_EQ(runner.interpreter.timings()[kernel].durationNs, total)
        << "kernel " << kernel;
  EXPECT_LT(totals.size(), runs.size()); // some kernels ran several times

  // The CPU device has no marks: it is synchronized after each kernel.
  Runner plain(actionModel(options));
  plain.interpreter.setTiming(true);
  ASSERT_TRUE(plain.step());
  EXPECT_FALSE(plain.interpreter.timedByDevice());
}

/// Functions are compiled once: more microbatches add actions (12 bytes
/// each) and nothing else, where the unrolled step adds kernels.
TEST(ActionsTest, TheExecutableGrowsWithTheMicrobatchesByItsActionsAlone) {
  auto sizeOf = [](int64_t microbatches, bool actions, size_t *kernels,
                   size_t *numActions) {
    ActionModelOptions options;
    options.microbatches = microbatches;
    options.actions = actions;
    fb::ExecutableT exe = actionModel(options);
    EXPECT_TRUE(check(exe)) << check(exe).message();
    *kernels = exe.kernels.size();
    *numActions = 0;
    for (const auto &list : exe.stage_actions)
      *numActions += list->actions.size();
    return pack(exe).size();
  };
  size_t k3, k8, a3, a8, u3k, u8k, ua;
  size_t actions3 = sizeOf(3, true, &k3, &a3);
  size_t actions8 = sizeOf(8, true, &k8, &a8);
  size_t unrolled3 = sizeOf(3, false, &u3k, &ua);
  size_t unrolled8 = sizeOf(8, false, &u8k, &ua);
  EXPECT_EQ(k3, k8);
  EXPECT_EQ(a8 - a3, 3u * 5u);
  // The actions' bytes, give or take alignment padding.
  EXPECT_GT(actions8 - actions3 + 8, 12 * (a8 - a3));
  EXPECT_LT(actions8 - actions3, 12 * (a8 - a3) + 8);
  EXPECT_LT(actions8, unrolled8);
  EXPECT_GT(u8k, u3k + 5 * 20);
  EXPECT_GT(unrolled8 - unrolled3, 10 * (actions8 - actions3));
}

//===----------------------------------------------------------------------===//
// The peak over (action, kernel) time
//===----------------------------------------------------------------------===//

/// A hand-made step: function P writes a 256-byte pooled stash s (2 slots)
/// from param w, function C reads it into output y (y += s). Actions in
/// `order` ("P0 P1 C0 C1": both slots live at once), each with slot
/// microbatch % 2, or with `wrap` the microbatch itself (slot mb % 2 of s).
fb::ExecutableT stashSteps(const std::vector<std::pair<uint32_t, uint32_t>>
                               &actions /* function, microbatch */,
                           bool wrap = false) {
  ExecutableBuilder b;
  uint32_t w = b.param("w", fb::DType::F32, {64});
  uint32_t y = b.buffer(fb::DType::F32, {64});
  uint32_t s = b.buffer(fb::DType::F32, {64});
  b.kernel(Op::Zeros, {}, {y});                  // function 0: start
  b.kernel(Op::Gelu, {w}, {s}, {}, {}, 0);       // function 1: P
  b.kernel(Op::Add, {y, s}, {y});                // function 2: C
  b.output("y", y);
  fb::ExecutableT exe = b.finish();
  // y at 256 after w, s's slots at 512 and 768.
  exe.buffers[s]->offset = 512;
  exe.buffers[s]->pool = 0;
  auto pool = std::make_unique<fb::PoolT>();
  pool->slots = 2;
  pool->stride = 256;
  exe.pools.push_back(std::move(pool));
  exe.arena_bytes = 1024;
  exe.planned_peak_bytes = 1024;
  for (uint32_t f = 0; f < 3; ++f) {
    auto function = std::make_unique<fb::FunctionT>();
    function->name = f == 0 ? "start" : f == 1 ? "P" : "C";
    function->first_kernel = f;
    function->kernel_count = 1;
    exe.functions.push_back(std::move(function));
  }
  exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
  exe.stage_actions[0]->actions.emplace_back(0, 0, 0);
  for (auto [function, mb] : actions)
    exe.stage_actions[0]->actions.emplace_back(function, mb,
                                               wrap ? mb : mb % 2);
  return exe;
}

TEST(ActionsTest, ThePeakCountsEachSlotWhileItIsLive) {
  auto peakOf = [](const fb::ExecutableT &exe) -> uint64_t {
    std::vector<uint8_t> payload = pack(exe);
    const fb::Executable &root = *fb::GetExecutable(payload.data());
    Status s = checkExecutable(root);
    EXPECT_TRUE(s) << s.message();
    Program program;
    EXPECT_TRUE(decodeProgram(root, program));
    return program.peakBytes;
  };
  // w and y (256 each) always; the stash's slots while live.
  EXPECT_EQ(peakOf(stashSteps({{1, 0}, {1, 1}, {2, 0}, {2, 1}})), 1024u);
  EXPECT_EQ(peakOf(stashSteps({{1, 0}, {2, 0}, {1, 1}, {2, 1}})), 768u);
  // Three microbatches through two slots: slot 0 again after C0.
  EXPECT_EQ(peakOf(stashSteps({{1, 0}, {1, 1}, {2, 0}, {1, 2}, {2, 1},
                               {2, 2}})),
            1024u);
  // The runtime measures the same.
  Runner runner(stashSteps({{1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  ASSERT_TRUE(runner.step());
  EXPECT_EQ(runner.interpreter.peakBytes(), 1024u);
}

TEST(ActionsTest, AnActionSlotBeyondThePoolsSlotsWraps) {
  // Three microbatches through two slots, action slots 0, 1, 2: the same
  // step as with 0, 1, 0.
  const std::vector<std::pair<uint32_t, uint32_t>> order = {
      {1, 0}, {1, 1}, {2, 0}, {1, 2}, {2, 1}, {2, 2}};
  fb::ExecutableT wrapped = stashSteps(order, true);
  EXPECT_EQ(wrapped.stage_actions[0]->actions[4].slot(), 2u);
  Runner wraps(wrapped), plain(stashSteps(order));
  const Program &program = wraps.program();
  EXPECT_EQ(program.peakBytes, 1024u);
  EXPECT_EQ(program.peakBytes, plain.program().peakBytes);
  // Microbatch 2's P writes slot 0 (buffer 2's instance 0).
  const TensorRef &stash = program.buffers[2];
  EXPECT_EQ(stash.poolSlots, 2u);
  EXPECT_EQ(stash.slotOf(2, 2), 0u);
  EXPECT_EQ(stash.offsetAt(2, 2), 512u);
  const Program &other = plain.program();
  for (uint32_t i = 0; i < 2; ++i) {
    std::vector<Lifetime> got =
        program.intervalsOf(program.instanceBase[2] + i);
    std::vector<Lifetime> want = other.intervalsOf(other.instanceBase[2] + i);
    ASSERT_EQ(got.size(), want.size()) << "slot " << i;
    for (size_t v = 0; v < got.size(); ++v) {
      EXPECT_EQ(got[v].first, want[v].first) << "slot " << i;
      EXPECT_EQ(got[v].last, want[v].last) << "slot " << i;
    }
  }
  ASSERT_TRUE(wraps.step());
  ASSERT_TRUE(plain.step());
  EXPECT_EQ(wraps.interpreter.peakBytes(), 1024u);
  uint32_t y = program.findOutput("y")->buffer;
  std::vector<uint8_t> got = wraps.bytes(y), want = plain.bytes(y);
  EXPECT_EQ(got, want);
  // y = 3 gelu(w), not zero.
  EXPECT_NE(got, std::vector<uint8_t>(got.size(), 0));
}

TEST(ActionsTest, AWrappedSlotStillHeldIsRefused) {
  // Microbatch 2's slot 2 is slot 0 of the pool, which microbatch 0 still
  // needs.
  expectRefused(
      stashSteps({{1, 0}, {1, 2}, {2, 0}, {2, 2}}, true),
      [](fb::ExecutableT &) {},
      "stage 0: action 2 (function 1 ('P'), microbatch 2, slot 2): "
      "slot 0 of pool 0 still holds microbatch 0, whose last action "
      "is action 3 (function 2 ('C'), microbatch 0, slot 0) (a slot "
      "is reused only after its microbatch's last action)");
  // Slot 3 is slot 1, which microbatch 1 holds until its C.
  expectRefused(
      stashSteps({{1, 0}, {1, 1}, {2, 0}, {1, 3}, {2, 1}, {2, 3}}, true),
      [](fb::ExecutableT &) {},
      "stage 0: action 4 (function 1 ('P'), microbatch 3, slot 3): "
      "slot 1 of pool 0 still holds microbatch 1, whose last action "
      "is action 5 (function 2 ('C'), microbatch 1, slot 1) (a slot "
      "is reused only after its microbatch's last action)");
}

TEST(ActionsTest, ASlotReadBeforeItsMicrobatchWroteIt) {
  // C1 reads slot 1, which no action wrote.
  expectRefused(stashSteps({{1, 0}, {2, 0}, {2, 1}}),
                [](fb::ExecutableT &) {},
                "action 3 (function 2 ('C'), microbatch 1, slot 1): kernel 2 "
                "(add): rhs (buffer 2, slot 1) is read before any kernel "
                "writes it");
  // Microbatch 2 takes slot 0 while microbatch 0 still needs it.
  expectRefused(stashSteps({{1, 0}, {1, 2}, {2, 0}, {2, 2}}),
                [](fb::ExecutableT &) {},
                "stage 0: action 2 (function 1 ('P'), microbatch 2, slot 0): "
                "slot 0 of pool 0 still holds microbatch 0, whose last action "
                "is action 3 (function 2 ('C'), microbatch 0, slot 0) (a slot "
                "is reused only after its microbatch's last action)");
}

//===----------------------------------------------------------------------===//
// Temporaries live once per run
//===----------------------------------------------------------------------===//

/// A step of `microbatches` runs of a function "microbatch" that adds a
/// dropped-out gelu(w) to the accumulator y, which a prologue zeroes:
///
///   0: zeros -> y                                   (prologue)
///   1: gelu(w) -> h                                 (microbatch)
///   2: dropout(h) -> d          (stream 1, rate 0.5)
///   3: dropout_mask -> m        (stream 2, rate 0.25)
///   4: apply_mask(d, m) -> g
///   5: add(y, g) -> y
///
/// h is dead after kernel 2 of each run, so the plan gives m (64 bytes) h's
/// bytes, as rt-plan-memory does planning one run of each function in file
/// order. Unrolled (`actions` false): the microbatch's kernels once per
/// microbatch, each copy with buffers of its own and the dropout kernels'
/// first index i * 64.
fb::ExecutableT reusedTemporaries(int64_t microbatches, bool actions) {
  ExecutableBuilder b;
  uint32_t w = b.param("w", fb::DType::F32, {64});
  uint32_t y = b.buffer(fb::DType::F32, {64});
  b.kernel(Op::Zeros, {}, {y});
  uint32_t h = 0, m = 0;
  for (int64_t i = 0; i < (actions ? 1 : microbatches); ++i) {
    h = b.buffer(fb::DType::F32, {64});
    uint32_t d = b.buffer(fb::DType::F32, {64});
    m = b.buffer(fb::DType::U8, {64});
    uint32_t g = b.buffer(fb::DType::F32, {64});
    b.kernel(Op::Gelu, {w}, {h});
    b.kernel(Op::Dropout, {h}, {d}, {1, i * 64}, {0.5});
    b.kernel(Op::DropoutMask, {}, {m}, {2, i * 64}, {0.25});
    b.kernel(Op::ApplyMask, {d, m}, {g}, {}, {0.25});
    b.kernel(Op::Add, {y, g}, {y});
  }
  b.output("y", y);
  fb::ExecutableT exe = b.finish();
  if (!actions)
    return exe;
  // w 0, y 256, h 512, d 768, m 1024, g 1088: m over h.
  exe.buffers[m]->offset = exe.buffers[h]->offset;
  // w and y, then at kernel 4 d, m and g: 256 + 256 + 256 + 64 + 256.
  exe.planned_peak_bytes = 1088;
  for (auto [name, first, count] :
       {std::make_tuple("prologue", 0u, 1u),
        std::make_tuple("microbatch", 1u, 5u)}) {
    auto function = std::make_unique<fb::FunctionT>();
    function->name = name;
    function->first_kernel = first;
    function->kernel_count = count;
    exe.functions.push_back(std::move(function));
  }
  exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
  exe.stage_actions[0]->actions.emplace_back(0, 0, 0);
  for (int64_t i = 0; i < microbatches; ++i)
    exe.stage_actions[0]->actions.emplace_back(1, static_cast<uint32_t>(i),
                                               0);
  return exe;
}

TEST(ActionsTest, ATemporaryIsLiveOncePerRun) {
  fb::ExecutableT exe = reusedTemporaries(4, true);
  ASSERT_TRUE(check(exe)) << check(exe).message();
  Runner actions(exe), unrolled(reusedTemporaries(4, false));
  const Program &program = actions.program();
  // h (buffer 2): one interval per run, [1, 2] of each run (5 kernels).
  auto intervals = [&](uint32_t buffer) {
    std::vector<std::pair<int64_t, int64_t>> list;
    for (const Lifetime &life :
         program.intervalsOf(program.instanceBase[buffer]))
      list.emplace_back(life.first, life.last);
    return list;
  };
  std::vector<std::pair<int64_t, int64_t>> h = intervals(2), y = intervals(1),
                                           w = intervals(0);
  EXPECT_EQ(h, (std::vector<std::pair<int64_t, int64_t>>{
                   {1, 2}, {6, 7}, {11, 12}, {16, 17}}));
  // The accumulator (zeroed, then added to in place, an output) and the
  // param: one interval each.
  EXPECT_EQ(y, (std::vector<std::pair<int64_t, int64_t>>{{0, 21}}));
  EXPECT_EQ(w, (std::vector<std::pair<int64_t, int64_t>>{
                   {Lifetime::kLoad, 21}}));
  EXPECT_EQ(program.instanceLifetimes[program.instanceBase[2]].first, 1);
  EXPECT_EQ(program.instanceLifetimes[program.instanceBase[2]].last, 17);
  // The replay's peak is the plan's (one run of each function).
  EXPECT_EQ(program.peakBytes, 1088u);
  EXPECT_EQ(program.plannedPeakBytes, 1088u);
  for (int step = 1; step <= 2; ++step) {
    ASSERT_TRUE(actions.step());
    ASSERT_TRUE(unrolled.step());
    std::vector<uint8_t> got = actions.bytes(1), want = unrolled.bytes(1);
    EXPECT_EQ(got, want) << "step " << step << ": " << difference(got, want);
  }
  EXPECT_EQ(actions.interpreter.peakBytes(), 1088u);
  // The microbatches' streams differ: y is not 4 times one run's.
  ASSERT_TRUE(actions.step());
  Runner one(reusedTemporaries(1, true));
  ASSERT_TRUE(one.step());
  std::vector<uint8_t> sum = actions.bytes(1), first = one.bytes(1);
  float a, b;
  bool same = true;
  for (size_t i = 0; i + 4 <= sum.size(); i += 4) {
    std::memcpy(&a, &sum[i], 4);
    std::memcpy(&b, &first[i], 4);
    same = same && a == 4 * b;
  }
  EXPECT_FALSE(same);
}

TEST(ActionsLoaderTest, TemporariesLiveAtOnceWithinARunShareNoBytes) {
  // m over d, which kernel 4 reads with it.
  expectRefused(reusedTemporaries(4, true),
                [](fb::ExecutableT &e) { e.buffers[4]->offset = 768; },
                "buffers 3 (bytes [768, +256)) and 4 (bytes [768, +64)) share "
                "arena bytes while both are live at action 1 (function 1 "
                "('microbatch'), microbatch 0, slot 0): kernel 3 "
                "(dropout_mask)");
  // A value the prologue writes and every run reads is live from the
  // prologue to the last run's read, between the runs too: a temporary of
  // the function after the read may not take its bytes (the plan must keep
  // it live to the end of the function).
  expectRefused(
      reusedTemporaries(4, true),
      [](fb::ExecutableT &e) {
        // p = gelu(w) in the prologue; the microbatch's gelu reads p.
        e.buffers.push_back(makeBuffer(1344, fb::DType::F32, {64}));
        e.arena_bytes = 1600;
        e.planned_peak_bytes = 1600;
        e.kernels.insert(e.kernels.begin() + 1, makeKernel(Op::Gelu, {0}, {6}));
        e.kernels[2]->operands = {6};
        e.functions[0]->kernel_count = 2;
        e.functions[1]->first_kernel = 2;
        // g over p: p is dead after kernel 2 in file order, but run 1
        // reads it again.
        e.buffers[5]->offset = 1344;
      },
      "buffers 6 (bytes [1344, +256)) and 5 (bytes [1344, +256)) share "
      "arena bytes while both are live at action 1 (function 1 "
      "('microbatch'), microbatch 0, slot 0): kernel 5 (apply_mask)");
}

TEST(ActionsLoaderTest, WithoutActionsABufferHasOneLifetime) {
  // Without actions a buffer written twice is one lifetime, from its first
  // write to its last read, as before (and as rt-plan-memory plans it): t
  // written by kernel 0, read by 1, written again by 2, read by 3; u
  // (written by 1, read by 2) may not take t's bytes.
  ExecutableBuilder b;
  uint32_t w = b.param("w", fb::DType::F32, {64});
  uint32_t t = b.buffer(fb::DType::F32, {64});
  uint32_t u = b.buffer(fb::DType::F32, {64});
  uint32_t v = b.buffer(fb::DType::F32, {64});
  b.kernel(Op::Gelu, {w}, {t});
  b.kernel(Op::Gelu, {t}, {u});
  b.kernel(Op::Gelu, {u}, {t});
  b.kernel(Op::Gelu, {t}, {v});
  b.output("v", v);
  fb::ExecutableT exe = b.finish();
  std::vector<uint8_t> payload = pack(exe);
  Program program;
  ASSERT_TRUE(decodeProgram(*fb::GetExecutable(payload.data()), program));
  ASSERT_EQ(program.instanceIntervals.size(), 4u);
  EXPECT_EQ(program.instanceIntervals[1].instance, t);
  EXPECT_EQ(program.instanceIntervals[1].life.first, 0);
  EXPECT_EQ(program.instanceIntervals[1].life.last, 3);
  // w, t, u at kernel 1 and 2; w, t, v at kernel 3 (v to the end).
  EXPECT_EQ(program.peakBytes, 768u);
  expectRefused(exe, [&](fb::ExecutableT &e) { e.buffers[u]->offset = 256; },
                "buffers 1 (bytes [256, +256)) and 2 (bytes [256, +256)) "
                "share arena bytes while both are live at kernel 1 (gelu)");
}

//===----------------------------------------------------------------------===//
// Inputs pooled by microbatch
//===----------------------------------------------------------------------===//

/// Input x, i64 [rows, 3] per microbatch in a by_microbatch pool of
/// `microbatches` slots (dp > 1: rows split over mesh axis "dp"), copied to
/// output-like buffers by one function run per microbatch.
fb::ExecutableT pooledInput(int64_t microbatches, int64_t dp, int64_t rows) {
  ExecutableBuilder b;
  if (dp > 1) {
    auto axis = std::make_unique<fb::MeshAxisT>();
    axis->name = "dp";
    axis->size = dp;
    b.exe.mesh.push_back(std::move(axis));
  }
  uint32_t x = b.input("x", {rows / dp, 3}, 1000);
  if (dp > 1) {
    b.exe.inputs.back()->splits.push_back(std::make_unique<fb::DimSplitT>());
    b.exe.inputs.back()->splits.back()->axes = {0};
    b.exe.inputs.back()->splits.push_back(std::make_unique<fb::DimSplitT>());
  }
  uint32_t count = b.buffer(fb::DType::I64, {});
  b.kernel(Op::CountTargets, {x}, {count}, {-100});
  b.output("count", count);
  fb::ExecutableT exe = b.finish();
  exe.buffers[x]->pool = 0;
  auto pool = std::make_unique<fb::PoolT>();
  pool->slots = static_cast<uint32_t>(microbatches);
  pool->stride = (exe.buffers[x]->size + 63) / 64 * 64;
  pool->by_microbatch = true;
  exe.buffers[x]->offset = exe.arena_bytes;
  exe.arena_bytes += pool->stride * pool->slots;
  exe.planned_peak_bytes = exe.arena_bytes;
  exe.pools.push_back(std::move(pool));
  auto function = std::make_unique<fb::FunctionT>();
  function->first_kernel = 0;
  function->kernel_count = 1;
  exe.functions.push_back(std::move(function));
  exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
  for (uint32_t i = 0; i < microbatches; ++i)
    exe.stage_actions[0]->actions.emplace_back(0, i, 0);
  return exe;
}

TEST(ActionsTest, SlotIHoldsMicrobatchI) {
  const int64_t M = 3, rows = 4;
  // The global tensor the inputs draw: [M * rows, 3].
  std::vector<int64_t> global(M * rows * 3);
  uint64_t key = namedStreamKey(7, "x");
  for (size_t i = 0; i < global.size(); ++i)
    global[i] = static_cast<int64_t>(uniformBelow(key, i, 1000));

  // One rank: through the interpreter, slot by slot.
  {
    fb::ExecutableT exe = pooledInput(M, 1, rows);
    std::vector<uint8_t> payload = pack(exe);
    const fb::Executable *root = fb::GetExecutable(payload.data());
    ASSERT_TRUE(checkExecutable(*root));
    Interpreter interpreter;
    ASSERT_TRUE(Interpreter::create(*root, createCpuDevice(), interpreter));
    const Program &program = interpreter.program();
    const BindingRef &x = program.inputs[0];
    EXPECT_EQ(program.globalShapeOf(x), (std::vector<int64_t>{M * rows, 3}));
    EXPECT_EQ(program.microbatchShapeOf(x), (std::vector<int64_t>{rows, 3}));
    EXPECT_EQ(program.microbatchesOf(x), 3u);
    HostInputs inputs;
    ASSERT_TRUE(syntheticInputs(7, program, inputs));
    ASSERT_TRUE(inputs.copyTo(interpreter));
    for (uint32_t slot = 0; slot < M; ++slot) {
      std::vector<int64_t> got(rows * 3);
      ASSERT_TRUE(interpreter.readBuffer(x.buffer, got.data(), rows * 3 * 8,
                                         slot));
      EXPECT_EQ(got, std::vector<int64_t>(global.begin() + slot * rows * 3,
                                          global.begin() +
                                              (slot + 1) * rows * 3))
          << "slot " << slot;
    }
    Status s = interpreter.readBuffer(x.buffer, global.data(), rows * 3 * 8, M);
    EXPECT_EQ(s.message(), "buffer 0 has no slot 3 (its pool 0 has 3)");
    s = interpreter.readBuffer(1, global.data(), 8, 1);
    EXPECT_EQ(s.message(), "buffer 1 has no slot 1 (it is not pooled)");
    ASSERT_TRUE(interpreter.runStep());
  }

  // dp = 2: rank r holds rows [r * 2, r * 2 + 2) of each microbatch.
  fb::ExecutableT exe = pooledInput(M, 2, rows);
  std::vector<uint8_t> payload = pack(exe);
  const fb::Executable *root = fb::GetExecutable(payload.data());
  ASSERT_TRUE(checkExecutable(*root));
  Program program;
  ASSERT_TRUE(decodeProgram(*root, program));
  for (int64_t rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(placeProgram(program, rank));
    EXPECT_EQ(program.globalShapeOf(program.inputs[0]),
              (std::vector<int64_t>{M * rows, 3}));
    HostInputs inputs;
    ASSERT_TRUE(syntheticInputs(7, program, inputs));
    ASSERT_EQ(inputs.entries.size(), 1u);
    const HostInputs::Entry &entry = inputs.entries[0];
    ASSERT_EQ(entry.bytes.size(), M * 2 * 3 * 8u);
    for (int64_t slot = 0; slot < M; ++slot) {
      std::vector<int64_t> got(2 * 3);
      std::memcpy(got.data(), entry.bytes.data() + slot * 2 * 3 * 8, 2 * 3 * 8);
      auto first = global.begin() + (slot * rows + rank * 2) * 3;
      EXPECT_EQ(got, std::vector<int64_t>(first, first + 2 * 3))
          << "rank " << rank << " slot " << slot;
    }
  }
}

//===----------------------------------------------------------------------===//
// The loader's refusals
//===----------------------------------------------------------------------===//

fb::ExecutableT model() { return actionModel(ActionModelOptions()); }

uint32_t pooledBuffer(const fb::ExecutableT &exe, bool byMicrobatch) {
  for (uint32_t b = 0; b < exe.buffers.size(); ++b)
    if (exe.buffers[b]->pool >= 0 &&
        exe.pools[exe.buffers[b]->pool]->by_microbatch == byMicrobatch)
      return b;
  ADD_FAILURE() << "no pooled buffer";
  return 0;
}

TEST(ActionsLoaderTest, ActionsFunctionsAndPoolsComeTogether) {
  ASSERT_TRUE(check(model())) << check(model()).message();
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.stage_actions.clear(); },
                "but no stage_actions to run them");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.stage_actions.clear();
                  e.functions.clear();
                },
                "the executable has 3 pools but no stage_actions (only "
                "actions address pool slots)");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.stage_actions.clear();
                  e.functions.clear();
                  e.pools.clear();
                },
                ": pool 0 but the executable has 0 pools (pools come with "
                "stage_actions)");
  expectRefused(model(), [](fb::ExecutableT &e) { e.functions.clear(); },
                "the executable has stage_actions but no functions");
  expectRefused(
      model(),
      [](fb::ExecutableT &e) {
        e.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
      },
      "stage_actions has 2 entries, expected one per stage: 1 (the "
      "executable has no \"pp\" mesh axis)");
  // Two stages, one list.
  ActionModelOptions two;
  two.stages = 2;
  two.microbatches = 4;
  ASSERT_TRUE(check(actionModel(two))) << check(actionModel(two)).message();
  expectRefused(actionModel(two),
                [](fb::ExecutableT &e) { e.stage_actions.pop_back(); },
                "stage_actions has 1 entry, expected one per stage: 2");
}

TEST(ActionsLoaderTest, FunctionsCoverTheKernelsOnceEachOnOneStage) {
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.functions[1]->kernel_count = 0; },
                "function 1 ('count.0'): no kernels (kernel_count 0)");
  expectRefused(
      model(),
      [](fb::ExecutableT &e) {
        e.functions.back()->kernel_count += 1;
      },
      "lie outside the executable's ");
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.functions[1]->first_kernel -= 1; },
                "function 0 ('start.0') and function 1 ('count.0') both hold "
                "kernel ");
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.functions[1]->first_kernel += 1; },
                "function 1 ('count.0') and function 2 ('scale.0') both hold "
                "kernel ");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.functions[1]->first_kernel += 1;
                  e.functions[1]->kernel_count -= 1;
                },
                "is in no function (with stage_actions every kernel is in "
                "one)");
  ActionModelOptions two;
  two.stages = 2;
  expectRefused(
      actionModel(two),
      [](fb::ExecutableT &e) {
        // Give the first function's first kernel to stage 1.
        e.kernels[e.functions[1]->first_kernel + 1]->stage = 1;
      },
      "(a function's kernels are all of one stage)");
}

TEST(ActionsLoaderTest, ActionsRunFunctionsOfTheirStageWithSlotsTheyHave) {
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.stage_actions[0]->actions[2] = fb::Action(99, 0, 0);
                },
                "stage 0: action 2 (function 99, microbatch 0, slot 0): the "
                "executable has ");
  ActionModelOptions two;
  two.stages = 2;
  expectRefused(
      actionModel(two),
      [](fb::ExecutableT &e) {
        // Stage 1 runs stage 0's first function.
        e.stage_actions[1]->actions[0] = fb::Action(0, 0, 0);
      },
      "stage 1: action 0 (function 0 ('start.0'), microbatch 0, slot 0): the "
      "function's kernels are on stage 0 (an action runs a function of its "
      "own stage)");
  // The stash pool has 2 slots, the inputs' 3 (the microbatches).
  ActionModel builder{ActionModelOptions()};
  builder.build();
  uint32_t f = builder.functionIndex.at("F.0");
  // Slot 2 of the stash pool is its slot 0 (the action's slot mod the
  // pool's slots), which microbatch 0 holds until B0.
  uint32_t b = builder.functionIndex.at("B.0");
  expectRefused(
      actionModel(ActionModelOptions()),
      [&](fb::ExecutableT &e) {
        for (fb::Action &a : e.stage_actions[0]->actions)
          if (a.function() == f && a.microbatch() == 1)
            a = fb::Action(f, 1, 2);
      },
      "(function " + std::to_string(f) +
          " ('F.0'), microbatch 1, slot 2): slot 0 of pool 2 still holds "
          "microbatch 0, whose last action is action 7 (function " +
          std::to_string(b) + " ('B.0'), microbatch 0, slot 0)");
  expectRefused(
      actionModel(ActionModelOptions()),
      [&](fb::ExecutableT &e) {
        for (fb::Action &a : e.stage_actions[0]->actions)
          if (a.function() == f && a.microbatch() == 2)
            a = fb::Action(f, 3, 1);
      },
      "microbatch 3, slot 1): its kernels address pool 0, whose 3 slots do "
      "not hold microbatch 3 (a by_microbatch pool: the slot is the "
      "microbatch)");
}

//===----------------------------------------------------------------------===//
// Started transfers (send_start, recv_start, wait) on two stages
//===----------------------------------------------------------------------===//

/// The two-stage step with started transfers in the exchange order that
/// blocking transfers cannot run (ActionExecutables.h), 4 microbatches.
fb::ExecutableT startedModel(bool actions = true) {
  ActionModelOptions options;
  options.stages = 2;
  options.microbatches = 4;
  options.startedTransfers = true;
  options.actions = actions;
  return actionModel(options);
}

/// The index of the function called `name` ("waitG.1").
uint32_t functionNamed(const fb::ExecutableT &exe, const std::string &name) {
  for (uint32_t f = 0; f < exe.functions.size(); ++f)
    if (exe.functions[f]->name == name)
      return f;
  ADD_FAILURE() << "no function " << name;
  return 0;
}

/// The position in stage `stage`'s list of the action running function
/// `name` for microbatch `mb`.
uint32_t actionOf(const fb::ExecutableT &exe, uint32_t stage,
                  const std::string &name, uint32_t mb) {
  uint32_t f = functionNamed(exe, name);
  const std::vector<fb::Action> &list = exe.stage_actions[stage]->actions;
  for (uint32_t a = 0; a < list.size(); ++a)
    if (list[a].function() == f && list[a].microbatch() == mb)
      return a;
  ADD_FAILURE() << "no action " << name << " for microbatch " << mb;
  return 0;
}

/// "action 5 (function 7 ('sendA.0'), microbatch 1, slot 1): kernel 30
/// (send_start)": the action of `name` for `mb` on `stage` and its
/// function's kernel `k`.
std::string runText(const fb::ExecutableT &exe, uint32_t stage,
                    const std::string &name, uint32_t mb, uint32_t k = 0) {
  uint32_t f = functionNamed(exe, name);
  uint32_t kernel = exe.functions[f]->first_kernel + k;
  return "action " + std::to_string(actionOf(exe, stage, name, mb)) +
         " (function " + std::to_string(f) + " ('" + name +
         "'), microbatch " + std::to_string(mb) + ", slot " +
         std::to_string(mb % 2) + "): kernel " + std::to_string(kernel) +
         " (" + opCodeName(exe.kernels[kernel]->op) + ")";
}

/// The kernel of one-kernel function `name`.
fb::KernelT &kernelOf(const fb::ExecutableT &exe, const std::string &name) {
  return *exe.kernels[exe.functions[functionNamed(exe, name)]->first_kernel];
}

/// Refused after `mutate`, with the message `expected` words from the
/// mutated executable.
void expectRefusedStarted(
    const std::function<void(fb::ExecutableT &)> &mutate,
    const std::function<std::string(const fb::ExecutableT &)> &expected) {
  fb::ExecutableT exe = startedModel();
  mutate(exe);
  expectRefused(exe, [](fb::ExecutableT &) {}, expected(exe));
}

/// Moves stage `stage`'s action at `from` to position `to` (of the list
/// without it).
void moveAction(fb::ExecutableT &exe, uint32_t stage, uint32_t from,
                uint32_t to) {
  std::vector<fb::Action> &list = exe.stage_actions[stage]->actions;
  fb::Action action = list[from];
  list.erase(list.begin() + from);
  list.insert(list.begin() + to, action);
}

TEST(StartedTransfersTest, BothStagesSendFirst) {
  Status s = check(startedModel());
  ASSERT_TRUE(s) << s.message();
  // The unrolled step: the same kernels in file order.
  s = check(startedModel(false));
  ASSERT_TRUE(s) << s.message();
  // Stage 1 taking the started activations by blocking recvs.
  ActionModelOptions mixed;
  mixed.stages = 2;
  mixed.microbatches = 4;
  mixed.startedTransfers = true;
  mixed.blockingActivationRecv = true;
  s = check(actionModel(mixed));
  ASSERT_TRUE(s) << s.message();

  // Blocking transfers in that order wait for each other: each stage at
  // its second send.
  const std::string never =
      "the pipeline stages' transfers never all complete (each stage runs "
      "its actions in order; a send_start or recv_start posts its transfer "
      "and goes on, a wait returns once the peer has posted the other side "
      "of the transfer, a send or recv is both): ";
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        for (auto &kernel : e.kernels)
          if (kernel->op == Op::SendStart)
            kernel->op = Op::Send;
          else if (kernel->op == Op::RecvStart)
            kernel->op = Op::Recv;
      },
      [&](const fb::ExecutableT &e) {
        std::string stage0 = runText(e, 0, "sendA.0", 1),
                    stage1 = runText(e, 1, "sendG.1", 0);
        stage0.back() = ' ';
        stage1.back() = ' ';
        return never + "stage 0 waits at " + stage0 +
               "to stage 1), stage 1 waits at " + stage1 + "to stage 0)";
      });

  // Each stage waits for the other's transfer before it posts its own: the
  // waits name the starts they wait for.
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        // Stage 0 sends microbatch 1's activation after it has waited for
        // microbatch 0's gradient; stage 1 sends that gradient after it has
        // waited for the activation.
        moveAction(e, 0, actionOf(e, 0, "sendA.0", 1),
                   actionOf(e, 0, "waitG.0", 0));
        moveAction(e, 1, actionOf(e, 1, "sendG.1", 0),
                   actionOf(e, 1, "waitA.1", 1));
      },
      [&](const fb::ExecutableT &e) {
        auto waitText = [&](uint32_t stage, const std::string &wait,
                            const std::string &start, uint32_t mb) {
          std::string text = runText(e, stage, wait, mb);
          text.erase(text.size() - std::string(" (wait)").size());
          return text + " (wait for action " +
                 std::to_string(actionOf(e, stage, start, mb)) +
                 "'s kernel " +
                 std::to_string(
                     e.functions[functionNamed(e, start)]->first_kernel) +
                 " (recv_start from stage " + std::to_string(1 - stage) +
                 "))";
        };
        return never + "stage 0 waits at " +
               waitText(0, "waitG.0", "recvG.0", 0) + ", stage 1 waits at " +
               waitText(1, "waitA.1", "recvA.1", 1);
      });
}

TEST(StartedTransfersTest, EveryStartHasOneWaitLaterInTheStep) {
  // A wait on a buffer nothing started a transfer on: the mask.
  uint32_t mask = 0;
  for (const auto &kernel : startedModel().kernels)
    if (kernel->op == Op::DropoutMask)
      mask = kernel->results[0];
  expectRefusedStarted(
      [&](fb::ExecutableT &e) { kernelOf(e, "waitA.0").operands = {mask}; },
      [&](const fb::ExecutableT &e) {
        return "stage 0: " + runText(e, 0, "waitA.0", 0) +
               ": transfer (buffer " + std::to_string(mask) +
               ", slot 0) has no transfer in flight to wait for (a wait "
               "follows the send_start or recv_start of the same buffer, the "
               "same slot, with no other wait between)";
      });
  // The last gradient sent and never waited for.
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        std::vector<fb::Action> &list = e.stage_actions[1]->actions;
        list.erase(list.begin() + actionOf(e, 1, "waitG.1", 3));
      },
      [](const fb::ExecutableT &e) {
        return "stage 1: the step ends with a transfer in flight: " +
               runText(e, 1, "sendG.1", 3) + " started it on buffer " +
               std::to_string(
                   kernelOf(e, "sendG.1")
                       .operands[0]) +
               ", slot 1, and no wait on it follows (every send_start and "
               "recv_start has a wait later in the step)";
      });
  // A second transfer started on a buffer in flight.
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        fb::KernelT &wait = kernelOf(e, "waitA.0");
        wait.op = Op::SendStart;
        wait.int_attrs = {1, 0};
      },
      [](const fb::ExecutableT &e) {
        return "stage 0: " + runText(e, 0, "waitA.0", 0) + ": input (buffer " +
               std::to_string(
                   kernelOf(e, "sendA.0")
                       .operands[0]) +
               ", slot 0) already has a transfer in flight, started by " +
               runText(e, 0, "sendA.0", 0) +
               " (one transfer at a time per buffer: wait for it first)";
      });
}

TEST(StartedTransfersTest, NothingTouchesABufferInFlightButWhatItAllows) {
  // B reads the gradient before the wait for its receipt.
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        std::vector<fb::Action> &list = e.stage_actions[0]->actions;
        std::swap(list[actionOf(e, 0, "waitG.0", 0)],
                  list[actionOf(e, 0, "B.0", 0)]);
      },
      [](const fb::ExecutableT &e) {
        uint32_t dhr =
            kernelOf(e, "recvG.0").results[0];
        uint32_t b = functionNamed(e, "B.0"), k = 0;
        while (e.kernels[e.functions[b]->first_kernel + k]->operands[0] != dhr)
          ++k;
        return "stage 0: " + runText(e, 0, "B.0", 0, k) + ": dY (buffer " +
               std::to_string(dhr) + ", slot 0) is read while " +
               runText(e, 0, "recvG.0", 0) +
               " receives into it (nothing but its wait touches a "
               "recv_start's result before the wait)";
      });
  // The gradient sent is written before the wait.
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        fb::KernelT &wait = kernelOf(e, "waitG.1");
        wait.op = Op::Zeros;
        wait.results = {kernelOf(e, "sendG.1").operands[0]};
        wait.operands.clear();
      },
      [](const fb::ExecutableT &e) {
        return "stage 1: " + runText(e, 1, "waitG.1", 0) + ": result (buffer " +
               std::to_string(
                   kernelOf(e, "sendG.1")
                       .operands[0]) +
               ", slot 0) is written while " + runText(e, 1, "sendG.1", 0) +
               " sends it (nothing writes a send_start's input before its "
               "wait)";
      });
  // Microbatch 0's gradient waited for by an action of microbatch 2, once
  // slot 0 has gone to it.
  expectRefusedStarted(
      [](fb::ExecutableT &e) {
        std::vector<fb::Action> &list = e.stage_actions[1]->actions;
        uint32_t wait = functionNamed(e, "waitG.1");
        list.erase(list.begin() + actionOf(e, 1, "waitG.1", 0));
        list.insert(list.begin() + actionOf(e, 1, "recvA.1", 2) + 1,
                    fb::Action(wait, 2, 0));
      },
      [](const fb::ExecutableT &e) {
        return "stage 1: " + runText(e, 1, "waitG.1", 2) +
               ": transfer (buffer " +
               std::to_string(
                   kernelOf(e, "sendG.1")
                       .operands[0]) +
               ", slot 0) waits for the transfer that " +
               runText(e, 1, "sendG.1", 0) +
               " started for microbatch 0, whose slot has gone to microbatch "
               "2 since (a transfer's wait comes before its slot is reused)";
      });
}

TEST(ActionsLoaderTest, PoolsAndPooledBuffers) {
  expectRefused(model(), [](fb::ExecutableT &e) { e.pools[1]->slots = 0; },
                "pool 1: 0 slots (a pool has at least one)");
  expectRefused(model(), [](fb::ExecutableT &e) { e.pools[2]->stride += 32; },
                "pool 2: stride ");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[pooledBuffer(e, false)]->pool = 7;
                },
                ": pool 7 but the executable has 3 pools");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[pooledBuffer(e, false)]->pool = -2;
                },
                ": pool -2 but the executable has 3 pools");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  uint32_t b = pooledBuffer(e, false);
                  e.pools[e.buffers[b]->pool]->stride = 64;
                },
                ", more than the stride 64 of its pool 2 (its slots would "
                "overlap)");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.pools[2]->slots = 3;
                },
                "slot 2 of pool 2 (stride ");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[e.params[0]->buffer]->pool = 2;
                },
                "param 0 ('e.weight'): buffer ");
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.buffers[e.state[1]->buffer]->pool = 2; },
                "is pooled (pool 2); params, state, outputs and grads are not");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[e.outputs[0]->buffer]->pool = 2;
                },
                "output 0 ('loss'): buffer ");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[e.grads[0]->buffer]->pool = 2;
                },
                "grad 0 ('e.weight'): buffer ");
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.pools[0]->by_microbatch = false; },
                "input 1 ('input_ids'): buffer ");
  expectRefused(model(),
                [](fb::ExecutableT &e) { e.pools[0]->by_microbatch = false; },
                "which is not by_microbatch (an input's slots are the "
                "microbatches of the batch)");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[e.inputs[0]->buffer]->pool = 0;
                },
                "is in pool 0, but the runtime writes it itself, once");
  expectRefused(model(),
                [](fb::ExecutableT &e) {
                  e.buffers[e.inputs[0]->buffer]->pool = 0;
                },
                "input 0 ('step'): buffer ");
}

/// The kernel of `exe` with opcode `op` (the `nth`), and its buffers.
const fb::KernelT &kernelOf(const fb::ExecutableT &exe, Op op, int nth = 0) {
  for (const auto &kernel : exe.kernels)
    if (kernel->op == op && nth-- == 0)
      return *kernel;
  ADD_FAILURE() << "no kernel " << opCodeName(op);
  return *exe.kernels[0];
}

TEST(ActionsLoaderTest, TheLifetimesAndThePlanHoldOverTheRuns) {
  ActionModel builder{ActionModelOptions()};
  builder.build();
  uint32_t f = builder.functionIndex.at("F.0");
  uint32_t b = builder.functionIndex.at("B.0");
  // B of microbatch 1 before its F.
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        auto &list = e.stage_actions[0]->actions;
        for (size_t i = 0; i < list.size(); ++i)
          if (list[i].function() == f && list[i].microbatch() == 1) {
            list[i] = fb::Action(b, 1, 1);
            list[i + 2] = fb::Action(f, 1, 1);
            break;
          }
      },
      "action 6 (function " + std::to_string(b) +
          " ('B.0'), microbatch 1, slot 1): kernel ");
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        auto &list = e.stage_actions[0]->actions;
        for (size_t i = 0; i < list.size(); ++i)
          if (list[i].function() == f && list[i].microbatch() == 1) {
            list[i] = fb::Action(b, 1, 1);
            list[i + 2] = fb::Action(f, 1, 1);
            break;
          }
      },
      "(cross_entropy_grad): logits (buffer ");
  // A stash slot taken while its microbatch is live: F2 in slot 1, where
  // F1's stash waits for B1.
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        for (fb::Action &a : e.stage_actions[0]->actions)
          if (a.microbatch() == 2 && (a.function() == f || a.function() == b))
            a = fb::Action(a.function(), 2, 1);
      },
      "slot 1 of pool 2 still holds microbatch 1, whose last action is "
      "action 9 (function " +
          std::to_string(b) + " ('B.0'), microbatch 1, slot 1)");
  // Two pooled buffers over the same bytes, both live at once.
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        uint32_t mask = kernelOf(e, Op::DropoutMask).results[0];
        uint32_t logits = kernelOf(e, Op::CrossEntropy).operands[0];
        e.buffers[logits]->offset = e.buffers[mask]->offset;
      },
      " slot 0 (bytes [");
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        uint32_t mask = kernelOf(e, Op::DropoutMask).results[0];
        uint32_t logits = kernelOf(e, Op::CrossEntropy).operands[0];
        e.buffers[logits]->offset = e.buffers[mask]->offset;
      },
      "share arena bytes while both are live at action 5 (function " +
          std::to_string(f) + " ('F.0'), microbatch 0, slot 0): kernel ");
  // A kernel's result over its pooled operand's slot 1: refused at the
  // run of slot 1.
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        const fb::KernelT &ce = kernelOf(e, Op::CrossEntropy);
        uint32_t logits = ce.operands[0], sum = ce.results[0];
        e.buffers[sum]->offset =
            e.buffers[logits]->offset +
            e.pools[e.buffers[logits]->pool]->stride;
      },
      "microbatch 1, slot 1): kernel ");
  expectRefused(
      model(),
      [&](fb::ExecutableT &e) {
        const fb::KernelT &ce = kernelOf(e, Op::CrossEntropy);
        uint32_t logits = ce.operands[0], sum = ce.results[0];
        e.buffers[sum]->offset =
            e.buffers[logits]->offset +
            e.pools[e.buffers[logits]->pool]->stride;
      },
      "(cross_entropy): loss_sum (buffer ");
}

TEST(ActionsLoaderTest, TheDropoutStreamOfAMicrobatchFitsInt64) {
  expectRefused(model(),
                [&](fb::ExecutableT &e) {
                  for (const auto &kernel : e.kernels)
                    if (kernel->op == Op::DropoutMask)
                      kernel->int_attrs[1] = INT64_MAX - 10;
                },
                "(dropout_mask): its dropout stream for microbatch 1 starts "
                "at 9223372036854775797 + 1 x 24, past 2^63 - 1");
}

//===----------------------------------------------------------------------===//
// The kernels actions need: zeros, add on i64
//===----------------------------------------------------------------------===//

TEST(ActionsTest, ZerosAndCountsAddedInPlace) {
  ExecutableBuilder b;
  uint32_t labels = b.input("labels", {2, 3}, 8);
  uint32_t total = b.buffer(fb::DType::I64, {});
  uint32_t c = b.buffer(fb::DType::I64, {});
  uint32_t z = b.buffer(fb::DType::BF16, {5});
  b.kernel(Op::Zeros, {}, {total});
  b.kernel(Op::CountTargets, {labels}, {c}, {-100});
  b.kernel(Op::Add, {total, c}, {total});
  b.kernel(Op::Add, {total, c}, {total});
  b.kernel(Op::Zeros, {}, {z});
  b.output("total", total);
  b.output("z", z);
  fb::ExecutableT exe = b.finish();
  std::vector<uint8_t> payload = pack(exe);
  const fb::Executable *root = fb::GetExecutable(payload.data());
  ASSERT_TRUE(checkExecutable(*root)) << checkExecutable(*root).message();
  Interpreter interpreter;
  ASSERT_TRUE(Interpreter::create(*root, createCpuDevice(), interpreter));
  int64_t values[6] = {1, -100, 3, 4, -100, 6};
  ASSERT_TRUE(interpreter.writeBuffer(labels, values, sizeof(values)));
  // The arena holds something else at first.
  std::vector<uint8_t> junk(10, 0xff);
  ASSERT_TRUE(interpreter.writeBuffer(z, junk.data(), junk.size()));
  ASSERT_TRUE(interpreter.runStep());
  int64_t got = 0;
  ASSERT_TRUE(interpreter.readBuffer(total, &got, 8));
  EXPECT_EQ(got, 8);
  ASSERT_TRUE(interpreter.readBuffer(z, junk.data(), junk.size()));
  EXPECT_EQ(junk, std::vector<uint8_t>(10, 0));

  // i64 add wants all three i64; zeros takes no attributes.
  fb::ExecutableT mixed = exe;
  mixed.kernels[2]->operands[1] = z;
  Status s = check(mixed);
  EXPECT_NE(s.message().find("kernel 2 (add): rhs is bf16, expected i64"),
            std::string::npos)
      << s.message();
  fb::ExecutableT attrs = exe;
  attrs.kernels[0]->int_attrs = {1};
  s = check(attrs);
  EXPECT_NE(s.message().find("kernel 0 (zeros): has 1 int_attrs, expected 0"),
            std::string::npos)
      << s.message();
}

} // namespace
