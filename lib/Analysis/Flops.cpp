//===- Flops.cpp - the matrix-product FLOPs of functions ------------------===//

#include "tpc/Analysis/Report.h"

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/MatmulFlops.h"
#include "dialects/Tpc/IR/TpcDialect.h"

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// The sum of `cost` over the ops of `function` that `keep` accepts.
template <typename Keep>
int64_t sumFlops(func::FuncOp function, int64_t (*cost)(Operation *),
                 Keep keep) {
  int64_t total = 0;
  function.walk([&](Operation *op) {
    if (keep(op))
      total = addFlops(total, cost(op));
  });
  return total;
}

/// Whether `op` belongs to pipeline stage `stage` (every op without one).
bool inStage(Operation *op, std::optional<int64_t> stage) {
  if (!stage)
    return true;
  auto rank = op->getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
  return rank && rank.getInt() == *stage;
}

} // namespace

int64_t mlir::tpc::countMatmulFlops(ArrayRef<func::FuncOp> functions) {
  int64_t total = 0;
  for (func::FuncOp function : functions)
    total = addFlops(total, sumFlops(function, getMatmulFlops,
                                     [](Operation *) { return true; }));
  return total;
}

int64_t mlir::tpc::countRecomputeFlops(func::FuncOp function,
                                       std::optional<int64_t> stage) {
  return sumFlops(function, getMatmulFlops, [&](Operation *op) {
    return op->hasAttr(kRecomputeAttrName) && inStage(op, stage);
  });
}

int64_t mlir::tpc::countStageMatmulFlops(func::FuncOp function,
                                         int64_t stage) {
  return sumFlops(function, getMatmulFlops,
                  [&](Operation *op) { return inStage(op, stage); });
}

int64_t mlir::tpc::countMaskedFlops(func::FuncOp function,
                                    std::optional<int64_t> stage) {
  return sumFlops(function, getMaskedMatmulFlops,
                  [&](Operation *op) { return inStage(op, stage); });
}
