//===- ShardingRulesElementwise.cpp - gelu, silu, dropout, add, mul, cast -===//
//
// Every dimension is parallel. Dropout too: its mask is drawn at the global
// index of each element, so a shard draws its slice of the single-device
// mask.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

ShardingRule GeluOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}

ShardingRule SiluOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::None);
}

// The same mask scales both terms of a sum.
ShardingRule DropoutOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::Multilinear);
}

ShardingRule AddOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::Additive);
}

ShardingRule MulOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::Multilinear);
}

ShardingRule CastOp::getShardingRule() {
  return elementwiseShardingRule(*this, Linearity::Multilinear);
}
