//===- DerivativeRulesElementwise.cpp - activations, dropout, add, mul ----===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

//===----------------------------------------------------------------------===//
// Activations: the derivative at the forward input
//===----------------------------------------------------------------------===//

SmallVector<unsigned> GeluOp::getStashedOperands(ArrayRef<bool> wanted) {
  return readsIfFirstWanted(wanted, {0});
}

LogicalResult GeluOp::buildGradients(OpBuilder &builder,
                                     const DerivativeArgs &args,
                                     Type gradElementType,
                                     SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] =
        castTo(builder, getLoc(),
               GeluGradOp::create(builder, getLoc(), dy, args.operands[0],
                                  getApproximationAttr()),
               gradElementType);
  return success();
}

SmallVector<unsigned> SiluOp::getStashedOperands(ArrayRef<bool> wanted) {
  return readsIfFirstWanted(wanted, {0});
}

LogicalResult SiluOp::buildGradients(OpBuilder &builder,
                                     const DerivativeArgs &args,
                                     Type gradElementType,
                                     SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] =
        castTo(builder, getLoc(),
               SiluGradOp::create(builder, getLoc(), dy, args.operands[0]),
               gradElementType);
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

// An unsplit dropout regenerates its mask (it stashes nothing). tpc-autodiff
// splits dropouts into dropout_mask + apply_mask first, so that by default
// the mask is stashed (one byte per element) rather than recomputed.
LogicalResult DropoutOp::buildGradients(OpBuilder &builder,
                                        const DerivativeArgs &args,
                                        Type gradElementType,
                                        SmallVectorImpl<Value> &grads) {
  Value dy = firstOperandRule(*this, args, grads);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value mask = DropoutMaskOp::create(
      builder, loc, withElement(getType(), builder.getIntegerType(8)),
      getRateAttr(), getStreamAttr(), /*block=*/Value());
  grads[0] = castTo(builder, loc,
                    ApplyMaskOp::create(builder, loc, dy, mask, getRateAttr()),
                    gradElementType);
  return success();
}

SmallVector<unsigned> ApplyMaskOp::getStashedOperands(ArrayRef<bool> wanted) {
  return readsIfFirstWanted(wanted, {1});
}

LogicalResult ApplyMaskOp::buildGradients(OpBuilder &builder,
                                          const DerivativeArgs &args,
                                          Type gradElementType,
                                          SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = castTo(builder, getLoc(),
                      ApplyMaskOp::create(builder, getLoc(), dy,
                                          args.operands[1], getRateAttr()),
                      gradElementType);
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax: from its output
//===----------------------------------------------------------------------===//

SmallVector<unsigned> SoftmaxOp::getStashedResults(ArrayRef<bool> wanted) {
  if (wanted[0])
    return {0};
  return {};
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &builder,
                                        const DerivativeArgs &args,
                                        Type gradElementType,
                                        SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] =
        castTo(builder, getLoc(),
               SoftmaxGradOp::create(builder, getLoc(), dy, args.results[0]),
               gradElementType);
  return success();
}

//===----------------------------------------------------------------------===//
// Binary ops: rhs may broadcast over leading dimensions
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &builder,
                                    const DerivativeArgs &args,
                                    Type gradElementType,
                                    SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (!dy)
    return success();
  if (args.wanted[0])
    grads[0] = dy;
  if (args.wanted[1])
    grads[1] =
        sumToType(builder, getLoc(), dy, getRhs().getType(), gradElementType);
  return success();
}

SmallVector<unsigned> MulOp::getStashedOperands(ArrayRef<bool> wanted) {
  return productReads(wanted);
}

LogicalResult MulOp::buildGradients(OpBuilder &builder,
                                    const DerivativeArgs &args,
                                    Type gradElementType,
                                    SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (!dy)
    return success();
  Location loc = getLoc();
  if (args.wanted[0])
    grads[0] =
        castTo(builder, loc, MulOp::create(builder, loc, dy, args.operands[1]),
               gradElementType);
  if (args.wanted[1])
    grads[1] = sumToType(builder, loc,
                         MulOp::create(builder, loc, dy, args.operands[0]),
                         getRhs().getType(), gradElementType);
  return success();
}

//===----------------------------------------------------------------------===//
// CastOp: cast back
//===----------------------------------------------------------------------===//

LogicalResult CastOp::buildGradients(OpBuilder &builder,
                                     const DerivativeArgs &args,
                                     Type gradElementType,
                                     SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = castTo(builder, getLoc(), dy,
                      gradElementType ? gradElementType
                                      : getInput().getType().getElementType());
  return success();
}
