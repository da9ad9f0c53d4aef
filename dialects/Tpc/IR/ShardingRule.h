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

#include <optional>

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
  /// The factor whose split the op must be told (TpcShardingOpInterface's
  /// adaptToShard) and its kernel must know the mesh axes of: a vocabulary
  /// of which each device holds one block (the embedding's table, the
  /// cross-entropy's logits, whose kernel combines the blocks itself).
  std::optional<unsigned> blockFactor;
  /// The result sums over every element of each operand (a global norm's
  /// sum of squares): each operand may keep its own split, and a
  /// partitioner sums the operands of each split apart and reduces each
  /// partial sum over its own axes. The factors then only give the shapes.
  bool sumsOperandsApart = false;
  /// The operands the linearity covers, one flag per operand (empty: all).
  /// `gelu_grad(dY, x)` is linear in dY alone, `apply_mask(x, mask)` in x.
  SmallVector<bool> linearIn;

  /// Makes the op linear (in the multilinear sense) in operand `operand` of
  /// its `numOperands` alone.
  void setLinearOnlyIn(unsigned operand, unsigned numOperands) {
    linearity = Linearity::Multilinear;
    linearIn.assign(numOperands, false);
    linearIn[operand] = true;
  }

  /// Whether a partial sum may flow through operand `operand`.
  bool isLinearIn(unsigned operand) const {
    return linearity != Linearity::None &&
           (linearIn.empty() || linearIn[operand]);
  }

  /// Adds a factor and returns its index.
  unsigned addFactor(int64_t size, FactorKind kind = FactorKind::Parallel);
  /// One new factor per size in `shape`.
  TensorFactors addFactors(ArrayRef<int64_t> shape,
                           FactorKind kind = FactorKind::Parallel);
  /// One new factor per dimension of `type` (none for a non-tensor).
  TensorFactors addFactorsFor(Type type,
                              FactorKind kind = FactorKind::Parallel);

  void print(raw_ostream &os) const;
};

/// The rule of an elementwise op: every operand and result has the factors
/// of the first result; a lower-rank operand matches its trailing dims.
ShardingRule elementwiseShardingRule(Operation *op, Linearity linearity);

/// The dims of `lhs` followed by those of `rhs`.
TensorFactors concatFactors(ArrayRef<DimFactors> lhs, ArrayRef<DimFactors> rhs);

/// The factors of `linear(x [lead..., in], w) -> y [lead..., out...]`, `w`
/// being `[in, out...]` or, for the out_in layout, `[out..., in]`. The
/// forward and both gradients share them, each with its own kinds.
struct LinearFactors {
  TensorFactors lead;
  unsigned in;
  TensorFactors out;
  bool outIn;

  TensorFactors input() const { return concatFactors(lead, {{in}}); }
  TensorFactors output() const { return concatFactors(lead, out); }
  TensorFactors weight() const {
    return outIn ? concatFactors(out, {{in}}) : concatFactors({{in}}, out);
  }
};

/// Adds the factors of a linear with leading dims `lead` and weight shape
/// `weight`, in that order: lead, in, out.
LinearFactors addLinearFactors(ShardingRule &rule, ArrayRef<int64_t> lead,
                               ArrayRef<int64_t> weight, bool outIn,
                               FactorKind leadKind, FactorKind inKind,
                               FactorKind outKind);

/// The factors of `attention(q [b, heads, s_q, d], k [b, kv_heads, s_k, d],
/// v [b, kv_heads, s_k, d_v]) -> [b, heads, s_q, d_v]`. The query heads are
/// `[kv_heads, group]` (query head h reads kv head h / group), so splitting
/// them splits the kv heads.
struct AttentionFactors {
  unsigned batch, kvHeads;
  /// Absent when every kv head has one query head.
  std::optional<unsigned> group;
  unsigned seqQ, seqK, dim, dimV;
  /// Tensors [b, s, heads, d] rather than [b, heads, s, d].
  bool seqMajor = false;

  DimFactors heads() const {
    return group ? DimFactors{kvHeads, *group} : DimFactors{kvHeads};
  }
  TensorFactors query() const { return tensor(heads(), seqQ, dim); }
  TensorFactors key() const { return tensor({kvHeads}, seqK, dim); }
  TensorFactors value() const { return tensor({kvHeads}, seqK, dimV); }
  TensorFactors output() const { return tensor(heads(), seqQ, dimV); }
  /// The rows' log-sum-exps, [b, heads, s_q] in either layout.
  TensorFactors lse() const { return {{batch}, heads(), {seqQ}}; }

private:
  TensorFactors tensor(DimFactors headFactors, unsigned seq,
                       unsigned last) const {
    if (seqMajor)
      return {{batch}, {seq}, std::move(headFactors), {last}};
    return {{batch}, std::move(headFactors), {seq}, {last}};
  }
};

/// Adds the factors of the forward attention: batch, heads and the value
/// head dim parallel; the key sequence and the head dim whole (the softmax
/// over keys, the scores over d); the query sequence whole when `causal`
/// (the mask compares global positions). Shapes [b, heads, s, d], or
/// [b, s, heads, d] with `seqMajor`.
AttentionFactors addAttentionFactors(ShardingRule &rule,
                                     ArrayRef<int64_t> query,
                                     ArrayRef<int64_t> key,
                                     ArrayRef<int64_t> value, bool causal,
                                     bool seqMajor);

/// The rule of `rotary` and its gradient on `[b, heads, s, d]` (or
/// `[b, s, heads, d]` with `seqMajor`): batch and heads parallel; the
/// sequence whole (the angles depend on the global position) and the head
/// dim whole (rotate_half pairs its two halves). Linear in the rotated
/// tensor.
ShardingRule rotaryShardingRule(Operation *op, bool seqMajor);

/// The rule of an op whose result is its operand with dim `dim` cut or
/// padded to `size` (slice, pad): that dim whole on both sides (a window of
/// a split dim is not a split of the window), the others parallel; linear.
ShardingRule resizedDimShardingRule(Operation *op, unsigned dim, int64_t size);

} // namespace mlir::tpc

#endif // DIALECTS_TPC_IR_SHARDINGRULE_H
