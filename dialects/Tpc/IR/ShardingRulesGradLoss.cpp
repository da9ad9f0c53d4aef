//===- ShardingRulesGradLoss.cpp - cross-entropy gradient, target counts --===//
//
// The logits gradient is per position, so positions are parallel; its
// vocabulary is whole (the softmax needs every logit). Counting targets sums
// over positions: a batch- or sequence-sharded count is a partial i64 sum.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

ShardingRule CrossEntropyGradOp::getShardingRule() {
  ShardingRule rule;
  // The result scales with loss_sum_grad; logits enter through the softmax
  // and labels are integers.
  rule.setLinearOnlyIn(2, getNumOperands());
  TensorFactors positions = rule.addFactorsFor(getLabels().getType());
  // The vocabulary as the forward's (ShardingRulesLoss.cpp).
  unsigned vocab = rule.addFactor(getLogits().getType().getShape().back());
  rule.blockFactor = vocab;
  TensorFactors logits = concatFactors(positions, {{vocab}});
  rule.operands = {logits, positions, {}};
  rule.results = {logits};
  return rule;
}

void CrossEntropyGradOp::adaptToShard(int64_t blocks) {
  if (blocks > 1)
    setVocabBlocksAttr(IntegerAttr::get(IntegerType::get(getContext(), 64),
                                        blocks));
}

ShardingRule CountTargetsOp::getShardingRule() {
  ShardingRule rule;
  rule.operands = {
      rule.addFactorsFor(getLabels().getType(), FactorKind::Reduction)};
  rule.results = {{}};
  return rule;
}

// Scalars only; an inverse of a partial count is not the inverse of the sum.
ShardingRule InverseCountOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}
