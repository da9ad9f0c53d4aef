//===- TpcDialect.h - tpc dialect declaration -------------------*- C++ -*-===//

#ifndef DIALECTS_TPC_IR_TPCDIALECT_H
#define DIALECTS_TPC_IR_TPCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Tpc/IR/TpcDialect.h.inc"

namespace mlir::tpc {
/// Discardable attribute names shared by the importer and later passes.
inline constexpr llvm::StringLiteral kParamAttrName = "tpc.param";
inline constexpr llvm::StringLiteral kHfShapeAttrName = "tpc.hf_shape";
inline constexpr llvm::StringLiteral kInputAttrName = "tpc.input";
/// Result attribute of `@forward` naming the executable output it becomes
/// ("loss", "logits").
inline constexpr llvm::StringLiteral kOutputAttrName = "tpc.output";
inline constexpr llvm::StringLiteral kLayerAttrName = "tpc.layer";

/// Training functions (tpc-autodiff, tpc-optimizer; docs/design/training.md).
/// Result attribute of @train_step and @train_W naming the parameter a
/// gradient belongs to.
inline constexpr llvm::StringLiteral kGradAttrName = "tpc.grad";
/// Result attribute of @train_F's stash results: which backward function
/// reads the value ("B", "W" or "BW").
inline constexpr llvm::StringLiteral kStashAttrName = "tpc.stash";
/// Op attribute on the ops of @train_F (and their copies in the unrolled
/// step) whose results a transformer layer
/// stashes: per result, that layer (`tpc.layer` of the forward op whose
/// backward reads it), -1 for a result no layer stashes. The read-only
/// stash analysis (lib/Analysis) finds the stash by it after partitioning.
inline constexpr llvm::StringLiteral kStashLayerAttrName = "tpc.stash_layer";
/// Argument attribute of @train_F / @train_B's microbatch index.
inline constexpr llvm::StringLiteral kMicrobatchAttrName = "tpc.microbatch";
/// Function attribute of @train_step: its number of microbatches.
inline constexpr llvm::StringLiteral kMicrobatchesAttrName =
    "tpc.microbatches";
/// Argument and result attribute of optimizer state: a dictionary
/// {name = "exp_avg" | "exp_avg_sq" | "momentum", param = <hf name>}.
inline constexpr llvm::StringLiteral kStateAttrName = "tpc.state";
/// Result attribute of @train_step's updated parameters (the hf name).
inline constexpr llvm::StringLiteral kUpdateAttrName = "tpc.update";
/// Op attributes of the unrolled @train_step (tpc-unroll-train-step): the
/// function an inlined op came from (`tpc.phase = "train_B_chunk1"`), and
/// with tag-microbatches its iteration of the microbatch loop
/// (`tpc.microbatch_index = 2`), which pipeline schedules and the
/// one-microbatch template place by.
inline constexpr llvm::StringLiteral kPhaseAttrName = "tpc.phase";
inline constexpr llvm::StringLiteral kMicrobatchIndexAttrName =
    "tpc.microbatch_index";
/// Op attribute of a forward op's copy that tpc-remat put in the backward to
/// recompute a dropped stash value: the layer (it also keeps the copy apart
/// from the forward's op for common-subexpression passes).
inline constexpr llvm::StringLiteral kRecomputeAttrName = "tpc.recompute";
} // namespace mlir::tpc

#endif // DIALECTS_TPC_IR_TPCDIALECT_H
