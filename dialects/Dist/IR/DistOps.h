//===- DistOps.h - dist dialect operations ----------------------*- C++ -*-===//

#ifndef DIALECTS_DIST_IR_DISTOPS_H
#define DIALECTS_DIST_IR_DISTOPS_H

#include "dialects/Dist/IR/DistDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/IR/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Dist/IR/DistOps.h.inc"

namespace mlir::dist {
/// Checks `sharding` against its mesh (looked up from `op`) and `type`: the
/// mesh exists and has every axis, there is one axis list per dimension, and
/// each dimension is divisible by the product of its axes' sizes. Errors are
/// reported at `op`.
LogicalResult verifySharding(Operation *op, SymbolTableCollection &symbols,
                             ShardingAttr sharding, ShapedType type);
} // namespace mlir::dist

#endif // DIALECTS_DIST_IR_DISTOPS_H
