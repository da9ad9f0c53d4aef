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
} // namespace mlir::tpc

#endif // DIALECTS_TPC_IR_TPCDIALECT_H
