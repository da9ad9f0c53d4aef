//===- FoldAttentionTransposes.cpp - tpc-fold-attention-transposes --------===//
//
// GPT-2 and Llama (as Hugging Face writes them) project q, k and v to
// [b, s, heads, d], transpose each to [b, heads, s, d] for attention (Llama
// rotates q and k there) and transpose the result back for the output
// projection: four copies of an activation per layer in the forward, four
// more in the backward. tpc.attention and tpc.rotary read and write the
// sequence-major layout themselves (`seq_major`), so an attention whose
// three operands are such transposes, or rotaries of them, reads their
// inputs instead (rotated sequence-major), and the transposes of its result
// become the result. The values are the same (attention(T q, T k, T v) =
// T attention_seq_major(q, k, v) and rotary(T x) = T rotary_seq_major(x),
// T swapping dims 1 and 2; the dropout draws the same probabilities), so
// nothing downstream changes but the copies.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCFOLDATTENTIONTRANSPOSES
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// Whether `op` swaps the sequence and heads of a 4-d tensor.
bool swapsSeqAndHeads(Operation *op) {
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  return transpose &&
         transpose.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3};
}

/// The head-major rotary `value` is the only result of, read by its one
/// reader alone; null otherwise.
RotaryOp soleRotary(Value value) {
  auto rotary = value.getDefiningOp<RotaryOp>();
  if (!rotary || rotary.getSeqMajor() || !value.hasOneUse())
    return {};
  return rotary;
}

/// Whether a head-major attention operand is made from a sequence-major
/// tensor: a transpose swapping the sequence and heads, or the sole rotary
/// of one.
bool fromSeqMajor(Value value) {
  if (RotaryOp rotary = soleRotary(value))
    value = rotary.getInput();
  return swapsSeqAndHeads(value.getDefiningOp());
}

/// The sequence-major tensor whose transpose `value` is (fromSeqMajor):
/// the transpose's input, rotated sequence-major where `value` is a rotary
/// (the new rotary at the old one). The ops made dead are in `dead`, in the
/// order they can be erased once their readers are.
Value toSeqMajor(Value value, SmallVectorImpl<Operation *> &dead) {
  RotaryOp rotary = soleRotary(value);
  Value rotated = rotary ? rotary.getInput() : value;
  Operation *swap = rotated.getDefiningOp();
  Value source = swap->getOperand(0);
  if (rotary) {
    OpBuilder builder(rotary);
    auto seqMajor = RotaryOp::create(
        builder, rotary.getLoc(), source, rotary.getThetaAttr(),
        rotary.getOffsetAttr(), rotary.getScalingAttr(),
        builder.getUnitAttr());
    seqMajor->setDiscardableAttrs(rotary->getDiscardableAttrDictionary());
    source = seqMajor.getResult();
    dead.push_back(rotary);
  }
  dead.push_back(swap);
  return source;
}

/// Rewrites `attention` sequence-major when its operands are all made from
/// sequence-major tensors; returns whether it did.
bool fold(AttentionOp attention) {
  if (attention.getSeqMajor() || !fromSeqMajor(attention.getQuery()) ||
      !fromSeqMajor(attention.getKey()) || !fromSeqMajor(attention.getValue()))
    return false;
  SmallVector<Operation *, 5> dead;
  Value query = toSeqMajor(attention.getQuery(), dead);
  Value key = toSeqMajor(attention.getKey(), dead);
  Value value = toSeqMajor(attention.getValue(), dead);
  OpBuilder builder(attention);
  auto folded = AttentionOp::create(
      builder, attention.getLoc(), query, key, value, attention.getCausalAttr(),
      attention.getScaleAttr(), attention.getDropoutRateAttr(),
      attention.getDropoutStreamAttr(), attention.getBlock(),
      builder.getUnitAttr(), attention.getWithLseAttr());
  folded->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
  // The log-sum-exps are [b, heads, s_q] in either layout.
  if (Value lse = attention.getLse())
    lse.replaceAllUsesWith(folded.getLse());

  // Readers that swap the result back read the folded result; any other
  // reader gets one transpose of it (the head-major result).
  TransposeOp headMajor;
  for (OpOperand &use : llvm::make_early_inc_range(attention->getUses())) {
    Operation *reader = use.getOwner();
    if (swapsSeqAndHeads(reader)) {
      reader->getResult(0).replaceAllUsesWith(folded.getResult());
      reader->erase();
      continue;
    }
    if (!headMajor) {
      headMajor =
          TransposeOp::create(builder, attention.getLoc(), folded.getResult(),
                              builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
      headMajor->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
    }
    use.set(headMajor.getResult());
  }
  attention->erase();
  // A transpose may feed two operands (q = k) or other readers: erase each
  // op once, when nothing reads it.
  DenseSet<Operation *> erased;
  for (Operation *op : dead) {
    if (erased.contains(op) || !op->use_empty())
      continue;
    erased.insert(op);
    op->erase();
  }
  return true;
}

struct FoldAttentionTransposesPass
    : public tpc::impl::TpcFoldAttentionTransposesBase<
          FoldAttentionTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp op) { attentions.push_back(op); });
    for (AttentionOp attention : attentions)
      fold(attention);
  }
};

} // namespace
