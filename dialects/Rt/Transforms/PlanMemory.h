//===- PlanMemory.h - what a memory plan holds ------------------*- C++ -*-===//
//
// The numbers rt-plan-memory works from, for tools that report them
// (tpc-compile --report): bytes per kind of buffer and the planned peaks.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_PLANMEMORY_H
#define DIALECTS_RT_TRANSFORMS_PLANMEMORY_H

#include "dialects/Rt/IR/RtOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <vector>

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
/// (the buffers its kernels use; its planned peak). With `stage_actions` the
/// peaks are over the stage's action time (computeActionPeak), and without
/// `stage` the largest stage's.
/// The planned peak of each of `numStages` stages as rt-plan-memory wrote it
/// on `module` (`rt.stage_planned_peak_bytes`, or `rt.planned_peak_bytes`
/// for a program of one stage); an error when the plan is missing.
FailureOr<SmallVector<int64_t>> readPlannedPeaks(ModuleOp module,
                                                 unsigned numStages);

MemoryStats computeMemoryStats(ProgramOp program,
                               std::optional<unsigned> stage = std::nullopt);

//===----------------------------------------------------------------------===//
// Programs run by action lists (ActionPeak.cpp)
//===----------------------------------------------------------------------===//

/// The time of a program whose stages run action lists (`stage_actions`):
/// its functions, each stage's actions and its pools, read from the
/// program's attributes (see rt.program) and checked.
struct ActionSchedule {
  struct Function {
    StringRef name;
    int64_t first = 0;
    int64_t count = 0;
    unsigned stage = 0;
  };
  struct Action {
    int64_t function = 0;
    int64_t microbatch = 0;
    int64_t slot = 0;
  };
  SmallVector<Function> functions;
  /// Each kernel's function, by kernel index (program order).
  std::vector<int64_t> functionOf;
  /// One list per stage.
  SmallVector<SmallVector<Action, 0>> stageActions;
  /// Per pool (`pools`): its slots.
  SmallVector<int64_t> poolSlots;
};

/// The schedule of `program`, or nullopt when it has no `stage_actions`.
/// Fails with an error naming the bad value where the attributes break the
/// contract or where the runtime would refuse a pool: a pooled buffer
/// without `stage_actions`, used on two stages or bound by an output or a
/// gradient, an action whose microbatch an input pooled by microbatch that
/// its kernels read does not hold, or that takes a pool slot (its slot
/// modulo the pool's slots) while another microbatch still has actions on
/// it.
FailureOr<std::optional<ActionSchedule>> readActionSchedule(ProgramOp program);

/// The planned peak of `stage` over its action time, the runtime's rule
/// (runtime/src/Lifetimes.cpp) implemented again from the IR: the largest
/// sum, over the kernel runs of the stage's actions in order, of the bytes
/// of the buffer instances live at the run. Only the buffers `counts`
/// accepts add up (all of them by default). Costs O(kernels + the stage's
/// actions and, per action, its function's touches of buffers whose
/// intervals cross runs): a function's own temporaries are live the same
/// way in every run, summed up once.
int64_t computeActionPeak(ProgramOp program, const ActionSchedule &schedule,
                          unsigned stage,
                          function_ref<bool(Value)> counts = nullptr);

/// computeActionPeak of every stage, the program read once.
SmallVector<int64_t>
computeActionPeaks(ProgramOp program, const ActionSchedule &schedule,
                   function_ref<bool(Value)> counts = nullptr);

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_PLANMEMORY_H
