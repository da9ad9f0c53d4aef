//===- ShardingRulesOptimizer.cpp - norm, clipping, schedule, updates -----===//
//
// The updates are elementwise: parameter, gradient and optimizer states
// share every factor, so a sharded parameter updates its own shard with the
// replicated scalars. None is linear: a partial gradient is reduced before
// the update, and before its squares are summed.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

// Every dim of every input is summed, each input with factors of its own: a
// split gradient gives a partial sum of squares. The result is partial over
// the axes splitting any input, so inputs not split alike must not share one
// op (a replicated one would be counted once per device).
ShardingRule SumSquaresOp::getShardingRule() {
  ShardingRule rule;
  for (Value input : getInputs())
    rule.operands.push_back(
        rule.addFactorsFor(input.getType(), FactorKind::Reduction));
  rule.results = {{}};
  rule.sumsOperandsApart = true;
  return rule;
}

// Scalars only.
ShardingRule ClipCoefficientOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}

// Scalars only.
ShardingRule LrScheduleOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}

ShardingRule AdamWUpdateOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}

ShardingRule SgdUpdateOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}
