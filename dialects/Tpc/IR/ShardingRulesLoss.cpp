//===- ShardingRulesLoss.cpp - cross_entropy, loss_mean -------------------===//
//
// The cross-entropy sums over positions, so those are reduction factors: a
// batch- or sequence-sharded loss is a partial sum (and so is the count).
// Its vocabulary may be split: the kernel combines the blocks itself (the
// max, the sum of exponentials and the target's logit all-reduced), so the
// results stay whole; the op is told how many blocks (`blocks`).
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
  unsigned vocab = rule.addFactor(getLogits().getType().getShape().back());
  logits.push_back({vocab});
  rule.blockFactor = vocab;
  rule.operands = {logits, positions};
  rule.results = {{}, {}};
  return rule;
}

void CrossEntropyOp::adaptToShard(int64_t blocks) {
  if (blocks > 1)
    setVocabBlocksAttr(IntegerAttr::get(IntegerType::get(getContext(), 64),
                                        blocks));
}

// A quotient of partial sums is not the quotient of the sums.
ShardingRule LossMeanOp::getShardingRule() {
  ShardingRule rule;
  rule.operands = {{}, {}};
  rule.results = {{}};
  return rule;
}
