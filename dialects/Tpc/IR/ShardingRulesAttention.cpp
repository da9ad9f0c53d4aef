//===- ShardingRulesAttention.cpp - attention, rotary ---------------------===//
//
// Attention splits by batch and heads. A query head dimension is
// [kv_heads, group] (query head h reads kv head h / group), so splitting the
// heads splits the kv heads too (grouped-query attention under tensor
// parallelism). The softmax over keys makes the key sequence and head
// dimensions whole.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/ShardingRule.h"
#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

ShardingRule AttentionOp::getShardingRule() {
  ShardingRule rule;
  AttentionFactors attention = addAttentionFactors(
      rule, shapeOf(getQuery()), shapeOf(getKey()), shapeOf(getValue()),
      getCausal(), getSeqMajor());
  rule.operands = {attention.query(), attention.key(), attention.value()};
  if (getBlock())
    rule.operands.push_back({});
  rule.results = {attention.output()};
  if (getLse())
    rule.results.push_back(attention.lse());
  return rule;
}

ShardingRule RotaryOp::getShardingRule() {
  return rotaryShardingRule(*this, getSeqMajor());
}
