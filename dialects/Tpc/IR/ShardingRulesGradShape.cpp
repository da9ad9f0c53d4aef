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
  // One group (multi-query attention's kv-head): the dimension is the
  // repeats alone, so splitting it makes the result a partial sum.
  unsigned repeats = rule.addFactor(getRepeats(), FactorKind::Reduction);
  if (getType().getDimSize(getDim()) == 1)
    in[getDim()] = {repeats};
  else
    in[getDim()].push_back(repeats);
  rule.operands = {in};
  rule.results = {out};
  return rule;
}

// Each device sums its share of the copies (as RepeatOp::adaptToShard).
void SumGroupsOp::adaptToShard(int64_t) {
  uint64_t dim = getDim();
  setRepeats(getInput().getType().getDimSize(dim) /
             getResult().getType().getDimSize(dim));
}
