//===- TpcDialect.cpp - tpc dialect registration --------------------------===//

#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tpc;

#include "dialects/Tpc/IR/TpcDialect.cpp.inc"
#include "dialects/Tpc/IR/TpcEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tpc/IR/TpcAttrs.cpp.inc"

void TpcDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Tpc/IR/TpcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Tpc/IR/TpcOps.cpp.inc"
      >();
}
