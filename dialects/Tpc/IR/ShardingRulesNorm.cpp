//===- ShardingRulesNorm.cpp - layer_norm, rms_norm, softmax --------------===//
//
// The normalized (last) dimension is whole: its statistics need every
// element. The leading dimensions are parallel (sequence-parallel norms).
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

/// Leading dims parallel, last dim whole; `params` vectors over the last dim.
static ShardingRule normRule(Operation *op, unsigned params) {
  ShardingRule rule;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  TensorFactors dims;
  for (int64_t size : type.getShape().drop_back())
    dims.push_back({rule.addFactor(size)});
  unsigned last = rule.addFactor(type.getShape().back(), FactorKind::Whole);
  dims.push_back({last});
  rule.operands.push_back(dims);
  for (unsigned i = 0; i < params; ++i)
    rule.operands.push_back({{last}});
  rule.results = {dims};
  return rule;
}

ShardingRule LayerNormOp::getShardingRule() { return normRule(*this, 2); }

ShardingRule RmsNormOp::getShardingRule() { return normRule(*this, 1); }

ShardingRule SoftmaxOp::getShardingRule() {
  ShardingRule rule = normRule(*this, 0);
  // The causal mask compares global query and key positions.
  if (getCausal())
    rule.factors[rule.factors.size() - 2].kind = FactorKind::Whole;
  return rule;
}
