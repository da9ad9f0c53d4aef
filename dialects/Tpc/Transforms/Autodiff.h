//===- Autodiff.h - training functions from @forward ------------*- C++ -*-===//
//
// The entry points of tpc-autodiff for other tools (tpc-compile --report):
// building the training functions, and reading the stash they define.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_TRANSFORMS_AUTODIFF_H
#define DIALECTS_TPC_TRANSFORMS_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tpc {

/// The functions tpc-autodiff adds next to @forward.
inline constexpr llvm::StringLiteral kTrainForwardName = "train_F";
inline constexpr llvm::StringLiteral kTrainInputGradName = "train_B";
inline constexpr llvm::StringLiteral kTrainWeightGradName = "train_W";
inline constexpr llvm::StringLiteral kTrainStepName = "train_step";

/// Builds @train_F, @train_B, @train_W and the driver @train_step from
/// @forward for `microbatches` microbatches (docs/design/training.md).
/// Emits an error (and leaves `module` unchanged) when it cannot.
LogicalResult buildTrainingFunctions(ModuleOp module, unsigned microbatches);

/// What the stash of @train_F holds, per transformer layer: a value belongs
/// to the layer (`tpc.layer`) of the forward op whose backward reads it.
struct StashSummary {
  struct Entry {
    int64_t values = 0;
    int64_t bytes = 0;
  };
  llvm::MapVector<int64_t, Entry> layers;
  /// Values read by ops outside every layer (embedding, final norm, head).
  Entry outside;
  Entry total;
};

/// Sums the stash results of `trainF` (an @train_F built by
/// buildTrainingFunctions).
StashSummary summarizeStash(func::FuncOp trainF);

/// The stash of the model in `module` (its @forward) for one microbatch of
/// `microbatches`, as tpc-autodiff would build it; `module` is not changed.
FailureOr<StashSummary> computeStashSummary(ModuleOp module,
                                            unsigned microbatches = 1);

/// The stash bytes of transformer layer `layer` (computeStashSummary); 0 for
/// a layer that stashes nothing or does not exist.
FailureOr<int64_t> computeLayerStashBytes(ModuleOp module, int64_t layer,
                                          unsigned microbatches = 1);

} // namespace mlir::tpc

#endif // DIALECTS_TPC_TRANSFORMS_AUTODIFF_H
