//===- TestShardingRules.cpp - tpc-test-sharding-rules --------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Passes.h"

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCTESTSHARDINGRULES
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {

struct TestShardingRulesPass
    : public tpc::impl::TpcTestShardingRulesBase<TestShardingRulesPass> {
  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    getOperation()->walk([&](Operation *op) {
      if (!isa<TpcDialect>(op->getDialect()))
        return;
      os << op->getName() << ": ";
      if (auto sharding = dyn_cast<TpcShardingOpInterface>(op))
        sharding.getShardingRule().print(os);
      else
        os << "no sharding rule";
      os << '\n';
    });
    markAllAnalysesPreserved();
  }
};

} // namespace
