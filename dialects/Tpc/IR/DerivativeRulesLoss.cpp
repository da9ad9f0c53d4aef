//===- DerivativeRulesLoss.cpp - cross_entropy, loss_mean -----------------===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

SmallVector<unsigned>
CrossEntropyOp::getStashedOperands(ArrayRef<bool> wanted) {
  if (wanted[0])
    return {0, 1};
  return {};
}

// Only the loss sum has a gradient: the count is an integer.
LogicalResult CrossEntropyOp::buildGradients(OpBuilder &builder,
                                             const DerivativeArgs &args,
                                             Type gradElementType,
                                             SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dsum = args.resultGrads[0];
  if (dsum && args.wanted[0])
    grads[0] = castTo(builder, getLoc(),
                      CrossEntropyGradOp::create(
                          builder, getLoc(), args.operands[0], args.operands[1],
                          dsum, getIgnoreIndexAttr()),
                      gradElementType);
  return success();
}

SmallVector<unsigned> LossMeanOp::getStashedOperands(ArrayRef<bool> wanted) {
  if (wanted[0])
    return {1};
  return {};
}

// d(sum / count) / d sum = 1 / count, so the gradient is itself a loss_mean
// (0 for a count of 0, like the forward).
LogicalResult LossMeanOp::buildGradients(OpBuilder &builder,
                                         const DerivativeArgs &args, Type,
                                         SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (dy && args.wanted[0])
    grads[0] = LossMeanOp::create(builder, getLoc(), dy, args.operands[1]);
  return success();
}
