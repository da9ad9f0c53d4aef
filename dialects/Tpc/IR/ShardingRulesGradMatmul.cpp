//===- ShardingRulesGradMatmul.cpp - embedding, linear, sum_to gradients --===//
//
// A gradient contracts what its forward op kept. The input gradient of a
// linear contracts the output features, so a column-parallel linear gives a
// partial input gradient (Megatron's all-reduce in the backward); a weight
// gradient sums over every position, so a data- or sequence-parallel one is
// partial over that axis.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

ShardingRule EmbeddingGradOp::getShardingRule() {
  ShardingRule rule;
  // Linear in grad; ids are integers.
  rule.setLinearOnlyIn(0, getNumOperands());
  ArrayRef<int64_t> table = getResult().getType().getShape();
  // The vocabulary is in the result alone: a device computing a block of the
  // table's rows (the vocabulary-parallel table's, dist-propagate's choice
  // where it is cheaper) looks its ids up in that block, as the forward's
  // embedding does: the block factor.
  unsigned vocab = rule.addFactor(table[0]);
  rule.blockFactor = vocab;
  unsigned hidden = rule.addFactor(table[1]);
  TensorFactors positions =
      rule.addFactorsFor(getIds().getType(), FactorKind::Reduction);
  rule.operands = {concatFactors(positions, {{hidden}}), positions};
  rule.results = {{{vocab}, {hidden}}};
  return rule;
}

ShardingRule LinearInputGradOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> weight = getWeight().getType().getShape();
  ArrayRef<int64_t> lead =
      getGrad().getType().getShape().drop_back(weight.size() - 1);
  LinearFactors linear = addLinearFactors(
      rule, lead, weight, getLayout() == WeightLayout::OutIn,
      /*leadKind=*/FactorKind::Parallel, /*inKind=*/FactorKind::Parallel,
      /*outKind=*/FactorKind::Reduction);
  rule.operands = {linear.output(), linear.weight()};
  rule.results = {linear.input()};
  return rule;
}

ShardingRule LinearWeightGradOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  LinearFactors linear = addLinearFactors(
      rule, getInput().getType().getShape().drop_back(),
      getResult().getType().getShape(), getLayout() == WeightLayout::OutIn,
      /*leadKind=*/FactorKind::Reduction, /*inKind=*/FactorKind::Parallel,
      /*outKind=*/FactorKind::Parallel);
  rule.operands = {linear.input(), linear.output()};
  rule.results = {linear.weight()};
  return rule;
}

ShardingRule SumToOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> input = getInput().getType().getShape();
  int64_t kept = getResult().getType().getRank();
  TensorFactors summed =
      rule.addFactors(input.drop_back(kept), FactorKind::Reduction);
  TensorFactors result = rule.addFactors(input.take_back(kept));
  rule.operands = {concatFactors(summed, result)};
  rule.results = {result};
  return rule;
}
