//===- ShardingRulesShape.cpp - reshape, transpose, slice, repeat ---------===//
//
// Views are linear. A reshape shares the factors its two shapes have in
// common, so that splitting [b, s, heads * head_dim] by its last dimension
// splits the heads of [b, s, heads, head_dim].
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

ShardingRule ReshapeOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  TensorFactors inDims(in.size()), outDims(out.size());
  // Walks both shapes, cutting the next factor at the smaller of the two
  // remaining extents while one divides the other.
  size_t i = 0, o = 0;
  int64_t inLeft = in.empty() ? 1 : in[0];
  int64_t outLeft = out.empty() ? 1 : out[0];
  auto advance = [](ArrayRef<int64_t> shape, size_t &d, int64_t &left) {
    while (left == 1 && d < shape.size())
      left = ++d < shape.size() ? shape[d] : 1;
  };
  advance(in, i, inLeft);
  advance(out, o, outLeft);
  while (i < in.size() && o < out.size()) {
    int64_t size = std::min(inLeft, outLeft);
    if (inLeft % size != 0 || outLeft % size != 0)
      break;
    unsigned f = rule.addFactor(size);
    inDims[i].push_back(f);
    outDims[o].push_back(f);
    inLeft /= size;
    outLeft /= size;
    advance(in, i, inLeft);
    advance(out, o, outLeft);
  }
  // The rest mixes dimensions whose sizes do not nest: keep it whole.
  if (i < in.size()) {
    unsigned f = rule.addFactor(inLeft, FactorKind::Whole);
    for (size_t d = i; d < in.size(); ++d)
      inDims[d].push_back(d == i ? f
                                 : rule.addFactor(in[d], FactorKind::Whole));
    unsigned g = rule.addFactor(outLeft, FactorKind::Whole);
    for (size_t d = o; d < out.size(); ++d)
      outDims[d].push_back(d == o ? g
                                  : rule.addFactor(out[d], FactorKind::Whole));
  }
  rule.operands = {inDims};
  rule.results = {outDims};
  return rule;
}

ShardingRule TransposeOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  TensorFactors in = rule.addFactorsFor(getInput().getType());
  TensorFactors out;
  for (int64_t d : getPermutation())
    out.push_back(in[d]);
  rule.operands = {in};
  rule.results = {out};
  return rule;
}

// Where the copies of a single index are split (multi-query attention's
// kv-head, a replicated K/V weight's copies), each device repeats its share.
void RepeatOp::adaptToShard(int64_t) {
  uint64_t dim = getDim();
  setRepeats(getResult().getType().getDimSize(dim) /
             getInput().getType().getDimSize(dim));
}

// The sliced dimension is whole on both sides: a window of a split
// dimension is not a split of the window.
ShardingRule SliceOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  TensorFactors in = rule.addFactorsFor(getInput().getType());
  uint64_t dim = getDim();
  rule.factors[in[dim][0]].kind = FactorKind::Whole;
  TensorFactors out = in;
  out[dim] = {rule.addFactor(getSize(), FactorKind::Whole)};
  rule.operands = {in};
  rule.results = {out};
  return rule;
}

// Result index i along the dimension reads i / repeats: the dimension is
// [input, repeats].
ShardingRule RepeatOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  TensorFactors in = rule.addFactorsFor(getInput().getType());
  TensorFactors out = in;
  uint64_t dim = getDim();
  // A single index repeated (multi-query attention's kv-head): the
  // dimension is the repeats alone, and may be split.
  unsigned repeats = rule.addFactor(getRepeats());
  if (getInput().getType().getDimSize(dim) == 1)
    out[dim] = {repeats};
  else
    out[dim].push_back(repeats);
  rule.operands = {in};
  rule.results = {out};
  return rule;
}
