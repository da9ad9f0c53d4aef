//===- TpcDialect.cpp - tpc dialect registration --------------------------===//

#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tpc;

#include "dialects/Tpc/IR/TpcDialect.cpp.inc"
#include "dialects/Tpc/IR/TpcEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tpc/IR/TpcAttrs.cpp.inc"

namespace {
/// Every tpc op is a value-semantics computation without regions: the
/// training driver's calls to F, B and W can be inlined (tpc-compile does,
/// before unrolling the microbatch loop and lowering to rt).
struct TpcInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void TpcDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Tpc/IR/TpcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Tpc/IR/TpcOps.cpp.inc"
      >();
  addInterfaces<TpcInlinerInterface>();
}
