//===- DerivativeRulesShape.cpp - reshape, transpose, slice, repeat -------===//
//
// Views read nothing from the forward and keep the incoming gradient's
// element type (a parameter's view in W carries an f32 gradient through).
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/DerivativeRuleUtils.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::rules;

LogicalResult ReshapeOp::buildGradients(OpBuilder &builder,
                                        const DerivativeArgs &args, Type,
                                        SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = ReshapeOp::create(
        builder, getLoc(),
        withElement(getInput().getType(),
                    cast<RankedTensorType>(dy.getType()).getElementType()),
        dy);
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &builder,
                                          const DerivativeArgs &args, Type,
                                          SmallVectorImpl<Value> &grads) {
  Value dy = firstOperandRule(*this, args, grads);
  if (!dy)
    return success();
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads[0] = TransposeOp::create(builder, getLoc(), dy, inverse);
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &builder,
                                      const DerivativeArgs &args, Type,
                                      SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads)) {
    int64_t dim = getDimAttr().getInt();
    grads[0] =
        PadOp::create(builder, getLoc(), dy, dim, getOffsetAttr().getInt(),
                      getInput().getType().getDimSize(dim));
  }
  return success();
}

LogicalResult RepeatOp::buildGradients(OpBuilder &builder,
                                       const DerivativeArgs &args, Type,
                                       SmallVectorImpl<Value> &grads) {
  if (Value dy = firstOperandRule(*this, args, grads))
    grads[0] = SumGroupsOp::create(builder, getLoc(), dy, getDimAttr().getInt(),
                                   getRepeatsAttr().getInt());
  return success();
}
