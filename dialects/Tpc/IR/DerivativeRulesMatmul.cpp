//===- DerivativeRulesMatmul.cpp - embedding, linear, batch_matmul --------===//
//
// The input gradient of a product reads the other factor; the weight
// gradient reads the input. Which operand is a weight is the caller's
// business (tpc-autodiff): any operand can be asked for in either phase.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

SmallVector<unsigned> EmbeddingOp::getStashedOperands(ArrayRef<bool> wanted) {
  return readsIfFirstWanted(wanted, {1});
}

LogicalResult EmbeddingOp::buildGradients(OpBuilder &builder,
                                          const DerivativeArgs &args,
                                          Type gradElementType,
                                          SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = EmbeddingGradOp::create(builder, getLoc(),
                                       gradTypeOf(getTable(), gradElementType),
                                       dy, args.operands[1]);
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

SmallVector<unsigned> LinearOp::getStashedOperands(ArrayRef<bool> wanted) {
  return productReads(wanted);
}

LogicalResult LinearOp::buildGradients(OpBuilder &builder,
                                       const DerivativeArgs &args,
                                       Type gradElementType,
                                       SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dy = args.resultGrads[0];
  if (!dy)
    return success();
  Location loc = getLoc();
  if (args.wanted[0]) {
    Value dx = LinearInputGradOp::create(builder, loc, dy, args.operands[1],
                                         getLayoutAttr());
    grads[0] = castTo(builder, loc, dx, gradElementType);
  }
  if (args.wanted[1])
    grads[1] = LinearWeightGradOp::create(
        builder, loc, gradTypeOf(getWeight(), gradElementType),
        args.operands[0], dy, getLayoutAttr());
  if (getBias() && args.wanted[2])
    grads[2] =
        sumToType(builder, loc, dy, getBias().getType(), gradElementType);
  return success();
}

//===----------------------------------------------------------------------===//
// BatchMatmulOp
//===----------------------------------------------------------------------===//

SmallVector<unsigned> BatchMatmulOp::getStashedOperands(ArrayRef<bool> wanted) {
  return productReads(wanted);
}

LogicalResult BatchMatmulOp::buildGradients(OpBuilder &builder,
                                            const DerivativeArgs &args,
                                            Type gradElementType,
                                            SmallVectorImpl<Value> &grads) {
  resetGrads(*this, grads);
  Value dc = args.resultGrads[0];
  if (!dc)
    return success();
  Location loc = getLoc();
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  auto product = [&](Value a, Value b, bool ta, bool tb) -> Value {
    return BatchMatmulOp::create(builder, loc, a, b, ta, tb, getScale());
  };
  // C = s·A·B with A = op(L), B = op(R): dA = s·dC·Bᵀ, dB = s·Aᵀ·dC, and
  // dL = dA or dAᵀ (likewise dR), written without materialized transposes.
  if (args.wanted[0]) {
    Value r = args.operands[1];
    Value dl = tl ? product(r, dc, tr, true) : product(dc, r, false, !tr);
    grads[0] = castTo(builder, loc, dl, gradElementType);
  }
  if (args.wanted[1]) {
    Value l = args.operands[0];
    Value dr = tr ? product(dc, l, true, tl) : product(l, dc, !tl, false);
    grads[1] = castTo(builder, loc, dr, gradElementType);
  }
  return success();
}
