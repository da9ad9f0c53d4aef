//===- ShardingRulesGradElementwise.cpp - activation and dropout gradients ===//
//
// Every dimension is parallel. The dropout mask is drawn at the global index
// of each element, so a shard draws its slice of the single-device mask. An
// activation gradient is linear in the incoming gradient, not in the
// forward input it differentiates at.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

/// Elementwise, linear in the first operand alone.
static ShardingRule linearInFirstRule(Operation *op) {
  ShardingRule rule = elementwiseShardingRule(op, Linearity::None);
  rule.setLinearOnlyIn(0, op->getNumOperands());
  return rule;
}

ShardingRule GeluGradOp::getShardingRule() { return linearInFirstRule(*this); }

ShardingRule SiluGradOp::getShardingRule() { return linearInFirstRule(*this); }

// No float operand (the block index is a scalar).
ShardingRule DropoutMaskOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}

// Linear in the input; the mask is bytes.
ShardingRule ApplyMaskOp::getShardingRule() { return linearInFirstRule(*this); }
