//===- SeededRun.h - an interpreter with seeded weights and inputs -*- C++ -*-===//
//
// For the gtest suites that train a hand-built executable (TrainingTest,
// ActionsTest): the interpreter, weights from seed 3, synthetic inputs from
// seed 5 with some labels ignored.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_SEEDEDRUN_H
#define TPCRT_TEST_SEEDEDRUN_H

#include "TestExecutables.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Weights.h"

#include "gtest/gtest.h"

#include <initializer_list>
#include <memory>
#include <vector>

namespace tpcrt {
namespace test {

/// An interpreter for `exe` with weights from seed 3 and synthetic inputs
/// from seed 5, the labels at positions `ignored` of the global batch (the
/// same places whether the inputs are pooled by microbatch or not) made
/// -100. `step` copies the inputs in and runs a step.
struct SeededRun {
  std::vector<uint8_t> payload;
  Interpreter interpreter;
  HostInputs inputs;

  /// `device`: the CPU device where null.
  SeededRun(const fb::ExecutableT &exe, std::initializer_list<size_t> ignored,
            std::unique_ptr<Device> device = nullptr) {
    payload = pack(exe);
    const fb::Executable *root = fb::GetExecutable(payload.data());
    Status s = checkExecutable(*root);
    if (s)
      s = Interpreter::create(
          *root, device ? std::move(device) : createCpuDevice(), interpreter);
    if (s)
      s = initWeights(3, interpreter);
    if (s)
      s = syntheticInputs(5, interpreter.program(), inputs);
    EXPECT_TRUE(s.isOk()) << s.message();
    for (HostInputs::Entry &entry : inputs.entries)
      if (entry.buffer == interpreter.program().findInput("labels")->buffer) {
        auto *labels = reinterpret_cast<int64_t *>(entry.bytes.data());
        for (size_t i : ignored)
          labels[i] = kIgnoreLabel;
      }
  }
  const Program &program() const { return interpreter.program(); }
  Status step() {
    if (Status s = inputs.copyTo(interpreter); !s)
      return s;
    return interpreter.runStep();
  }
};

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_SEEDEDRUN_H
