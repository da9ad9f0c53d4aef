//===- FoldAttentionTransposes.cpp - tpc-fold-attention-transposes --------===//
//
// GPT-2 (as Hugging Face writes it) projects q, k and v to [b, s, heads, d],
// transposes each to [b, heads, s, d] for attention and transposes the result
// back for the output projection: four copies of an activation per layer in
// the forward, four more in the backward. tpc.attention reads and writes the
// sequence-major layout itself (`seq_major`), so an attention whose three
// operands are such transposes reads their inputs instead, and the
// transposes of its result become the result. The values are the same
// (attention(T q, T k, T v) = T attention_seq_major(q, k, v), T swapping
// dims 1 and 2; the dropout draws the same probabilities), so nothing
// downstream changes but the copies.
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

/// The input of `value`'s defining transpose when it swaps the sequence and
/// heads; null otherwise.
Value beforeSwap(Value value) {
  Operation *producer = value.getDefiningOp();
  return swapsSeqAndHeads(producer) ? producer->getOperand(0) : Value();
}

/// Rewrites `attention` sequence-major when its operands are all swapped;
/// returns whether it did.
bool fold(AttentionOp attention) {
  Value query = beforeSwap(attention.getQuery());
  Value key = beforeSwap(attention.getKey());
  Value value = beforeSwap(attention.getValue());
  if (attention.getSeqMajor() || !query || !key || !value)
    return false;
  OpBuilder builder(attention);
  auto folded = AttentionOp::create(
      builder, attention.getLoc(), query, key, value,
      attention.getCausalAttr(), attention.getScaleAttr(),
      attention.getDropoutRateAttr(), attention.getDropoutStreamAttr(),
      attention.getBlock(), builder.getUnitAttr());
  folded->setDiscardableAttrs(attention->getDiscardableAttrDictionary());

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
      headMajor = TransposeOp::create(builder, attention.getLoc(), folded,
                                      builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
      headMajor->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
    }
    use.set(headMajor.getResult());
  }
  SmallVector<Operation *, 3> swaps = {attention.getQuery().getDefiningOp(),
                                       attention.getKey().getDefiningOp(),
                                       attention.getValue().getDefiningOp()};
  attention->erase();
  for (Operation *swap : swaps)
    if (swap->use_empty())
      swap->erase();
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
