//===- Interpreter.h - runs a verified executable on a device ---*- C++ -*-===//
//
// create() decodes the executable once into a Program, allocates the arena
// and lets the device size and allocate its workspace: after that, running a
// step allocates nothing. A step runs every kernel in order; the step counter
// (0 for the first step) feeds the dropout streams.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_INTERPRETER_H
#define TPCRT_INTERPRETER_H

#include "tpcrt/Device.h"
#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace tpcrt {

/// When one kernel of the last step ran, in nanoseconds since the
/// interpreter was created.
struct KernelTiming {
  int64_t startNs = 0;
  int64_t durationNs = 0;
};

class Interpreter {
public:
  Interpreter() = default;
  Interpreter(Interpreter &&) noexcept = default;
  Interpreter &operator=(Interpreter &&) noexcept = default;

  /// Decodes `exe` (verified by the loader) and prepares `device`.
  static Status create(const fb::Executable &exe,
                       std::unique_ptr<Device> device, Interpreter &out);

  const Program &program() const { return program_; }
  Device &device() { return *device_; }
  const Device &device() const { return *device_; }

  /// Host <-> buffer copies of exactly the buffer's size.
  Status writeBuffer(uint32_t buffer, const void *data, uint64_t bytes);
  Status readBuffer(uint32_t buffer, void *data, uint64_t bytes);

  /// Runs every kernel once, in order, then advances the step counter. On an
  /// error the message names the kernel, e.g. "kernel 0 (embedding): ...".
  Status runStep();

  /// Steps run so far; the step the next runStep() runs.
  uint64_t step() const { return step_; }

  /// With timing on, runStep records when each kernel ran.
  void setTiming(bool on) { timing_ = on; }
  /// Per kernel of the last step (zeros without timing).
  const std::vector<KernelTiming> &timings() const { return timings_; }

  /// The measured high-water mark of live bytes (Program::peakBytes).
  uint64_t peakBytes() const { return program_.peakBytes; }

private:
  Program program_;
  std::unique_ptr<Device> device_;
  uint64_t step_ = 0;
  bool timing_ = false;
  std::vector<KernelTiming> timings_;
  std::chrono::steady_clock::time_point epoch_;
};

} // namespace tpcrt

#endif // TPCRT_INTERPRETER_H
