//===- Device.h - what an interpreter backend implements --------*- C++ -*-===//
//
// The interpreter walks a Program; a Device owns the memory and runs the
// kernels. All of a rank's buffers live in one arena that the device
// allocates once; whatever else the kernels need (attention scratch, fp32
// copies of 16-bit operands) is one workspace that prepare() sizes and
// allocates once, so that execute() allocates nothing. A CUDA backend
// implements the same interface with device memory and streams.
//
// Collective kernels (all_reduce, all_gather, ...) run on the communicators
// the interpreter hands to prepare(), one per group of ranks
// (Program::groups); a device with its own transport (NCCL) would bootstrap
// it from them at prepare().
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_DEVICE_H
#define TPCRT_DEVICE_H

#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tpcrt {

class Communicator;

/// What changes from one step to the next.
struct StepContext {
  /// The executable's dropout seed.
  uint64_t seed = 0;
  /// 0 for the first step.
  uint64_t step = 0;
  /// Evaluation (tpc-run --eval-data): every dropout keeps every element, as
  /// torch's model.eval() does; dropout_mask yields all ones.
  bool evaluation = false;
  /// The action running the kernel (Executable.stage_actions; 0 and 0
  /// without): its microbatch, from which the dropout kernels draw
  /// (first_index + microbatch * KernelCall::streamElements) and which
  /// selects the slot of a by_microbatch pool, and its slot, which selects
  /// slot `slot mod slots` of any other pool: a pooled operand or result
  /// lies at TensorRef::offsetAt(microbatch, slot).
  uint32_t microbatch = 0;
  uint32_t slot = 0;
};

class Device {
public:
  // Inline: the CUDA backend library (a module of its own) derives from it.
  virtual ~Device() = default;

  /// "cpu", "cuda".
  virtual const char *name() const = 0;

  /// Allocates the arena: `bytes`, 64-byte aligned, zero-filled. Once.
  virtual Status allocateArena(uint64_t bytes) = 0;
  virtual uint64_t arenaBytes() const = 0;
  /// Every byte the device allocated for the program: the arena and any
  /// workspace beside it (the CUDA device's GEMM workspace, scratch,
  /// staging); known after prepare.
  virtual uint64_t allocatedBytes() const { return arenaBytes(); }
  /// The bytes in use on the device as its driver counts them (total less
  /// free: the program's allocation, the libraries' own buffers and those
  /// of any other process on it); 0 where the device keeps no such count
  /// (cpu) or cannot tell. For runs to show whether anything was allocated
  /// after the first step.
  virtual uint64_t deviceMemoryInUse() { return 0; }

  /// Host <-> arena copies; a range outside the arena is an error.
  virtual Status copyToArena(uint64_t offset, const void *source,
                             uint64_t bytes) = 0;
  virtual Status copyFromArena(uint64_t offset, void *destination,
                               uint64_t bytes) = 0;

  /// Sizes and allocates the workspace the program's kernels need, and
  /// resolves their buffers to arena addresses. Once, after allocateArena;
  /// the device keeps what it needs, not `program`. execute() then takes the
  /// program's calls. `groups` holds a communicator per entry of
  /// program.groups (not owned; they outlive the device's use of them).
  virtual Status prepare(const Program &program,
                         const std::vector<Communicator *> &groups) = 0;
  virtual uint64_t workspaceBytes() const = 0;

  /// Runs one kernel of the prepared program with the context's microbatch
  /// and slot. Allocates nothing.
  virtual Status execute(const KernelCall &call,
                         const StepContext &context) = 0;

  /// Waits for the kernels queued so far (a no-op where execute is
  /// synchronous).
  virtual Status synchronize() = 0;

  /// Timing a step of `runs` kernel runs without waiting for each kernel,
  /// on a device that queues its work (so that its fused groups and
  /// batches run as they do untimed): markRun(i) before run i's execute,
  /// then synchronize() ends the step and runDurations() gives run i the
  /// device time from its mark to the next (the last run's, to the end of
  /// the step's work): what the compute stream did meanwhile, including
  /// deferred work launched then (a fused group's time is its last
  /// member's). false: the device has no marks, and the interpreter
  /// synchronizes after each kernel instead.
  virtual bool markRuns(size_t runs) {
    (void)runs;
    return false;
  }
  virtual Status markRun(size_t run) {
    (void)run;
    return Status::error("this device has no run marks");
  }
  /// The marked runs' durations, after the step's synchronize().
  virtual Status runDurations(std::vector<int64_t> &nanoseconds) {
    (void)nanoseconds;
    return Status::error("this device has no run marks");
  }
};

/// The most bytes one message of a transfer between pipeline stages
/// carries (MPI counts are ints): a larger buffer moves in pieces, which both
/// sides cut alike.
constexpr uint64_t kTransferPieceBytes = uint64_t(1) << 30;

/// The CPU backend: fp32 kernels of CpuKernels.h and CpuTrainingKernels.h;
/// BF16 and F16 buffers are converted to fp32 in the workspace around each
/// kernel. `transferPieceBytes` (0: kTransferPieceBytes) is for tests that
/// cut transfers into small pieces; the ranks of a run must agree on it.
std::unique_ptr<Device>
createCpuDevice(uint64_t transferPieceBytes = kTransferPieceBytes);

} // namespace tpcrt

#endif // TPCRT_DEVICE_H
