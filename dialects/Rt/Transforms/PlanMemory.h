//===- PlanMemory.h - what a memory plan holds ------------------*- C++ -*-===//
//
// The numbers rt-plan-memory works from, for tools that report them
// (tpc-compile --report): bytes per kind of buffer and the planned peaks.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_PLANMEMORY_H
#define DIALECTS_RT_TRANSFORMS_PLANMEMORY_H

#include "dialects/Rt/IR/RtOps.h"

#include <optional>

namespace mlir::rt {

/// Bytes (elements × element bytes, no alignment padding) of a program's
/// buffers by kind, and the peaks over its kernels, with the lifetimes of
/// rt-plan-memory.
struct MemoryStats {
  int64_t paramBytes = 0;
  /// Casts of params: the 16-bit weights of a mixed-precision model, cast
  /// from the f32 master weights once per step.
  int64_t paramCopyBytes = 0;
  int64_t stateBytes = 0;
  /// Buffers bound by rt.grad.
  int64_t gradBytes = 0;
  int64_t inputBytes = 0;
  /// rt.planned_peak_bytes: every buffer live at a kernel.
  int64_t peakBytes = 0;
  /// The same peak over rt.alloc buffers that are neither parameter
  /// gradients (nor the microbatch shares and partial sums that add up to
  /// one) nor casts of params: the activations, the stash, activation
  /// gradients and the scratch between them.
  int64_t peakActivationBytes = 0;
};

/// The figures of `program`, or with `stage` of that pipeline stage alone
/// (the buffers its kernels use; its planned peak).
MemoryStats computeMemoryStats(ProgramOp program,
                               std::optional<unsigned> stage = std::nullopt);

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_PLANMEMORY_H
