//===- ShardingRulesMatmul.cpp - embedding, linear, batch_matmul ----------===//
//
// The contracted dimension is a reduction factor: splitting it leaves each
// device a partial sum (row-parallel linear). The embedding's vocabulary is
// one too: a device holding some rows of the table contributes those rows
// and zeros elsewhere (vocab-parallel embedding).
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

ShardingRule EmbeddingOp::getShardingRule() {
  ShardingRule rule;
  // Linear in the table only: ids are integers.
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> table = shapeOf(getTable());
  // Split, each device looks up the ids in its block of the table (its
  // kernel must know which: the block factor) and the sums add up the rest.
  unsigned vocab = rule.addFactor(table[0], FactorKind::Reduction);
  rule.blockFactor = vocab;
  unsigned hidden = rule.addFactor(table[1]);
  TensorFactors ids = rule.addFactorsFor(getIds().getType());
  TensorFactors result = ids;
  result.push_back({hidden});
  rule.operands = {{{vocab}, {hidden}}, ids};
  rule.results = {result};
  return rule;
}

ShardingRule LinearOp::getShardingRule() {
  ShardingRule rule;
  // A bias would be added once per partial sum, to a partial operand or to
  // a result partial over the contracted dim alike: with a bias, the
  // contracted dim is whole (Megatron's row-parallel layer adds its bias
  // after the reduction: dist-annotate-megatron splits it off).
  rule.linearity = getBias() ? Linearity::None : Linearity::Multilinear;
  ArrayRef<int64_t> input = shapeOf(getInput());
  TensorFactors lead;
  for (int64_t size : input.drop_back())
    lead.push_back({rule.addFactor(size)});
  unsigned in = rule.addFactor(
      input.back(), getBias() ? FactorKind::Whole : FactorKind::Reduction);
  TensorFactors out;
  bool outIn = getLayout() == WeightLayout::OutIn;
  ArrayRef<int64_t> weight = shapeOf(getWeight());
  for (int64_t size : outIn ? weight.drop_back() : weight.drop_front())
    out.push_back({rule.addFactor(size)});
  TensorFactors inputDims = lead;
  inputDims.push_back({in});
  TensorFactors weightDims = out;
  if (outIn)
    weightDims.push_back({in});
  else
    weightDims.insert(weightDims.begin(), {in});
  TensorFactors result = lead;
  result.append(out.begin(), out.end());
  rule.operands = {inputDims, weightDims};
  if (getBias())
    rule.operands.push_back(out);
  rule.results = {result};
  return rule;
}

ShardingRule BatchMatmulOp::getShardingRule() {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> result = shapeOf(getResult());
  TensorFactors batch;
  for (int64_t size : result.drop_back(2))
    batch.push_back({rule.addFactor(size)});
  unsigned m = rule.addFactor(result[result.size() - 2]);
  unsigned n = rule.addFactor(result.back());
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  unsigned k =
      rule.addFactor(getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back(),
                     FactorKind::Reduction);
  auto matrix = [&](unsigned row, unsigned col, bool transposed) {
    TensorFactors dims = batch;
    dims.push_back({transposed ? col : row});
    dims.push_back({transposed ? row : col});
    return dims;
  };
  rule.operands = {matrix(m, k, getTransposeLhs()),
                   matrix(k, n, getTransposeRhs())};
  rule.results = {matrix(m, n, false)};
  return rule;
}
