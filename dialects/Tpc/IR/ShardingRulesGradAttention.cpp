//===- ShardingRulesGradAttention.cpp - attention and rotary gradients ----===//
//
// The attention gradient splits by batch and kv heads only. Each of its
// other factors is summed by some gradient and kept by another: the key and
// value gradients sum over the query positions and over the query heads of
// a group, which the query gradient keeps, and the score gradient
// (grad · vᵀ) sums over the value head dim, which the value gradient keeps.
// Splitting one would leave some results split and the others partial sums,
// which no factor kind states, so these are whole, like the key sequence and
// head dim of the forward op.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

ShardingRule AttentionGradOp::getShardingRule() {
  ShardingRule rule;
  // Every gradient is linear in grad; q, k and v enter through the softmax.
  rule.setLinearOnlyIn(0, getNumOperands());
  AttentionFactors attention = addAttentionFactors(
      rule, getQuery().getType().getShape(), getKey().getType().getShape(),
      getValue().getType().getShape(), getCausal(), getSeqMajor());
  rule.factors[attention.seqQ].kind = FactorKind::Whole;
  if (attention.group)
    rule.factors[*attention.group].kind = FactorKind::Whole;
  rule.factors[attention.dimV].kind = FactorKind::Whole;
  rule.operands = {attention.output(), attention.query(), attention.key(),
                   attention.value()};
  if (getOutput()) // the forward's result and log-sum-exps
    rule.operands.append({attention.output(), attention.lse()});
  if (getBlock())
    rule.operands.push_back({});
  rule.results = {attention.query(), attention.key(), attention.value()};
  return rule;
}

ShardingRule RotaryGradOp::getShardingRule() {
  return rotaryShardingRule(*this, getSeqMajor());
}
