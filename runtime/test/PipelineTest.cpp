//===- PipelineTest.cpp - pipeline stages without MPI ---------------------===//
//
// The loader on executables whose kernels run on pipeline stages (a mesh
// axis "pp", PipelineExecutables.h): every stage's kernels checked as a
// program of their own (buffers of different stages may share arena
// bytes), what each stage owns, the placement of a rank on its stage, the
// evaluation kernels across the stages, and the refusals: stages without
// "pp" or beyond it, transfers to the own stage, out of range, over other
// axes, of other sizes, or that never complete. The runs on MPI ranks are in
// PipelineCheck.cpp.
//
//===----------------------------------------------------------------------===//

#include "PipelineExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Program.h"

#include "gtest/gtest.h"

#include <functional>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

using Op = fb::OpCode;

Status check(const fb::ExecutableT &exe) {
  std::vector<uint8_t> payload = pack(exe);
  return checkExecutable(*fb::GetExecutable(payload.data()));
}

/// The index of the `nth` kernel of opcode `op` on `stage`.
uint32_t kernelOf(const fb::ExecutableT &exe, Op op, uint32_t stage,
                  int nth = 0) {
  for (uint32_t i = 0; i < exe.kernels.size(); ++i)
    if (exe.kernels[i]->op == op && exe.kernels[i]->stage == stage &&
        nth-- == 0)
      return i;
  ADD_FAILURE() << "no kernel " << opCodeName(op) << " on stage " << stage;
  return 0;
}

void expectRefused(const PipelineOptions &options,
                   const std::function<void(fb::ExecutableT &)> &mutate,
                   const std::string &expected) {
  fb::ExecutableT exe = pipelineModel(options);
  mutate(exe);
  Status s = check(exe);
  ASSERT_FALSE(s) << "accepted; expected: " << expected;
  EXPECT_NE(s.message().find(expected), std::string::npos)
      << "message: " << s.message() << "\nexpected: " << expected;
}

void expectRefused(const std::function<void(fb::ExecutableT &)> &mutate,
                   const std::string &expected) {
  expectRefused(PipelineOptions(), mutate, expected);
}

std::string kernelName(const fb::ExecutableT &exe, uint32_t i) {
  return "kernel " + std::to_string(i) + " (" + opCodeName(exe.kernels[i]->op) +
         ")";
}

/// Decodes `exe` (checked first).
void decode(const fb::ExecutableT &exe, std::vector<uint8_t> &payload,
            Program &program) {
  payload = pack(exe);
  const fb::Executable &root = *fb::GetExecutable(payload.data());
  Status s = checkExecutable(root);
  ASSERT_TRUE(s) << s.message();
  ASSERT_TRUE(decodeProgram(root, program));
}

std::vector<uint32_t> indicesOf(const std::vector<KernelCall> &calls) {
  std::vector<uint32_t> indices;
  for (const KernelCall &call : calls)
    indices.push_back(call.index);
  return indices;
}

uint32_t paramBuffer(const Program &program, const std::string &name) {
  for (const ParamRef &param : program.params)
    if (param.hfName == name)
      return param.buffer;
  ADD_FAILURE() << "no param " << name;
  return 0;
}

TEST(PipelineLoaderTest, EachRankHoldsItsStagesKernels) {
  fb::ExecutableT exe = pipelineModel();
  std::vector<uint8_t> payload;
  Program program;
  decode(exe, payload, program);
  ASSERT_EQ(program.numStages, 2);
  EXPECT_EQ(program.stageAxis, 0);
  EXPECT_EQ(program.numKernels, exe.kernels.size());
  ASSERT_EQ(program.allCalls.size(), exe.kernels.size());
  std::vector<uint32_t> stage0, stage1;
  for (uint32_t i = 0; i < exe.kernels.size(); ++i)
    (exe.kernels[i]->stage ? stage1 : stage0).push_back(i);
  ASSERT_FALSE(stage0.empty());
  ASSERT_FALSE(stage1.empty());
  // Before placement: stage 0's; the calls keep their index in the file.
  EXPECT_EQ(indicesOf(program.calls), stage0);
  EXPECT_EQ(program.plannedPeakBytes, exe.stage_planned_peak_bytes[0]);

  // Rank 1 is stage 1; rank 0 stage 0 again.
  ASSERT_TRUE(placeProgram(program, 1));
  EXPECT_EQ(program.stage, 1u);
  EXPECT_EQ(indicesOf(program.calls), stage1);
  EXPECT_EQ(program.plannedPeakBytes, exe.stage_planned_peak_bytes[1]);
  EXPECT_NE(exe.stage_planned_peak_bytes[0], exe.stage_planned_peak_bytes[1]);
  for (const KernelCall &call : program.calls) {
    if (call.group >= 0) {
      EXPECT_EQ(call.groupPosition, 1) << kernelName(exe, call.index);
    }
  }
  // The stage's lifetimes are over its own kernel list.
  uint32_t w0 = paramBuffer(program, "w0.weight");
  uint32_t w1 = paramBuffer(program, "w1.weight");
  EXPECT_FALSE(program.lifetimes[w0].live());
  EXPECT_EQ(program.lifetimes[w1].first, Lifetime::kLoad);
  EXPECT_EQ(program.lifetimes[w1].last,
            static_cast<int64_t>(program.calls.size()));
  ASSERT_TRUE(placeProgram(program, 0));
  EXPECT_EQ(indicesOf(program.calls), stage0);
  EXPECT_EQ(program.lifetimes[w0].first, Lifetime::kLoad);
  EXPECT_FALSE(program.lifetimes[w1].live());

  // The send of the activation meets the recv, both ways.
  uint32_t send = kernelOf(exe, Op::Send, 0), recv = kernelOf(exe, Op::Recv, 1);
  EXPECT_EQ(program.allCalls[send].meets, std::vector<uint32_t>{recv});
  EXPECT_EQ(program.allCalls[recv].meets, std::vector<uint32_t>{send});
  uint32_t reduce0 = kernelOf(exe, Op::AllReduce, 0);
  uint32_t reduce1 = kernelOf(exe, Op::AllReduce, 1);
  EXPECT_EQ(program.allCalls[reduce0].meets, std::vector<uint32_t>{reduce1});
  // Every rank makes the same communicators: [pp] alone here.
  EXPECT_EQ(program.groups, (std::vector<std::vector<uint32_t>>{{0}}));
}

TEST(PipelineLoaderTest, WhatEachStageOwns) {
  fb::ExecutableT exe = pipelineModel();
  std::vector<uint8_t> payload;
  Program program;
  decode(exe, payload, program);
  auto stagesOf = [&](uint32_t buffer) { return program.bufferStages[buffer]; };
  using Stages = std::vector<uint32_t>;
  EXPECT_EQ(stagesOf(paramBuffer(program, "e.weight")), (Stages{0, 1}));
  EXPECT_EQ(stagesOf(paramBuffer(program, "w0.weight")), (Stages{0}));
  EXPECT_EQ(stagesOf(paramBuffer(program, "w1.weight")), (Stages{1}));
  EXPECT_EQ(stagesOf(program.findInput("input_ids")->buffer), (Stages{0}));
  EXPECT_EQ(stagesOf(program.findInput("labels")->buffer), (Stages{1}));
  EXPECT_EQ(stagesOf(program.findInput("step")->buffer), (Stages{0, 1}));
  EXPECT_EQ(stagesOf(program.findOutput("loss")->buffer), (Stages{1}));
  EXPECT_EQ(stagesOf(program.findOutput("lr")->buffer), (Stages{0, 1}));
  for (const StateRef &state : program.state)
    EXPECT_EQ(stagesOf(state.buffer),
              stagesOf(program.params[state.param].buffer));
  EXPECT_TRUE(program.ownsBuffer(paramBuffer(program, "w0.weight")));
  EXPECT_FALSE(program.ownsBuffer(program.findOutput("loss")->buffer));
  ASSERT_TRUE(placeProgram(program, 1));
  EXPECT_FALSE(program.ownsBuffer(paramBuffer(program, "w0.weight")));
  EXPECT_TRUE(program.ownsBuffer(program.findOutput("loss")->buffer));
  EXPECT_TRUE(program.ownsBuffer(paramBuffer(program, "e.weight")));

  // Without stages everything is stage 0's.
  Program twin;
  std::vector<uint8_t> twinPayload;
  PipelineOptions one;
  one.stages = 1;
  decode(pipelineModel(one), twinPayload, twin);
  EXPECT_EQ(twin.numStages, 1);
  EXPECT_TRUE(twin.allCalls.empty());
  for (const std::vector<uint32_t> &stages : twin.bufferStages)
    EXPECT_EQ(stages, (Stages{0}));
}

/// Buffers only stage 0 uses and buffers only stage 1 uses lie at the same
/// offsets: that must load (the stages have arenas of their own).
TEST(PipelineLoaderTest, StagesPrivateBuffersShareArenaBytes) {
  for (bool share : {true, false}) {
    PipelineOptions options;
    options.shareArena = share;
    fb::ExecutableT exe = pipelineModel(options);
    std::vector<uint8_t> payload;
    Program program;
    decode(exe, payload, program);
    int overlaps = 0;
    for (uint32_t a = 0; a < program.buffers.size(); ++a)
      for (uint32_t b = a + 1; b < program.buffers.size(); ++b) {
        const TensorRef &x = program.buffers[a], &y = program.buffers[b];
        if (x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes) {
          ++overlaps;
          // Only buffers of different stages.
          EXPECT_EQ(program.bufferStages[a].size(), 1u);
          EXPECT_EQ(program.bufferStages[b].size(), 1u);
          EXPECT_NE(program.bufferStages[a], program.bufferStages[b]);
        }
      }
    if (share)
      EXPECT_GE(overlaps, 5);
    else
      EXPECT_EQ(overlaps, 0);
  }
  // Within a stage, live buffers sharing bytes are refused as ever, naming
  // the stage.
  expectRefused(
      [](fb::ExecutableT &e) {
        uint32_t a = e.kernels[kernelOf(e, Op::Gelu, 1)]->results[0];
        uint32_t d =
            e.kernels[kernelOf(e, Op::CrossEntropyGrad, 1)]->results[0];
        e.buffers[d]->offset = e.buffers[a]->offset;
      },
      "stage 1: buffers ");
}

TEST(PipelineLoaderTest, EvaluationRunsEachStagesShare) {
  fb::ExecutableT exe = pipelineModel();
  std::vector<uint8_t> payload;
  Program program;
  decode(exe, payload, program);
  uint32_t loss = program.findOutput("loss")->buffer;
  auto opsOf = [&](const std::vector<uint32_t> &positions) {
    std::vector<Op> ops;
    for (uint32_t p : positions)
      ops.push_back(program.calls[p].op);
    return ops;
  };
  // Stage 0 does not hold the loss, but computes and sends what it needs.
  EXPECT_EQ(opsOf(program.kernelsComputing(loss)),
            (std::vector<Op>{Op::Embedding, Op::Linear, Op::Send}));
  ASSERT_TRUE(placeProgram(program, 1));
  EXPECT_EQ(opsOf(program.kernelsComputing(loss)),
            (std::vector<Op>{Op::Recv, Op::Gelu, Op::Linear, Op::Linear,
                             Op::CrossEntropy, Op::LossMean}));
}

TEST(PipelineLoaderTest, StagesNeedThePpAxis) {
  PipelineOptions one;
  one.stages = 1;
  expectRefused(
      one, [](fb::ExecutableT &e) { e.kernels[3]->stage = 1; },
      "kernel 3 (gelu): stage 1, but the executable has no \"pp\" mesh axis "
      "(without one every kernel is on stage 0)");
  expectRefused(
      [](fb::ExecutableT &e) { e.kernels[1]->stage = 2; },
      "kernel 1 (linear): stage 2 is outside the 2 stages of mesh axis "
      "\"pp\"");
  expectRefused(
      one,
      [](fb::ExecutableT &e) {
        e.stage_planned_peak_bytes = {e.arena_bytes, e.arena_bytes};
      },
      "stage_planned_peak_bytes has 2 entries but the executable has no "
      "\"pp\" mesh axis");
  expectRefused(
      [](fb::ExecutableT &e) { e.stage_planned_peak_bytes = {64}; },
      "stage_planned_peak_bytes has 1 entry, expected one per stage: 2");
  expectRefused(
      [](fb::ExecutableT &e) {
        e.stage_planned_peak_bytes[1] = e.arena_bytes + 1;
      },
      "stage_planned_peak_bytes[1] ");
  // Nothing is split over "pp".
  PipelineOptions dp;
  dp.dp = 2;
  expectRefused(
      dp, [](fb::ExecutableT &e) { e.inputs[0]->splits[0]->axes = {0}; },
      "input 0 ('input_ids'): dimension 0 is split over mesh axis \"pp\", "
      "whose coordinate is a rank's pipeline stage");
  // A stage reads only what its own kernels wrote.
  expectRefused(
      [](fb::ExecutableT &e) {
        uint32_t gelu = kernelOf(e, Op::Gelu, 1);
        uint32_t send = kernelOf(e, Op::Send, 0);
        e.kernels[gelu]->operands[0] = e.kernels[send]->operands[0];
      },
      "stage 1: kernel 4 (gelu): input (buffer 7) is read before any kernel "
      "writes it");
}

TEST(PipelineLoaderTest, TransfersGoToAnotherStage) {
  fb::ExecutableT exe = pipelineModel();
  uint32_t send = kernelOf(exe, Op::Send, 0), recv = kernelOf(exe, Op::Recv, 1);
  std::string sendName = kernelName(exe, send),
              recvName = kernelName(exe, recv);
  expectRefused([&](fb::ExecutableT &e) { e.kernels[send]->int_attrs[0] = 0; },
                sendName +
                    ": peer 0 is its own stage: a stage cannot send to itself");
  expectRefused([&](fb::ExecutableT &e) { e.kernels[recv]->int_attrs[0] = 1; },
                recvName +
                    ": peer 1 is its own stage: a stage cannot receive from "
                    "itself");
  expectRefused([&](fb::ExecutableT &e) { e.kernels[send]->int_attrs[0] = 2; },
                sendName +
                    ": peer 2 (int_attrs[0]) is outside the group of 2 ranks, "
                    "[0, 2)");
  expectRefused([&](fb::ExecutableT &e) { e.kernels[recv]->int_attrs[0] = -1; },
                recvName +
                    ": peer -1 (int_attrs[0]) is outside the group of 2 ranks");
  expectRefused([&](fb::ExecutableT &e) { e.kernels[send]->int_attrs = {1}; },
                sendName +
                    ": has 1 int_attrs, expected 1 and at least one mesh axis");
  // Over another axis than "pp" alone.
  PipelineOptions dp;
  dp.dp = 2;
  fb::ExecutableT dpExe = pipelineModel(dp);
  uint32_t dpSend = kernelOf(dpExe, Op::Send, 0);
  expectRefused(
      dp, [&](fb::ExecutableT &e) { e.kernels[dpSend]->int_attrs = {1, 1}; },
      kernelName(dpExe, dpSend) +
          ": its group is mesh axes [dp]; a transfer's must be the \"pp\" "
          "axis alone (its peer is a pipeline stage)");
  expectRefused(
      dp, [&](fb::ExecutableT &e) { e.kernels[dpSend]->int_attrs = {1, 0, 1}; },
      "its group is mesh axes [pp,dp]; a transfer's must be the \"pp\" axis "
      "alone");
  // Without stages at all.
  PipelineOptions one;
  one.stages = 1;
  one.dp = 2;
  expectRefused(
      one,
      [&](fb::ExecutableT &e) {
        e.kernels[2] = makeKernel(Op::Send, {e.kernels[2]->operands[0]}, {});
        e.kernels[2]->int_attrs = {1, 0};
      },
      "kernel 2 (send): its group is mesh axes [dp]; a transfer's must be the "
      "\"pp\" axis alone (its peer is a pipeline stage), and the executable "
      "has no \"pp\" mesh axis");
}

TEST(PipelineLoaderTest, TransfersPairUpAndComplete) {
  fb::ExecutableT exe = pipelineModel();
  uint32_t send = kernelOf(exe, Op::Send, 0), recv = kernelOf(exe, Op::Recv, 1);
  // A recv of another size than its send.
  expectRefused(
      [&](fb::ExecutableT &e) {
        e.buffers.push_back(
            makeBuffer(e.arena_bytes, fb::DType::F32, {4, 3, 2}));
        e.arena_bytes += e.buffers.back()->size;
        e.kernels[recv]->results[0] =
            static_cast<uint32_t>(e.buffers.size() - 1);
      },
      kernelName(exe, send) +
          " on stage 0 sends f32 [4, 3, 4] to stage 1, "
          "whose matching " +
          kernelName(exe, recv) + " receives f32 [4, 3, 2]");
  // Stage 1 waits for the gradient before it sends the activation's: each
  // stage waits for the other at its recv.
  uint32_t gradSend = kernelOf(exe, Op::Send, 1);
  uint32_t gradRecv = kernelOf(exe, Op::Recv, 0);
  expectRefused(
      [&](fb::ExecutableT &e) {
        // Stage 0 receives the gradient before it sends the activation.
        std::swap(e.kernels[send], e.kernels[gradRecv]);
      },
      "the pipeline stages' transfers never all complete (each stage runs "
      "its kernels in file order; a send_start or recv_start posts its "
      "transfer and goes on, a wait returns once the peer has posted the "
      "other side of the transfer, a send or recv is both): "
      "stage 0 waits at kernel " +
          std::to_string(send) +
          " (recv from stage 1), stage 1 waits at kernel " +
          std::to_string(recv) + " (recv from stage 0)");
  // A send no recv takes.
  expectRefused(
      [&](fb::ExecutableT &e) {
        e.kernels[gradRecv]->stage = 1;
        e.kernels[gradRecv]->op = Op::Copy;
        e.kernels[gradRecv]->operands = {e.kernels[gradSend]->operands[0]};
        e.kernels[gradRecv]->int_attrs.clear();
      },
      "stage 1 waits at kernel " + std::to_string(gradSend) +
          " (send to stage 0)");
  // Collectives over "pp" meet alike.
  uint32_t reduce1 = kernelOf(exe, Op::AllReduce, 1);
  expectRefused(
      [&](fb::ExecutableT &e) { e.kernels[reduce1]->flags = 1; },
      "collectives across the stages must meet in the same order, alike");
  // Only transfers and collectives span the stages.
  expectRefused(
      [&](fb::ExecutableT &e) {
        e.kernels[kernelOf(e, Op::Embedding, 0)]->int_attrs = {0};
      },
      "(embedding): its group, mesh axes [pp], includes the \"pp\" axis, "
      "whose coordinate is a rank's pipeline stage: only transfers and "
      "collectives work across stages");
}

} // namespace
