//===- TrainingTest.cpp - the interpreter running training steps ----------===//
//
// The training model of TestExecutables.h through the interpreter: the step
// input, in-place updates of params and state, microbatches that do not
// change the result, evaluation of the forward pass alone. Its numbers are
// compared with torch by training_reference.py (runtime.TrainingVsTorch).
//
//===----------------------------------------------------------------------===//

#include "SeededRun.h"
#include "TestExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Random.h"
#include "tpcrt/TokenData.h"
#include "tpcrt/Weights.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <set>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

/// A seeded run (labels 1, 6 and 7 ignored), its inputs copied in, that
/// reads f32 values back.
struct Trainer : SeededRun {
  explicit Trainer(const fb::ExecutableT &exe) : SeededRun(exe, {1, 6, 7}) {
    EXPECT_TRUE(inputs.copyTo(interpreter).isOk());
  }

  std::vector<float> floats(uint32_t buffer) {
    const TensorRef &t = interpreter.program().buffers[buffer];
    std::vector<float> values(static_cast<size_t>(t.elements));
    EXPECT_TRUE(interpreter.readBuffer(buffer, values.data(), t.bytes).isOk());
    return values;
  }
  float output(const std::string &name) {
    return floats(interpreter.program().findOutput(name)->buffer)[0];
  }
  std::vector<float> grad(size_t i) {
    return floats(interpreter.program().grads[i].buffer);
  }
  std::vector<float> param(size_t i) {
    return floats(interpreter.program().params[i].buffer);
  }
};

double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff +=
        (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

TEST(TrainingTest, AStepUpdatesParamsAndStateInPlace) {
  Trainer t(tinyTrainingModel());
  const Program &program = t.interpreter.program();
  ASSERT_EQ(program.state.size(), 2 * program.params.size());
  for (const StateRef &state : program.state)
    for (float v : t.floats(state.buffer))
      ASSERT_EQ(v, 0.0f) << "state starts at zero";
  std::vector<float> before = t.param(0);
  ASSERT_TRUE(t.step());
  int64_t step = 0;
  ASSERT_TRUE(t.interpreter.readBuffer(program.findInput("step")->buffer, &step,
                                       sizeof(step)));
  EXPECT_EQ(step, 1) << "the runtime fills the 1-based optimizer step";
  EXPECT_NE(t.param(0), before);
  EXPECT_NE(t.floats(program.state[0].buffer), std::vector<float>(128, 0.0f));
  EXPECT_FLOAT_EQ(t.output("lr"), 0.01f);
  double sumSq = 0.0;
  for (size_t i = 0; i < program.grads.size(); ++i)
    for (float g : t.grad(i))
      sumSq += static_cast<double>(g) * g;
  EXPECT_NEAR(t.output("grad_norm"), std::sqrt(sumSq), 1e-6 * std::sqrt(sumSq));
  // Training on one batch lowers its loss.
  float first = t.output("loss");
  for (int k = 0; k < 20; ++k)
    ASSERT_TRUE(t.step());
  EXPECT_LT(t.output("loss"), first);
  EXPECT_EQ(t.interpreter.step(), 21u);
}

TEST(TrainingTest, MicrobatchesDoNotChangeTheResult) {
  // Dropout masks are placed by their first index, gradients are scaled by
  // the targets of the whole batch: 1, 2 and 4 microbatches agree, up to the
  // order of the sums the split changes (<= 8 positions a microbatch, hidden
  // 8: gamma_16 = 16 u = 9.5e-7 at worst per sum; 1e-5 over four steps of
  // this model; docs/testing/tolerances.md).
  TrainingOptions options;
  options.dropout = 0.2;
  options.maxNorm = 0.5;
  Trainer one(tinyTrainingModel(options));
  for (int64_t microbatches : {2, 4}) {
    options.microbatches = microbatches;
    Trainer split(tinyTrainingModel(options));
    ASSERT_TRUE(one.step());
    ASSERT_TRUE(split.step());
    EXPECT_NEAR(split.output("loss"), one.output("loss"),
                1e-6 * one.output("loss"));
    for (size_t i = 0; i < one.interpreter.program().grads.size(); ++i)
      EXPECT_LT(relativeError(split.grad(i), one.grad(i)), 1e-5)
          << one.interpreter.program().grads[i].name;
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(one.step());
      ASSERT_TRUE(split.step());
    }
    for (size_t i = 0; i < one.interpreter.program().params.size(); ++i)
      EXPECT_LT(relativeError(split.param(i), one.param(i)), 1e-5);
    one = Trainer(tinyTrainingModel(
        TrainingOptions{fb::OpCode::AdamWUpdate, 1, 0.2, 0.5}));
  }
}

TEST(TrainingTest, EvaluateRunsTheForwardPassWithoutDropout) {
  TrainingOptions options;
  options.dropout = 0.3;
  options.microbatches = 2;
  Trainer t(tinyTrainingModel(options));
  TrainingOptions noDropout = options;
  noDropout.dropout = 0.0;
  Trainer plain(tinyTrainingModel(noDropout));
  const Program &program = t.interpreter.program();

  std::set<fb::OpCode> ops;
  for (uint32_t k :
       program.kernelsComputing(program.findOutput("loss")->buffer))
    ops.insert(program.calls[k].op);
  for (fb::OpCode op : {fb::OpCode::CrossEntropyGrad,
                        fb::OpCode::LinearWeightGrad, fb::OpCode::AdamWUpdate,
                        fb::OpCode::SumSquares, fb::OpCode::LrSchedule})
    EXPECT_EQ(ops.count(op), 0u) << opCodeName(op);
  EXPECT_EQ(ops.count(fb::OpCode::CrossEntropy), 1u);
  EXPECT_EQ(ops.count(fb::OpCode::DropoutMask), 1u);

  // Before any update: the evaluated loss is the loss without dropout.
  std::vector<float> params = t.param(0);
  ASSERT_TRUE(t.interpreter.evaluate());
  ASSERT_TRUE(plain.step());
  EXPECT_EQ(t.output("loss"), plain.output("loss"));
  EXPECT_EQ(t.param(0), params) << "evaluation updates nothing";
  EXPECT_EQ(t.interpreter.step(), 0u);
  // Training with dropout differs from it.
  ASSERT_TRUE(t.step());
  EXPECT_NE(t.output("loss"), plain.output("loss"));
}

TEST(TrainingTest, EvaluationBetweenStepsDoesNotChangeTraining) {
  TrainingOptions options;
  options.dropout = 0.1;
  Trainer a(tinyTrainingModel(options)), b(tinyTrainingModel(options));
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(a.step());
    ASSERT_TRUE(b.step());
    ASSERT_TRUE(b.interpreter.evaluate());
  }
  ASSERT_TRUE(a.step());
  ASSERT_TRUE(b.step());
  EXPECT_EQ(a.output("loss"), b.output("loss"));
  for (size_t i = 0; i < a.interpreter.program().params.size(); ++i)
    EXPECT_EQ(a.param(i), b.param(i));
}

TEST(TrainingTest, SgdAndTheSchedule) {
  TrainingOptions options;
  options.optimizer = fb::OpCode::SgdUpdate;
  options.cosine = true;
  Trainer t(tinyTrainingModel(options));
  const float expected[] = {0.005f, 0.01f};
  for (float lr : expected) {
    ASSERT_TRUE(t.step());
    EXPECT_FLOAT_EQ(t.output("lr"), lr);
  }
  for (int k = 0; k < 10; ++k)
    ASSERT_TRUE(t.step());
  EXPECT_FLOAT_EQ(t.output("lr"), 0.001f) << "the minimum after decay";
  // Resuming sets the counter: the schedule and the optimizer follow it.
  t.interpreter.setStep(3);
  ASSERT_TRUE(t.step());
  EXPECT_NEAR(t.output("lr"), 0.001 + 0.009 * 0.5 * (1 + std::cos(M_PI * 0.5)),
              1e-7);
}

TEST(TrainingTest, ATrainingStepAllocatesNothing) {
  TrainingOptions options;
  options.microbatches = 2;
  options.dropout = 0.1;
  options.maxNorm = 1.0;
  Trainer t(tinyTrainingModel(options));
  for (int k = 0; k < 3; ++k) {
    long before = allocationCount();
    Status s = t.interpreter.runStep();
    long allocations = allocationCount() - before;
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(allocations, 0);
  }
}

TEST(TrainingTest, InPlaceUpdatesCountOnce) {
  // Params and state are live from load to the end and counted once each,
  // however many kernels update them; grads live from their first write to
  // the end.
  Trainer t(tinyTrainingModel());
  const Program &program = t.interpreter.program();
  uint64_t persistent = 0;
  for (const ParamRef &p : program.params)
    persistent += program.buffers[p.buffer].bytes;
  for (const StateRef &s : program.state)
    persistent += program.buffers[s.buffer].bytes;
  for (const BindingRef &g : program.grads) {
    EXPECT_EQ(program.lifetimes[g.buffer].last,
              static_cast<int64_t>(program.calls.size()));
    persistent += program.buffers[g.buffer].bytes;
  }
  EXPECT_GT(program.peakBytes, persistent);
  EXPECT_LT(program.peakBytes, program.arenaBytes)
      << "the test builder gives every buffer its own bytes";
}

} // namespace

TEST(TokenDataTest, BatchesAreShiftedWindowsAtDocumentedStarts) {
  std::string path = testing::TempDir() + "/tpcrt-tokens.bin";
  std::vector<uint16_t> tokens(300);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint16_t>((i * 7) % 16);
  {
    std::FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(tokens.data(), 2, tokens.size(), f);
    std::fclose(f);
  }
  TokenFile file;
  ASSERT_TRUE(TokenFile::open(path, TokenDType::U16, file));
  EXPECT_EQ(file.size(), 300u);
  Trainer t(tinyTrainingModel());
  TokenSampler sampler;
  ASSERT_TRUE(
      TokenSampler::create(file, 9, "data", t.interpreter.program(), sampler));
  const int64_t batch = 4, seq = 4;
  uint64_t key = namedStreamKey(9, "data");
  for (uint64_t draw : {0, 5}) {
    ASSERT_TRUE(sampler.sample(draw));
    const auto *ids = reinterpret_cast<const int64_t *>(
        sampler.inputs().entries[0].bytes.data());
    const auto *labels = reinterpret_cast<const int64_t *>(
        sampler.inputs().entries[1].bytes.data());
    for (int64_t r = 0; r < batch; ++r) {
      int64_t start = uniformBelow(key, draw * batch + r, 300 - seq);
      for (int64_t j = 0; j < seq; ++j) {
        EXPECT_EQ(ids[r * seq + j], tokens[start + j]);
        EXPECT_EQ(labels[r * seq + j], tokens[start + j + 1]);
      }
    }
  }
  EXPECT_EQ(defaultTokenDType(50257), TokenDType::U16);
  EXPECT_EQ(defaultTokenDType(128256), TokenDType::U32);
  std::remove(path.c_str());
}
