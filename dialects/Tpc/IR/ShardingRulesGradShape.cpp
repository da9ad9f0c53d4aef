//===- ShardingRulesGradShape.cpp - pad, sum_groups -----------------------===//
//
// The gradients of slice and repeat, linear like them. A padded dimension
// is whole, like a sliced one. Summing groups of a dimension is the
// transpose of repeating it: the input dimension is [result, repeats] and
// the repeats are summed.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

ShardingRule PadOp::getShardingRule() {
  return resizedDimShardingRule(*this, getDim(), getSize());
}

ShardingRule SumGroupsOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  TensorFactors out = rule.addFactorsFor(getResult().getType());
  TensorFactors in = out;
  in[getDim()].push_back(rule.addFactor(getRepeats(), FactorKind::Reduction));
  rule.operands = {in};
  rule.results = {out};
  return rule;
}
