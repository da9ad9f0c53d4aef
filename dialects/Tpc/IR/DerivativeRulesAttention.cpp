//===- DerivativeRulesAttention.cpp - attention, rotary -------------------===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

// The fused attention stashes q, k and v: attention_grad recomputes the
// probabilities (and their dropout mask, from the same stream and block),
// which is what makes it cheaper in memory than the unfused chain. With
// `lse` (tpc-autodiff asks for it) also its result and its rows'
// log-sum-exps ([b, heads, s_q] f32): the backward reads the softmax's
// statistics from them instead of rerunning the forward. Where the output
// projection's input is the result's reshape (sequence-major attention),
// tpc-autodiff stashes that once and B reshapes it back.
SmallVector<unsigned> AttentionOp::getStashedOperands(ArrayRef<bool> wanted) {
  if (!llvm::is_contained(wanted.take_front(3), true))
    return {};
  SmallVector<unsigned> read = {0, 1, 2};
  if (getBlock())
    read.push_back(3);
  return read;
}

SmallVector<unsigned> AttentionOp::getStashedResults(ArrayRef<bool> wanted) {
  if (!getLse() || !llvm::is_contained(wanted.take_front(3), true))
    return {};
  return {0, 1};
}

LogicalResult AttentionOp::buildGradients(OpBuilder &builder,
                                          const DerivativeArgs &args,
                                          Type gradElementType,
                                          SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (!dy || !llvm::is_contained(args.wanted.take_front(3), true))
    return success();
  Location loc = getLoc();
  bool saved = !!getLse();
  auto grad = AttentionGradOp::create(
      builder, loc, args.operands[0].getType(), args.operands[1].getType(),
      args.operands[2].getType(), dy, args.operands[0], args.operands[1],
      args.operands[2], saved ? args.results[0] : Value(),
      saved ? args.results[1] : Value(), getCausalAttr(), getScaleAttr(),
      getDropoutRateAttr(), getDropoutStreamAttr(),
      getBlock() ? args.operands[3] : Value(), getSeqMajorAttr());
  for (unsigned i = 0; i < 3; ++i)
    if (args.wanted[i])
      grads[i] = castTo(builder, loc, grad->getResult(i), gradElementType);
  return success();
}

LogicalResult RotaryOp::buildGradients(OpBuilder &builder,
                                       const DerivativeArgs &args,
                                       Type gradElementType,
                                       SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = castTo(builder, getLoc(),
                      RotaryGradOp::create(builder, getLoc(), dy,
                                           getThetaAttr(), getOffsetAttr(),
                                           getScalingAttr(), getSeqMajorAttr()),
                      gradElementType);
  return success();
}
