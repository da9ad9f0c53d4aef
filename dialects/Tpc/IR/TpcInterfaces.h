//===- TpcInterfaces.h - tpc op interfaces ----------------------*- C++ -*-===//

#ifndef DIALECTS_TPC_IR_TPCINTERFACES_H
#define DIALECTS_TPC_IR_TPCINTERFACES_H

#include "dialects/Tpc/IR/ShardingRule.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/ArrayRef.h"

namespace mlir::tpc {

/// What a derivative rule sees of the backward function (see
/// TpcDerivativeOpInterface). `operands` and `results` have one entry per
/// operand / result of the forward op: the backward-side value of those the
/// rule declared as read, null for the others. `resultGrads` has one entry
/// per result (null: no gradient reaches it); `wanted` one per operand.
struct DerivativeArgs {
  ArrayRef<Value> operands;
  ArrayRef<Value> results;
  ArrayRef<Value> resultGrads;
  ArrayRef<bool> wanted;
};

/// The dimensions of the heads and of the sequence in the 4-d tensors of
/// tpc.attention and tpc.rotary (and their gradients): [b, heads, s, d], or
/// [b, s, heads, d] with `seq_major`.
inline unsigned attentionHeadsDim(bool seqMajor) { return seqMajor ? 2 : 1; }
inline unsigned attentionSeqDim(bool seqMajor) { return seqMajor ? 1 : 2; }
/// That layout as the verifiers' messages name it.
inline StringRef attentionLayoutText(bool seqMajor) {
  return seqMajor ? "[batch, seq, heads, head_dim]"
                  : "[batch, heads, seq, head_dim]";
}

/// What an op draws from the dropout stream (TpcDropoutDrawOpInterface):
/// the drawn shape, whose leading `shared` dimensions are dimensions of the
/// op's first result (and split like them), the others whole; and the block
/// (microbatch) operand, when the draw is one block of a larger tensor.
struct DropoutDraw {
  Value block;
  SmallVector<int64_t> shape;
  unsigned shared = 0;
  /// The first result's dimension behind each shared one; empty: the same
  /// (shared dimension d is the result's dimension d).
  SmallVector<unsigned> resultDims;

  unsigned resultDim(unsigned d) const {
    return resultDims.empty() ? d : resultDims[d];
  }
};

} // namespace mlir::tpc

#include "dialects/Tpc/IR/TpcInterfaces.h.inc"

#endif // DIALECTS_TPC_IR_TPCINTERFACES_H
