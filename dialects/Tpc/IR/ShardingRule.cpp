//===- ShardingRule.cpp - per-op sharding rules ---------------------------===//

#include "dialects/Tpc/IR/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tpc;

unsigned ShardingRule::addFactor(int64_t size, FactorKind kind) {
  factors.push_back({size, kind});
  return factors.size() - 1;
}

TensorFactors ShardingRule::addFactorsFor(Type type, FactorKind kind) {
  TensorFactors dims;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    for (int64_t size : tensor.getShape())
      dims.push_back({addFactor(size, kind)});
  return dims;
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
  if (linearity != Linearity::None && !linearIn.empty()) {
    os << " in";
    for (auto [i, linear] : llvm::enumerate(linearIn))
      if (linear)
        os << ' ' << i;
  }
}
