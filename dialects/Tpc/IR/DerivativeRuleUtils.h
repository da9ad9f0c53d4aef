//===- DerivativeRuleUtils.h - helpers of the derivative rules --*- C++ -*-===//
//
// Internal to the dialect library (DerivativeRules*.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_DERIVATIVERULEUTILS_H
#define DIALECTS_TPC_IR_DERIVATIVERULEUTILS_H

#include "dialects/Tpc/IR/TpcOps.h"

namespace mlir::tpc::rules {

/// `type` with element type `element`.
inline RankedTensorType withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

/// The gradient type of `operand` when rules build in `gradElementType`
/// (null: the operand's own element type).
inline RankedTensorType gradTypeOf(Value operand, Type gradElementType) {
  auto type = cast<RankedTensorType>(operand.getType());
  return gradElementType ? type.clone(gradElementType) : type;
}

/// `value` converted to `element` (itself when it already has it).
inline Value castTo(OpBuilder &builder, Location loc, Value value,
                    Type element) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!element || type.getElementType() == element)
    return value;
  return CastOp::create(builder, loc, type.clone(element), value);
}

/// `grad` summed over the leading dimensions `target` does not have (the
/// gradient of a broadcast operand of type `target`), in `element` (null:
/// the gradient's own element type).
inline Value sumToType(OpBuilder &builder, Location loc, Value grad,
                       Type target, Type element) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  auto resultType = cast<RankedTensorType>(target).clone(
      element ? element : gradType.getElementType());
  if (gradType.getShape() == resultType.getShape())
    return castTo(builder, loc, grad, resultType.getElementType());
  return SumToOp::create(builder, loc, resultType, grad);
}

/// Sizes `grads` to the op's operands, all null.
inline void resetGrads(Operation *op, SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
}

} // namespace mlir::tpc::rules

#endif // DIALECTS_TPC_IR_DERIVATIVERULEUTILS_H
