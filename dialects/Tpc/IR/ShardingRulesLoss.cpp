//===- ShardingRulesLoss.cpp - cross_entropy, loss_mean -------------------===//
//
// The cross-entropy sums over positions, so those are reduction factors: a
// batch- or sequence-sharded loss is a partial sum (and so is the count).
// Its vocabulary is whole: the logsumexp needs every logit (a
// vocab-parallel cross-entropy is a rewrite of its own, not a sharding).
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

ShardingRule CrossEntropyOp::getShardingRule() {
  ShardingRule rule;
  TensorFactors positions =
      rule.addFactorsFor(getLabels().getType(), FactorKind::Reduction);
  TensorFactors logits = positions;
  logits.push_back({rule.addFactor(getLogits().getType().getShape().back(),
                                   FactorKind::Whole)});
  rule.operands = {logits, positions};
  rule.results = {{}, {}};
  return rule;
}

// A quotient of partial sums is not the quotient of the sums.
ShardingRule LossMeanOp::getShardingRule() {
  ShardingRule rule;
  rule.operands = {{}, {}};
  rule.results = {{}};
  return rule;
}
