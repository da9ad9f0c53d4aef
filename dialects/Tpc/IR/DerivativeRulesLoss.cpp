//===- DerivativeRulesLoss.cpp - cross_entropy, loss_mean -----------------===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

SmallVector<unsigned>
CrossEntropyOp::getStashedOperands(ArrayRef<bool> wanted) {
  return readsIfFirstWanted(wanted, {0, 1});
}

// Only the loss sum has a gradient: the count is an integer.
LogicalResult CrossEntropyOp::buildGradients(OpBuilder &builder,
                                             const DerivativeArgs &args,
                                             Type gradElementType,
                                             SmallVectorImpl<Value> &grads) {
  if (Value dsum = firstOperandRule(*this, args, grads))
    grads[0] = castTo(builder, getLoc(),
                      CrossEntropyGradOp::create(
                          builder, getLoc(), args.operands[0], args.operands[1],
                          dsum, getIgnoreIndexAttr(), getVocabAttr(),
                          getVocabBlocksAttr()),
                      gradElementType);
  return success();
}

SmallVector<unsigned> LossMeanOp::getStashedOperands(ArrayRef<bool> wanted) {
  return readsIfFirstWanted(wanted, {1});
}

// d(sum / count) / d sum = 1 / count, so the gradient is itself a loss_mean
// (0 for a count of 0, like the forward).
LogicalResult LossMeanOp::buildGradients(OpBuilder &builder,
                                         const DerivativeArgs &args, Type,
                                         SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = LossMeanOp::create(builder, getLoc(), dy, args.operands[1]);
  return success();
}
