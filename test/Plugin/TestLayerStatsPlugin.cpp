//===- TestLayerStatsPlugin.cpp - an example tpc pass plugin --------------===//
//
// `tpc-test-layer-stats` reports, as remarks, how many ops each function has
// in total and per transformer layer (the `tpc.layer` attribute). It shows the
// minimum a plugin needs: a pass and `mlirGetPassPluginInfo`.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

namespace {
struct TestLayerStatsPass
    : PassWrapper<TestLayerStatsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLayerStatsPass)

  StringRef getArgument() const final { return "tpc-test-layer-stats"; }
  StringRef getDescription() const final {
    return "Reports the number of ops per transformer layer (example plugin)";
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    llvm::MapVector<int64_t, int64_t> perLayer;
    int64_t total = 0;
    func.walk([&](Operation *op) {
      if (op == func.getOperation())
        return;
      ++total;
      if (auto layer = op->getAttrOfType<IntegerAttr>(tpc::kLayerAttrName))
        ++perLayer[layer.getInt()];
    });
    std::string text;
    llvm::raw_string_ostream os(text);
    os << func.getSymName() << ": " << total << " ops, " << perLayer.size()
       << " layers";
    for (auto [layer, count] : perLayer)
      os << "; layer " << layer << ": " << count;
    func.emitRemark(text);
  }
};
} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TpcTestPlugin", LLVM_VERSION_STRING,
          []() { PassRegistration<TestLayerStatsPass>(); }};
}
