//===- StripDropout.cpp - tpc-strip-dropout -------------------------------===//
//
// Evaluation as Hugging Face's model.eval() runs it (issue 15): a forward
// pass without dropout. Each tpc.dropout becomes its input and each fused
// attention's dropout is turned off; nothing else changes, so the outputs
// are the training forward's with every rate at 0.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCSTRIPDROPOUT
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {
struct StripDropoutPass
    : public tpc::impl::TpcStripDropoutBase<StripDropoutPass> {
  using TpcStripDropoutBase::TpcStripDropoutBase;

  void runOnOperation() override {
    // (A module without the function has nothing to evaluate: whoever
    // needs it says so.)
    auto fn = getOperation().lookupSymbol<func::FuncOp>(function);
    if (!fn || fn.isExternal())
      return;
    Builder builder(&getContext());
    fn.walk([&](Operation *op) {
      if (auto dropout = dyn_cast<DropoutOp>(op)) {
        dropout.getResult().replaceAllUsesWith(dropout.getInput());
        dropout.erase();
      } else if (auto attention = dyn_cast<AttentionOp>(op)) {
        attention.setDropoutRateAttr(builder.getF64FloatAttr(0.0));
        attention.setDropoutStreamAttr(builder.getI64IntegerAttr(0));
      }
    });
  }
};
} // namespace
