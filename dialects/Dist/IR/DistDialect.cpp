//===- DistDialect.cpp - dist dialect registration ------------------------===//

#include "dialects/Dist/IR/DistDialect.h"
#include "dialects/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
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
