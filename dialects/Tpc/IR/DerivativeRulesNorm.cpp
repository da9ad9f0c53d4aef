//===- DerivativeRulesNorm.cpp - layer_norm, rms_norm ---------------------===//
//
// Both norms stash only their input: the statistics are recomputed in the
// backward ops, which is cheaper in memory than stashing mean and rstd next
// to an activation of the same size.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

/// The input is read by every gradient, the weight by the input gradient.
static SmallVector<unsigned> normReads(ArrayRef<bool> wanted) {
  bool params = llvm::any_of(wanted.drop_front(), [](bool w) { return w; });
  if (wanted[0])
    return {0, 1};
  if (params)
    return {0};
  return {};
}

/// grads[0], when wanted: `InputGradOp` of `dy`, the input and the weight.
template <typename InputGradOp, typename NormOp>
static void
buildInputGrad(NormOp op, OpBuilder &builder, const DerivativeArgs &args,
               Value dy, Type gradElementType, SmallVectorImpl<Value> &grads) {
  if (!args.wanted[0])
    return;
  Location loc = op.getLoc();
  Value dx = InputGradOp::create(builder, loc, dy, args.operands[0],
                                 args.operands[1], op.getEpsilonAttr());
  grads[0] = castTo(builder, loc, dx, gradElementType);
}

SmallVector<unsigned> LayerNormOp::getStashedOperands(ArrayRef<bool> wanted) {
  return normReads(wanted);
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &builder,
                                          const DerivativeArgs &args,
                                          Type gradElementType,
                                          SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (!dy)
    return success();
  Location loc = getLoc();
  Value x = args.operands[0];
  buildInputGrad<LayerNormInputGradOp>(*this, builder, args, dy,
                                       gradElementType, grads);
  if (args.wanted[1] || args.wanted[2]) {
    auto paramGrads = LayerNormParamGradOp::create(
        builder, loc, gradTypeOf(getWeight(), gradElementType),
        gradTypeOf(getBias(), gradElementType), dy, x, getEpsilonAttr());
    if (args.wanted[1])
      grads[1] = paramGrads.getWeightGrad();
    if (args.wanted[2])
      grads[2] = paramGrads.getBiasGrad();
  }
  return success();
}

SmallVector<unsigned> RmsNormOp::getStashedOperands(ArrayRef<bool> wanted) {
  return normReads(wanted);
}

LogicalResult RmsNormOp::buildGradients(OpBuilder &builder,
                                        const DerivativeArgs &args,
                                        Type gradElementType,
                                        SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (!dy)
    return success();
  Location loc = getLoc();
  Value x = args.operands[0];
  buildInputGrad<RmsNormInputGradOp>(*this, builder, args, dy, gradElementType,
                                     grads);
  if (args.wanted[1])
    grads[1] = RmsNormParamGradOp::create(
        builder, loc, gradTypeOf(getWeight(), gradElementType), dy, x,
        getEpsilonAttr());
  return success();
}
