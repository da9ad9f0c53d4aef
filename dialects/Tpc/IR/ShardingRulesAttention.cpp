//===- ShardingRulesAttention.cpp - attention, rotary ---------------------===//
//
// Attention splits by batch and heads. A query head dimension is
// [kv_heads, group] (query head h reads kv head h / group), so splitting the
// heads splits the kv heads too (grouped-query attention under tensor
// parallelism). The softmax over keys makes the key sequence and head
// dimensions whole.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

ShardingRule AttentionOp::getShardingRule() {
  ShardingRule rule;
  ArrayRef<int64_t> q = shapeOf(getQuery());
  ArrayRef<int64_t> k = shapeOf(getKey());
  ArrayRef<int64_t> v = shapeOf(getValue());
  unsigned batch = rule.addFactor(q[0]);
  unsigned kvHeads = rule.addFactor(k[1]);
  DimFactors heads = {kvHeads};
  if (q[1] != k[1])
    heads.push_back(rule.addFactor(q[1] / k[1]));
  // The causal mask compares global positions.
  unsigned seqQ = rule.addFactor(q[2], getCausal() ? FactorKind::Whole
                                                   : FactorKind::Parallel);
  unsigned seqK = rule.addFactor(k[2], FactorKind::Whole);
  unsigned dim = rule.addFactor(q[3], FactorKind::Whole);
  unsigned dimV = rule.addFactor(v[3]);
  rule.operands = {{{batch}, heads, {seqQ}, {dim}},
                   {{batch}, {kvHeads}, {seqK}, {dim}},
                   {{batch}, {kvHeads}, {seqK}, {dimV}}};
  if (getBlock())
    rule.operands.push_back({});
  rule.results = {{{batch}, heads, {seqQ}, {dimV}}};
  return rule;
}

ShardingRule RotaryOp::getShardingRule() {
  ShardingRule rule;
  // Linear in x: the angles depend on positions only.
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> x = shapeOf(getInput());
  // Angles depend on the global position; rotate_half pairs the two halves.
  TensorFactors dims = {{rule.addFactor(x[0])},
                        {rule.addFactor(x[1])},
                        {rule.addFactor(x[2], FactorKind::Whole)},
                        {rule.addFactor(x[3], FactorKind::Whole)}};
  rule.operands = {dims};
  rule.results = {dims};
  return rule;
}
