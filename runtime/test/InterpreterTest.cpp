#include "tpcrt/CpuKernels.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/Weights.h"
#include "TestExecutables.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Rounds every value to bf16 and back, as bf16 storage does.
std::vector<float> throughBf16(std::vector<float> v) {
  for (float &x : v)
    x = bfloat16ToFloat(floatToBFloat16(x));
  return v;
}

std::vector<uint16_t> toBf16(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = floatToBFloat16(v[i]);
  return out;
}

Status makeInterpreter(const fb::ExecutableT &exe,
                       std::vector<uint8_t> &payload, Interpreter &out) {
  payload = pack(exe);
  const fb::Executable *root = fb::GetExecutable(payload.data());
  if (Status s = checkExecutable(*root); !s)
    return s;
  return Interpreter::create(*root, createCpuDevice(), out);
}

/// x [2, 4, 8] · w [8, 16] + b -> logits; cross_entropy; loss_mean. x is
/// a float input written directly, like the params.
fb::ExecutableT linearLoss(fb::DType dtype) {
  ExecutableBuilder b;
  uint32_t w = b.param("w", dtype, {8, 16});
  uint32_t bias = b.param("b", dtype, {16});
  uint32_t x = b.buffer(dtype, {2, 4, 8});
  b.exe.inputs.push_back(makeBinding("x", x));
  uint32_t labels = b.input("labels", {2, 4}, 16);
  uint32_t logits = b.buffer(dtype, {2, 4, 16});
  b.kernel(fb::OpCode::Linear, {x, w, bias}, {logits});
  uint32_t sum = b.buffer(fb::DType::F32, {});
  uint32_t count = b.buffer(fb::DType::I64, {});
  b.kernel(fb::OpCode::CrossEntropy, {logits, labels}, {sum, count}, {-100});
  uint32_t loss = b.buffer(fb::DType::F32, {});
  b.kernel(fb::OpCode::LossMean, {sum, count}, {loss});
  b.output("loss", loss);
  b.output("logits", logits);
  return b.finish();
}

struct LinearLossData {
  std::vector<float> x = randomFloats(64, 1), w = randomFloats(128, 2, 0.5f),
                     b = randomFloats(16, 3);
  std::vector<int64_t> labels{3, 15, -100, 0, 7, 7, 1, 12};
};

/// The same computation through the kernels directly.
void expectedLinearLoss(const LinearLossData &d, bool bf16, float &loss,
                        std::vector<float> &logits) {
  std::vector<float> x = d.x, w = d.w, b = d.b;
  if (bf16) {
    x = throughBf16(x);
    w = throughBf16(w);
    b = throughBf16(b);
  }
  logits.assign(128, 0.0f);
  ASSERT_TRUE(cpu::linear(x.data(), w.data(), b.data(), 8, 8, 16,
                          cpu::WeightLayout::InOut, logits.data()));
  if (bf16)
    logits = throughBf16(logits);
  float sum;
  int64_t count;
  ASSERT_TRUE(cpu::crossEntropy(logits.data(), d.labels.data(), 8, 16, -100,
                                &sum, &count));
  EXPECT_EQ(count, 7);
  ASSERT_TRUE(cpu::lossMean(&sum, &count, &loss));
}

TEST(InterpreterTest, LinearCrossEntropyLossMeanMatchesTheKernels) {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  ASSERT_TRUE(makeInterpreter(linearLoss(fb::DType::F32), payload, interpreter));
  LinearLossData d;
  ASSERT_TRUE(interpreter.writeBuffer(0, d.w.data(), 128 * 4));
  ASSERT_TRUE(interpreter.writeBuffer(1, d.b.data(), 16 * 4));
  ASSERT_TRUE(interpreter.writeBuffer(2, d.x.data(), 64 * 4));
  ASSERT_TRUE(interpreter.writeBuffer(3, d.labels.data(), 8 * 8));
  Status s = interpreter.runStep();
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(interpreter.step(), 1u);

  float loss = 0.0f, expected = 1.0f;
  std::vector<float> logits(128), expectedLogits;
  ASSERT_TRUE(interpreter.readBuffer(
      interpreter.program().findOutput("loss")->buffer, &loss, 4));
  ASSERT_TRUE(interpreter.readBuffer(4, logits.data(), 128 * 4));
  expectedLinearLoss(d, false, expected, expectedLogits);
  EXPECT_EQ(logits, expectedLogits);
  EXPECT_EQ(loss, expected);
  EXPECT_GT(loss, 0.0f);
  // f32 kernels need no staging and no attention scratch.
  EXPECT_EQ(interpreter.device().workspaceBytes(), 0u);

  // Copies of the wrong size are refused.
  EXPECT_FALSE(interpreter.readBuffer(4, logits.data(), 4));
  EXPECT_FALSE(interpreter.writeBuffer(99, logits.data(), 4));
}

// The test-only opcode of the kernel table (Kernels.def: TestCopy, issue 12):
// one row, the copy decoder it names and the CPU device's case, and the
// loader takes it, the decoder sizes it and the interpreter runs it.
TEST(InterpreterTest, TheTestOpcodeOfOneTableRowRuns) {
  ExecutableBuilder b;
  uint32_t x = b.buffer(fb::DType::F32, {2, 3});
  b.exe.inputs.push_back(makeBinding("x", x));
  uint32_t y = b.buffer(fb::DType::F32, {6});
  b.kernel(fb::OpCode::TestCopy, {x}, {y});
  b.output("y", y);
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  Status s = makeInterpreter(b.finish(), payload, interpreter);
  ASSERT_TRUE(s) << s.message();
  EXPECT_STREQ(opCodeName(fb::OpCode::TestCopy), "test_copy");
  EXPECT_EQ(interpreter.program().calls[0].count, 6);
  std::vector<float> in = {1, -2, 3.5f, 4, 5, 6}, out(6);
  ASSERT_TRUE(interpreter.writeBuffer(x, in.data(), 6 * 4));
  s = interpreter.runStep();
  ASSERT_TRUE(s) << s.message();
  ASSERT_TRUE(interpreter.readBuffer(y, out.data(), 6 * 4));
  EXPECT_EQ(out, in);
}

TEST(InterpreterTest, Bf16BuffersComputeInFp32) {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  ASSERT_TRUE(
      makeInterpreter(linearLoss(fb::DType::BF16), payload, interpreter));
  LinearLossData d;
  ASSERT_TRUE(interpreter.writeBuffer(0, toBf16(d.w).data(), 128 * 2));
  ASSERT_TRUE(interpreter.writeBuffer(1, toBf16(d.b).data(), 16 * 2));
  ASSERT_TRUE(interpreter.writeBuffer(2, toBf16(d.x).data(), 64 * 2));
  ASSERT_TRUE(interpreter.writeBuffer(3, d.labels.data(), 8 * 8));
  ASSERT_TRUE(interpreter.runStep());

  float loss = 0.0f, expected = 1.0f;
  std::vector<float> expectedLogits;
  std::vector<uint16_t> logits(128);
  ASSERT_TRUE(interpreter.readBuffer(
      interpreter.program().findOutput("loss")->buffer, &loss, 4));
  ASSERT_TRUE(interpreter.readBuffer(4, logits.data(), 128 * 2));
  expectedLinearLoss(d, true, expected, expectedLogits);
  EXPECT_EQ(logits, toBf16(expectedLogits));
  EXPECT_EQ(loss, expected);
  // fp32 copies of x, w, b and the logits for linear; the bf16 logits again
  // for cross_entropy.
  EXPECT_EQ(interpreter.device().workspaceBytes(), (64u + 128 + 16 + 128) * 4);
}

/// The tiny model ready to run: weights from --init-seed, synthetic inputs.
void prepareTiny(const fb::ExecutableT &exe, std::vector<uint8_t> &payload,
                 Interpreter &interpreter, HostInputs &inputs) {
  ASSERT_TRUE(makeInterpreter(exe, payload, interpreter));
  ASSERT_TRUE(initWeights(7, interpreter));
  ASSERT_TRUE(syntheticInputs(8, interpreter.program(), inputs));
  ASSERT_TRUE(inputs.copyTo(interpreter));
}

float lossOf(Interpreter &interpreter) {
  float loss = NAN;
  EXPECT_TRUE(interpreter.readBuffer(
      interpreter.program().findOutput("loss")->buffer, &loss, 4));
  return loss;
}

TEST(InterpreterTest, RunningAStepAllocatesNothing) {
  for (fb::DType dtype : {fb::DType::F32, fb::DType::BF16}) {
    std::vector<uint8_t> payload;
    Interpreter interpreter;
    HostInputs inputs;
    prepareTiny(tinyModel(dtype), payload, interpreter, inputs);
    uint64_t workspace = interpreter.device().workspaceBytes();
    interpreter.setTiming(true);
    for (int step = 0; step < 3; ++step) {
      long before = allocationCount();
      Status s = interpreter.runStep();
      long allocations = allocationCount() - before;
      ASSERT_TRUE(s) << s.message();
      EXPECT_EQ(allocations, 0) << "step " << step;
    }
    EXPECT_EQ(interpreter.device().workspaceBytes(), workspace);
    EXPECT_EQ(interpreter.timings().size(), interpreter.program().calls.size());
    EXPECT_GT(interpreter.timings().back().startNs, 0);
  }
}

TEST(InterpreterTest, TheStepCounterDrivesDropout) {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  HostInputs inputs;
  prepareTiny(tinyModel(fb::DType::F32, 0.5), payload, interpreter, inputs);
  ASSERT_TRUE(interpreter.runStep());
  float first = lossOf(interpreter);
  ASSERT_TRUE(interpreter.runStep());
  float second = lossOf(interpreter);
  EXPECT_NE(first, second);

  // A fresh interpreter draws the same masks again.
  std::vector<uint8_t> payload2;
  Interpreter again;
  HostInputs inputs2;
  prepareTiny(tinyModel(fb::DType::F32, 0.5), payload2, again, inputs2);
  ASSERT_TRUE(again.runStep());
  EXPECT_EQ(lossOf(again), first);

  // Without dropout every step computes the same loss.
  std::vector<uint8_t> payload3;
  Interpreter plain;
  HostInputs inputs3;
  prepareTiny(tinyModel(fb::DType::F32, 0.0), payload3, plain, inputs3);
  ASSERT_TRUE(plain.runStep());
  float a = lossOf(plain);
  ASSERT_TRUE(plain.runStep());
  EXPECT_EQ(lossOf(plain), a);
}

TEST(InterpreterTest, Bf16ModelTracksF32) {
  float losses[2];
  int i = 0;
  for (fb::DType dtype : {fb::DType::F32, fb::DType::BF16}) {
    std::vector<uint8_t> payload;
    Interpreter interpreter;
    HostInputs inputs;
    prepareTiny(tinyModel(dtype, 0.0), payload, interpreter, inputs);
    ASSERT_TRUE(interpreter.runStep());
    losses[i++] = lossOf(interpreter);
  }
  // Tiny weights (std 0.02): the loss is near log(16), bf16 within 1%.
  EXPECT_NEAR(losses[0], std::log(16.0f), 0.1);
  EXPECT_NEAR(losses[1], losses[0], 0.01 * losses[0]);
}

/// The sweep's peak against a direct count over every kernel.
TEST(InterpreterTest, PeakBytesIsTheLargestLiveSet) {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  ASSERT_TRUE(makeInterpreter(tinyModel(), payload, interpreter));
  const Program &program = interpreter.program();
  uint64_t peak = 0;
  for (int64_t t = Lifetime::kLoad;
       t <= static_cast<int64_t>(program.calls.size()); ++t) {
    uint64_t live = 0;
    for (size_t b = 0; b < program.buffers.size(); ++b)
      if (program.lifetimes[b].first <= t && t <= program.lifetimes[b].last)
        live += program.buffers[b].bytes;
    peak = std::max(peak, live);
  }
  EXPECT_EQ(interpreter.peakBytes(), peak);
  EXPECT_LT(interpreter.peakBytes(), program.plannedPeakBytes);
}

TEST(InterpreterTest, KernelErrorsNameTheKernel) {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  HostInputs inputs;
  prepareTiny(tinyModel(), payload, interpreter, inputs);
  std::vector<int64_t> ids(8, 3);
  ids[5] = 16;
  uint32_t idsBuffer = interpreter.program().findInput("input_ids")->buffer;
  ASSERT_TRUE(interpreter.writeBuffer(idsBuffer, ids.data(), 64));
  Status s = interpreter.runStep();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "kernel 0 (embedding): embedding: id 16 at position "
                         "5 is outside [0, 16)");
  EXPECT_EQ(interpreter.step(), 0u);
}

/// Whatever damage passes the loader (random bytes behind a valid checksum),
/// the interpreter runs it or refuses it, and never reads or writes outside
/// its memory (run under AddressSanitizer to see that; see
/// docs/runtime/tpc-run.md).
TEST(InterpreterTest, AcceptedDamageRunsSafely) {
  std::mt19937 rng(99);
  int accepted = 0, ran = 0;
  for (fb::DType dtype : {fb::DType::F32, fb::DType::BF16}) {
    std::vector<uint8_t> original = pack(tinyModel(dtype, 0.25));
    for (int iteration = 0; iteration < 1500; ++iteration) {
      std::vector<uint8_t> payload = original;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < edits; ++i)
        payload[rng() % payload.size()] = static_cast<uint8_t>(rng());
      std::vector<uint8_t> image =
          serializeExecutable(payload.data(), payload.size());
      LoadedExecutable loaded;
      if (!loadExecutableFromBytes("fuzz.tpcx", image.data(), image.size(),
                                   loaded))
        continue;
      ++accepted;
      // Far larger arenas than the model's are possible: skip, they are
      // only slow.
      if (loaded.executable().arena_bytes() > (1u << 24))
        continue;
      Interpreter interpreter;
      if (!Interpreter::create(loaded.executable(), createCpuDevice(),
                               interpreter))
        continue;
      HostInputs inputs;
      if (!initWeights(1, interpreter) ||
          !syntheticInputs(2, interpreter.program(), inputs) ||
          !inputs.copyTo(interpreter))
        continue;
      Status s = interpreter.runStep();
      ran += s.isOk();
    }
  }
  std::printf("%d of 3000 damaged executables accepted, %d ran\n", accepted,
              ran);
  EXPECT_GT(accepted, 0);
  EXPECT_GT(ran, 0);
}

} // namespace
