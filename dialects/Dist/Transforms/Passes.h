//===- Passes.h - dist dialect passes ---------------------------*- C++ -*-===//

#ifndef DIALECTS_DIST_TRANSFORMS_PASSES_H
#define DIALECTS_DIST_TRANSFORMS_PASSES_H

#include "dialects/Dist/IR/DistDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {

/// The pipeline passes' attributes (Passes.td): an op's (virtual) stage, also
/// on the chunk functions and calls of dist-pipeline-outline; the split's
/// module attribute; a chunk argument's sending chunk.
inline constexpr llvm::StringLiteral kStageAttrName = "dist.stage";
inline constexpr llvm::StringLiteral kPipelineAttrName = "dist.pipeline";
inline constexpr llvm::StringLiteral kBoundaryAttrName =
    DistDialect::kBoundaryAttrName;
/// On every op of a step cut by dist-pipeline-stages: the pipeline rank (the
/// coordinate on the mesh axis `pp`) that runs it.
inline constexpr llvm::StringLiteral kPipelineRankAttrName =
    "dist.pipeline_rank";
/// On dist-pipeline-stages' sends and receives: what they move, "activation"
/// or "gradient" (a schedule's transfer, per microbatch) or "tied" (a tied
/// parameter's gradient, summed over its group once per step).
inline constexpr llvm::StringLiteral kTransferAttrName = "dist.transfer";

/// Template mode (dist-pipeline-stages=functions=true): on each op emitted
/// for a rank, the function that runs it ("F chunk 2", "recv act chunk 1",
/// "epilogue"; none: the rank's prologue), and on the step each rank's
/// action list (`{functions = [names], actions = array<i64: function,
/// microbatch, ...>}` per rank).
inline constexpr llvm::StringLiteral kFunctionAttrName = "dist.function";
inline constexpr llvm::StringLiteral kStageActionsAttrName =
    "dist.stage_actions";
inline constexpr llvm::StringLiteral kEpilogueFunctionName = "epilogue";

#define GEN_PASS_DECL
#include "dialects/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Dist/Transforms/Passes.h.inc"

} // namespace mlir::dist

#endif // DIALECTS_DIST_TRANSFORMS_PASSES_H
