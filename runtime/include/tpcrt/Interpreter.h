//===- Interpreter.h - runs a verified executable on a device ---*- C++ -*-===//
//
// create() decodes the executable once into a Program, allocates the arena
// and lets the device size and allocate its workspace: after that, running a
// step allocates nothing. A step runs every kernel in order, or with
// stage_actions the stage's actions in order, each its function's kernels
// with the action's microbatch and pool slot; the step counter
// (0 for the first step) feeds the dropout streams and, one-based, the
// executable's `step` input (the optimizer step). Optimizer state starts at
// zero. evaluate() runs only the kernels the loss depends on, without
// dropout and without advancing the counter.
//
// On a mesh (Executable.mesh) every rank runs its own Interpreter on the same
// executable with the world communicator: create() splits it once into one
// communicator per group of ranks the collective kernels use. On a pipeline
// (a "pp" mesh axis) a rank runs its stage's kernels only, and touches only
// the buffers its stage owns (Program::ownsBuffer).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_INTERPRETER_H
#define TPCRT_INTERPRETER_H

#include "tpcrt/Comm.h"
#include "tpcrt/Device.h"
#include "tpcrt/Layout.h"
#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tpcrt {

/// When one kernel of the last step ran, in nanoseconds since the
/// interpreter was created.
struct KernelTiming {
  int64_t startNs = 0;
  int64_t durationNs = 0;
};

/// One kernel run of the last step: the kernel (its index in the file), the
/// action that ran it (an index into Program::actions) and when.
struct RunTiming {
  uint32_t kernel = 0;
  uint32_t action = 0;
  KernelTiming timing;
};

class Interpreter {
public:
  Interpreter() = default;
  Interpreter(Interpreter &&) noexcept = default;
  Interpreter &operator=(Interpreter &&) noexcept = default;

  /// Decodes `exe` (verified by the loader) and prepares `device`. With a
  /// mesh, `world` must hold exactly the mesh's ranks (this rank is
  /// world->rank()); it is not owned and must outlive the interpreter.
  /// Without a mesh, `world` may be null or of size 1. Collective (every
  /// rank of `world` must call create, the sub-communicators are made here).
  static Status create(const fb::Executable &exe,
                       std::unique_ptr<Device> device, Interpreter &out,
                       Communicator *world = nullptr);

  const Program &program() const { return program_; }
  /// The executable's mesh (no axes: one rank).
  const Mesh &mesh() const { return program_.mesh; }
  /// This rank and its coordinates on the mesh.
  int64_t rank() const { return program_.rank; }
  const std::vector<int64_t> &coordinates() const {
    return program_.coordinates;
  }
  /// The world communicator given to create() (null if none was).
  Communicator *world() { return world_; }
  Device &device() { return *device_; }
  const Device &device() const { return *device_; }

  /// Host <-> buffer copies of exactly the buffer's size. On a pipeline, of
  /// a buffer this rank's stage owns (another's is an error). Of a pooled
  /// buffer, slot `slot` (below its pool's slots; 0 for any other buffer).
  Status writeBuffer(uint32_t buffer, const void *data, uint64_t bytes,
                     uint32_t slot = 0);
  Status readBuffer(uint32_t buffer, void *data, uint64_t bytes,
                    uint32_t slot = 0);

  /// Writes the `step` input (if any, and the stage owns it) as step() + 1,
  /// runs every kernel (of the stage) once, in order, or with stage_actions
  /// the stage's actions in order, then advances the step counter. On an
  /// error the message names the kernel by its index in the file, e.g.
  /// "kernel 0 (embedding): ...", after its action if any ("action 4
  /// (function 1 ('B'), microbatch 2, slot 0): kernel 9 (gelu): ...").
  Status runStep();

  /// Runs the kernels that compute the `loss` output
  /// (Program::kernelsComputing: for a training executable, its forward
  /// pass) in evaluation mode: no dropout, no update, the step counter
  /// unchanged. Overwrites the bytes of buffers the plan lets those kernels
  /// reuse (e.g. the last step's gradients). On a pipeline every rank calls
  /// it: each runs its stage's share (the stages before the loss send it
  /// their activations).
  Status evaluate();

  /// Steps run so far; the step the next runStep() runs.
  uint64_t step() const { return step_; }
  /// Sets the step counter (resuming from a checkpoint).
  void setStep(uint64_t step) { step_ = step; }

  /// Sets every optimizer state buffer (of the stage) to zero (create()
  /// does).
  Status resetState();

  /// With timing on, runStep records when each kernel ran: through the
  /// device's run marks where it has them (Device::markRuns: the CUDA
  /// device, whose fused groups and batches then run as they do untimed),
  /// else with a synchronize after each kernel.
  void setTiming(bool on) {
    timing_ = on;
    if (on) {
      runTimings_.reserve(program_.numRuns);
      markedDurations_.reserve(program_.numRuns);
    }
  }
  /// Per kernel of the file, by index, of the last step (zeros without
  /// timing, and for other stages' kernels): when it first ran and, with
  /// actions running it several times, the sum of its runs' durations.
  const std::vector<KernelTiming> &timings() const { return timings_; }
  /// Whether the device timed the last step's runs (Device::markRuns)
  /// rather than a synchronize after each.
  bool timedByDevice() const { return markedRuns_; }
  /// Every kernel run of the last step, in order (Program::numRuns; empty
  /// without timing).
  const std::vector<RunTiming> &runTimings() const { return runTimings_; }

  /// The measured high-water mark of live bytes (Program::peakBytes).
  uint64_t peakBytes() const { return program_.peakBytes; }

private:
  Program program_;
  Communicator *world_ = nullptr;
  /// One per Program::groups entry, in that order.
  std::vector<std::unique_ptr<Communicator>> groups_;
  std::unique_ptr<Device> device_;
  uint64_t step_ = 0;
  bool timing_ = false;
  std::vector<KernelTiming> timings_;
  std::vector<RunTiming> runTimings_;
  /// When the last runKernels began (timings_ older than it are reset).
  int64_t firstStartNs_ = 0;
  /// Whether the device times this step's runs (Device::markRuns), and
  /// the durations it gives.
  bool markedRuns_ = false;
  std::vector<int64_t> markedDurations_;
  std::chrono::steady_clock::time_point epoch_;
  /// The kernel runs evaluate() runs.
  std::vector<KernelRun> lossRuns_;

  /// Runs `subset` (null: the whole step), with `context`'s seed, step and
  /// mode, each run with its action's microbatch and slot.
  Status runKernels(const std::vector<KernelRun> *subset,
                    StepContext context);
  Status runOne(uint32_t position, uint32_t action, StepContext &context,
                size_t run);
  /// `s` naming the kernel and, with actions, the action.
  Status withKernelContext(Status s, const KernelCall &call, uint32_t action,
                           const ActionRef &a) const;
  /// The device's durations of the step's marked runs into runTimings_
  /// and timings_.
  Status takeMarkedTimings();
  /// Checks world_ against the mesh, places the program on this rank and
  /// splits world_ into groups_.
  Status makeGroups();
  /// "[dp,tp]".
  std::string axesText(const std::vector<uint32_t> &axes) const;
};

} // namespace tpcrt

#endif // TPCRT_INTERPRETER_H
