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

#include <optional>

namespace mlir::tpc {

/// The functions tpc-autodiff adds next to @forward.
inline constexpr llvm::StringLiteral kTrainForwardName = "train_F";
inline constexpr llvm::StringLiteral kTrainInputGradName = "train_B";
inline constexpr llvm::StringLiteral kTrainWeightGradName = "train_W";
inline constexpr llvm::StringLiteral kTrainStepName = "train_step";

/// The B function of the same function as W function `name` (@train_W ->
/// @train_B, @train_W_chunk1 -> @train_B_chunk1), or nothing when `name`
/// names no W function.
inline std::optional<std::string> inputGradOfWeightGrad(StringRef name) {
  if (!name.consume_front(kTrainWeightGradName) ||
      (!name.empty() && !name.starts_with("_")))
    return std::nullopt;
  return (kTrainInputGradName + name).str();
}

/// The phase whose readers of a value share its gathers and reductions
/// (dist-propagate, dist-partition): a W function's is its B's
/// (tpc-unroll-train-step runs each layer's W right after its B), any
/// other function's its own.
inline std::string phaseSharingCollectives(StringRef phase) {
  if (std::optional<std::string> inputGrad = inputGradOfWeightGrad(phase))
    return *inputGrad;
  return phase.str();
}

/// Builds @train_F, @train_B, @train_W and the driver @train_step from
/// @forward for `microbatches` microbatches (docs/design/training.md).
/// Emits an error (and leaves `module` unchanged) when it cannot.
LogicalResult buildTrainingFunctions(ModuleOp module, unsigned microbatches);

/// The training functions of one function of the model, and how to call
/// them (docs/design/training.md; pipeline chunks:
/// docs/design/pipeline-schedules.md):
///
///   F(args..., microbatch) -> (outputs..., stash...)
///   B(F's args..., seeds..., F's results at stashB...)
///       -> (gradients of activationArgs..., dYs...)
///   W(F's args at weightArgs..., F's results at stashW..., dYs...)
///       -> one f32 gradient per parameter argument (paramArgs' order)
///
/// The outputs are (loss_sum, count) when the function computes the loss,
/// and its seed the scalar dloss_sum; otherwise the outputs are the
/// activations it hands on (its results, on microbatch shapes) and the seeds
/// their gradients, one each. F's batched arguments (input_ids, labels,
/// activations) have the microbatch's leading dimension.
struct TrainingFunctions {
  func::FuncOp forward, inputGrad, weightGrad;
  bool computesLoss = false;
  /// The loss's ignore_index (computesLoss only).
  IntegerAttr ignoreIndex;
  /// F's results before the stash.
  unsigned numOutputs = 0;
  /// Argument numbers (the same in the source and in F) by role.
  SmallVector<unsigned> paramArgs, activationArgs;
  std::optional<unsigned> idsArg, labelsArg;
  SmallVector<unsigned> weightArgs;
  /// F's result numbers B and W read, in the order they take them.
  SmallVector<unsigned> stashB, stashW;
};

/// Builds F, B and W of `chunk`, a function of @forward's model that
/// computes the loss or hands activations on (arguments: parameters,
/// input_ids, labels, and float tensors received from earlier chunks), as
/// `@train_F_<suffix>`, `@train_B_<suffix>`, `@train_W_<suffix>`. Emits an
/// error and builds nothing when it cannot.
FailureOr<TrainingFunctions> buildChunkTrainingFunctions(func::FuncOp chunk,
                                                         unsigned microbatches,
                                                         StringRef suffix);

/// The microbatch of `full` (leading dimension the batch) that starts at
/// row `offset` (an index) and has `rows` rows.
Value sliceMicrobatch(OpBuilder &builder, Location loc, Value full,
                      Value offset, int64_t rows);

/// Builds the driver @train_step of a @forward that only calls functions
/// (dist-pipeline-outline's chunks): F, B and W of each callee
/// (buildChunkTrainingFunctions), and a loop over the microbatches that
/// calls every F in order, every B in reverse, each W after its B, and
/// accumulates each chunk's parameter gradients on their own; a parameter
/// that several chunks read (a tied embedding) gets the sum of their
/// accumulated gradients once, after the loop.
LogicalResult buildChunkedTrainingStep(ModuleOp module, func::FuncOp forward,
                                       unsigned microbatches);

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
