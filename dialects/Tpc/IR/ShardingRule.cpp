//===- ShardingRule.cpp - per-op sharding rules ---------------------------===//

#include "dialects/Tpc/IR/ShardingRule.h"
#include "dialects/Tpc/IR/TpcInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tpc;

unsigned ShardingRule::addFactor(int64_t size, FactorKind kind) {
  factors.push_back({size, kind});
  return factors.size() - 1;
}

TensorFactors ShardingRule::addFactors(ArrayRef<int64_t> shape,
                                       FactorKind kind) {
  TensorFactors dims;
  for (int64_t size : shape)
    dims.push_back({addFactor(size, kind)});
  return dims;
}

TensorFactors ShardingRule::addFactorsFor(Type type, FactorKind kind) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return addFactors(tensor.getShape(), kind);
  return {};
}

ShardingRule mlir::tpc::elementwiseShardingRule(Operation *op,
                                                Linearity linearity) {
  ShardingRule rule;
  rule.linearity = linearity;
  TensorFactors full = rule.addFactorsFor(op->getResult(0).getType());
  auto trailing = [&](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return TensorFactors();
    return TensorFactors(full.end() - tensor.getRank(), full.end());
  };
  for (Value operand : op->getOperands())
    rule.operands.push_back(trailing(operand.getType()));
  for (Value result : op->getResults())
    rule.results.push_back(trailing(result.getType()));
  return rule;
}

TensorFactors mlir::tpc::concatFactors(ArrayRef<DimFactors> lhs,
                                       ArrayRef<DimFactors> rhs) {
  TensorFactors dims(lhs);
  dims.append(rhs.begin(), rhs.end());
  return dims;
}

LinearFactors mlir::tpc::addLinearFactors(
    ShardingRule &rule, ArrayRef<int64_t> lead, ArrayRef<int64_t> weight,
    bool outIn, FactorKind leadKind, FactorKind inKind, FactorKind outKind) {
  LinearFactors linear;
  linear.outIn = outIn;
  linear.lead = rule.addFactors(lead, leadKind);
  linear.in = rule.addFactor(outIn ? weight.back() : weight.front(), inKind);
  linear.out = rule.addFactors(outIn ? weight.drop_back() : weight.drop_front(),
                               outKind);
  return linear;
}

AttentionFactors mlir::tpc::addAttentionFactors(ShardingRule &rule,
                                                ArrayRef<int64_t> query,
                                                ArrayRef<int64_t> key,
                                                ArrayRef<int64_t> value,
                                                bool causal, bool seqMajor) {
  const unsigned headsDim = attentionHeadsDim(seqMajor),
                 seqDim = attentionSeqDim(seqMajor);
  AttentionFactors attention;
  attention.seqMajor = seqMajor;
  attention.batch = rule.addFactor(query[0]);
  attention.kvHeads = rule.addFactor(key[headsDim]);
  if (query[headsDim] != key[headsDim])
    attention.group = rule.addFactor(query[headsDim] / key[headsDim]);
  attention.seqQ = rule.addFactor(query[seqDim], causal ? FactorKind::Whole
                                                        : FactorKind::Parallel);
  attention.seqK = rule.addFactor(key[seqDim], FactorKind::Whole);
  attention.dim = rule.addFactor(query[3], FactorKind::Whole);
  attention.dimV = rule.addFactor(value[3]);
  return attention;
}

ShardingRule mlir::tpc::rotaryShardingRule(Operation *op, bool seqMajor) {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  // The angles depend on the global position; rotate_half pairs the two
  // halves of the head dim.
  TensorFactors dims;
  for (auto [dim, size] : llvm::enumerate(shape)) {
    bool whole = dim == 3 || dim == attentionSeqDim(seqMajor);
    dims.push_back(
        {rule.addFactor(size, whole ? FactorKind::Whole : FactorKind::Parallel)});
  }
  rule.operands = {dims};
  rule.results = {dims};
  return rule;
}

ShardingRule mlir::tpc::resizedDimShardingRule(Operation *op, unsigned dim,
                                               int64_t size) {
  ShardingRule rule;
  rule.linearity = Linearity::Multilinear;
  TensorFactors in = rule.addFactorsFor(op->getOperand(0).getType());
  rule.factors[in[dim][0]].kind = FactorKind::Whole;
  TensorFactors out = in;
  out[dim] = {rule.addFactor(size, FactorKind::Whole)};
  rule.operands = {in};
  rule.results = {out};
  return rule;
}

/// Factor names: i, j, ..., z, then f26, f27, ...
static void printFactor(raw_ostream &os, unsigned factor) {
  if (factor < 18)
    os << char('i' + factor);
  else
    os << 'f' << factor;
}

static void printTensors(raw_ostream &os, ArrayRef<TensorFactors> tensors) {
  os << '(';
  llvm::interleaveComma(tensors, os, [&](const TensorFactors &dims) {
    os << '[';
    llvm::interleaveComma(dims, os, [&](const DimFactors &dim) {
      if (dim.empty())
        os << '1';
      else if (dim.size() == 1)
        printFactor(os, dim.front());
      else
        llvm::interleave(
            dim, os, [&](unsigned f) { printFactor(os, f); }, "*");
    });
    os << ']';
  });
  os << ')';
}

void ShardingRule::print(raw_ostream &os) const {
  printTensors(os, operands);
  os << " -> ";
  printTensors(os, results);
  os << " {";
  llvm::interleaveComma(llvm::seq<unsigned>(0, factors.size()), os,
                        [&](unsigned f) {
                          printFactor(os, f);
                          os << '=' << factors[f].size;
                          if (factors[f].kind == FactorKind::Reduction)
                            os << " reduction";
                          else if (factors[f].kind == FactorKind::Whole)
                            os << " whole";
                          if (blockFactor == f)
                            os << " blocks";
                        });
  os << "} linearity ";
  switch (linearity) {
  case Linearity::None:
    os << "none";
    break;
  case Linearity::Additive:
    os << "additive";
    break;
  case Linearity::Multilinear:
    os << "multilinear";
    break;
  }
  if (sumsOperandsApart)
    os << " sums operands apart";
  if (linearity != Linearity::None && !linearIn.empty()) {
    os << " in";
    for (auto [i, linear] : llvm::enumerate(linearIn))
      if (linear)
        os << ' ' << i;
  }
}
