//===- ShardingRule.h - per-op sharding rules -------------------*- C++ -*-===//
//
// The form in which a tpc op states how it may be sharded
// (TpcShardingOpInterface, docs/design/sharding.md): einsum-like factors
// shared between operand and result dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_SHARDINGRULE_H
#define DIALECTS_TPC_IR_SHARDINGRULE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tpc {

/// How sharding a factor over a mesh axis affects the op.
enum class FactorKind {
  /// Every tensor carrying the factor is split the same way; each device
  /// computes its slice of the results.
  Parallel,
  /// The op sums over the factor: with it split, each device holds a partial
  /// sum of every result (the results become partial over the axis).
  Reduction,
  /// The op needs the whole extent (a normalization, a softmax, a position
  /// dependence): the factor must stay replicated.
  Whole,
};

/// In which operands a pending partial sum may pass through the op (the
/// result is then partial over the same axes).
enum class Linearity {
  /// In none: partial operands must be reduced first.
  None,
  /// Additive in all operands jointly: either every operand is partial over
  /// the same axes or none is (a partial sum must not meet a non-partial
  /// operand of an add).
  Additive,
  /// Linear in each operand separately: at most one operand is partial.
  Multilinear,
};

struct ShardingFactor {
  int64_t size;
  FactorKind kind;
};

/// A dimension is the row-major product of its factors (major first); a
/// sharded dimension splits its major factor. An empty list is a dimension
/// of size 1.
using DimFactors = SmallVector<unsigned, 2>;
using TensorFactors = SmallVector<DimFactors, 4>;

struct ShardingRule {
  SmallVector<ShardingFactor> factors;
  /// One entry per operand / result of the op, one list per dimension
  /// (scalars and non-tensor operands have none).
  SmallVector<TensorFactors> operands;
  SmallVector<TensorFactors> results;
  Linearity linearity = Linearity::None;
  /// The operands the linearity covers, one flag per operand (empty: all).
  /// `gelu_grad(dY, x)` is linear in dY alone, `apply_mask(x, mask)` in x.
  SmallVector<bool> linearIn;

  /// Whether a partial sum may flow through operand `operand`.
  bool isLinearIn(unsigned operand) const {
    return linearity != Linearity::None &&
           (linearIn.empty() || linearIn[operand]);
  }

  /// Adds a factor and returns its index.
  unsigned addFactor(int64_t size, FactorKind kind = FactorKind::Parallel);
  /// One new factor per dimension of `type` (none for a non-tensor).
  TensorFactors addFactorsFor(Type type,
                              FactorKind kind = FactorKind::Parallel);

  void print(raw_ostream &os) const;
};

/// The rule of an elementwise op: every operand and result has the factors
/// of the first result; a lower-rank operand matches its trailing dims.
ShardingRule elementwiseShardingRule(Operation *op, Linearity linearity);

} // namespace mlir::tpc

#endif // DIALECTS_TPC_IR_SHARDINGRULE_H
