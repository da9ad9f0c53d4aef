//===- RtDialect.cpp - rt dialect registration ----------------------------===//

#include "dialects/Rt/IR/RtDialect.h"
#include "dialects/Rt/IR/RtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rt;

#include "dialects/Rt/IR/RtDialect.cpp.inc"
#include "dialects/Rt/IR/RtEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Rt/IR/RtAttrs.cpp.inc"

void RtDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Rt/IR/RtAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Rt/IR/RtOps.cpp.inc"
      >();
}

/// The module attributes hold the executable's uint64 fields as i64: sizes
/// must be non-negative, the seed is any 64-bit pattern.
LogicalResult RtDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != kArenaBytesAttrName && name != kPlannedPeakBytesAttrName &&
      name != kSeedAttrName)
    return op->emitError() << "unknown rt attribute '" << name << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << name
                           << "' is a module attribute, but is on '"
                           << op->getName() << "'";
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isSignlessInteger(64))
    return op->emitError() << "'" << name << "' must be an i64 integer but is "
                           << attr.getValue();
  // The seed is a full 64-bit value (it may print as a negative i64).
  if (name != kSeedAttrName && value.getInt() < 0)
    return op->emitError() << "'" << name << "' must be non-negative but is "
                           << value.getInt();
  return success();
}
