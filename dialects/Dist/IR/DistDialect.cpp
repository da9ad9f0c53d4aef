//===- DistDialect.cpp - dist dialect registration ------------------------===//

#include "dialects/Dist/IR/DistDialect.h"
#include "dialects/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

#include "dialects/Dist/IR/DistDialect.cpp.inc"
#include "dialects/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Dist/IR/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Dist/IR/DistAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Dist/IR/DistOps.cpp.inc"
      >();
}

/// `dist.sharding` on a block argument (a function parameter) is checked
/// against the argument's type and the mesh, like `dist.shard`.
LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kUnpaddedShapeAttrName) {
    // The global shape of a parameter before dist-pad-vocab padded it.
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!shape || llvm::any_of(shape.asArrayRef(),
                               [](int64_t size) { return size < 1; }))
      return op->emitError() << "'" << name << "' of argument " << argIndex
                             << " must be an array of positive sizes but is "
                             << attr.getValue();
    return success();
  }
  if (name == kBoundaryAttrName) {
    auto from = dyn_cast<IntegerAttr>(attr.getValue());
    if (!from || from.getInt() < 0)
      return op->emitError() << "'" << name << "' of argument " << argIndex
                             << " must be the sending chunk (an integer >= 0)"
                             << " but is " << attr.getValue();
    return success();
  }
  if (name != kShardingAttrName)
    return op->emitError() << "unknown dist argument attribute '" << name
                           << "'";
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'" << name << "' of argument " << argIndex
                           << " must be a #dist.sharding but is "
                           << attr.getValue();
  Region &region = op->getRegion(regionIndex);
  // Argument attributes are checked before the function's body is: an entry
  // block without this argument is left to the function's own verifier
  // (it was read past the block's arguments: test/fuzz/corpus/mlir/
  // finding-dist-sharding-arg-beyond-entry-block.mlir).
  if (region.empty() || argIndex >= region.front().getNumArguments())
    return success();
  auto type = dyn_cast<RankedTensorType>(
      region.front().getArgument(argIndex).getType());
  if (!type || !type.hasStaticShape())
    return op->emitError() << "argument " << argIndex
                           << " has a sharding but is not a statically "
                              "shaped tensor";
  // After dist-partition the argument has its local type and the attribute
  // still describes the global layout: nothing to divide any more.
  if (op->hasAttr(kPartitionedAttrName))
    return success();
  SymbolTableCollection symbols;
  return verifySharding(op, symbols, sharding, type);
}
