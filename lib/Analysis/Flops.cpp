//===- Flops.cpp - the matrix-product FLOPs of functions ------------------===//

#include "tpc/Analysis/Report.h"

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/MatmulFlops.h"
#include "dialects/Tpc/IR/TpcDialect.h"

using namespace mlir;
using namespace mlir::tpc;

int64_t mlir::tpc::countMatmulFlops(ArrayRef<func::FuncOp> functions) {
  int64_t total = 0;
  for (func::FuncOp function : functions)
    function.walk(
        [&](Operation *op) { total = addFlops(total, getMatmulFlops(op)); });
  return total;
}

int64_t mlir::tpc::countRecomputeFlops(func::FuncOp function,
                                       std::optional<int64_t> stage) {
  int64_t total = 0;
  function.walk([&](Operation *op) {
    if (!op->hasAttr(kRecomputeAttrName))
      return;
    auto rank = op->getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
    if (!stage || (rank && rank.getInt() == *stage))
      total = addFlops(total, getMatmulFlops(op));
  });
  return total;
}

int64_t mlir::tpc::countStageMatmulFlops(func::FuncOp function,
                                         int64_t stage) {
  int64_t total = 0;
  function.walk([&](Operation *op) {
    auto rank = op->getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
    if (rank && rank.getInt() == stage)
      total = addFlops(total, getMatmulFlops(op));
  });
  return total;
}
