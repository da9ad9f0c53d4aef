//===- ShardingRulesGradNorm.cpp - norm and softmax gradients -------------===//
//
// As in the forward ops, the normalized (last) dimension is whole: the
// gradients take means over it. The input gradients keep the positions
// parallel; the parameter gradients sum over them, so a sequence-parallel
// norm gives partial weight gradients. Each gradient is linear in the
// incoming gradient alone: the forward input and output enter through the
// statistics.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

/// `[positions..., normalized]` of `type`: positions of `positionKind`, the
/// normalized dim whole.
static TensorFactors normFactors(ShardingRule &rule, RankedTensorType type,
                                 FactorKind positionKind) {
  TensorFactors dims =
      rule.addFactors(type.getShape().drop_back(), positionKind);
  dims.push_back({rule.addFactor(type.getShape().back(), FactorKind::Whole)});
  return dims;
}

/// `(grad, input or output[, weight]) -> [input]`, linear in grad.
static ShardingRule inputGradRule(Operation *op) {
  ShardingRule rule;
  rule.setLinearOnlyIn(0, op->getNumOperands());
  TensorFactors dims =
      normFactors(rule, cast<RankedTensorType>(op->getResult(0).getType()),
                  FactorKind::Parallel);
  rule.operands = {dims, dims};
  if (op->getNumOperands() == 3)
    rule.operands.push_back({dims.back()});
  rule.results = {dims};
  return rule;
}

/// `(grad, input) -> [normalized]` per result, summed over the positions;
/// linear in grad.
static ShardingRule paramGradRule(Operation *op) {
  ShardingRule rule;
  rule.setLinearOnlyIn(0, op->getNumOperands());
  TensorFactors dims =
      normFactors(rule, cast<RankedTensorType>(op->getOperand(0).getType()),
                  FactorKind::Reduction);
  rule.operands = {dims, dims};
  rule.results.assign(op->getNumResults(), {dims.back()});
  return rule;
}

ShardingRule LayerNormInputGradOp::getShardingRule() {
  return inputGradRule(*this);
}

ShardingRule LayerNormParamGradOp::getShardingRule() {
  return paramGradRule(*this);
}

ShardingRule RmsNormInputGradOp::getShardingRule() {
  return inputGradRule(*this);
}

ShardingRule RmsNormParamGradOp::getShardingRule() {
  return paramGradRule(*this);
}

// Rows are independent: a causally masked element has y = 0, so unlike the
// causal softmax no position is compared and the rows stay parallel.
ShardingRule SoftmaxGradOp::getShardingRule() { return inputGradRule(*this); }
