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

/// The start of a rule that builds only operand 0's gradient: sizes `grads`
/// and returns the result's gradient, or null when there is none or operand
/// 0's gradient is not wanted.
inline Value firstOperandRule(Operation *op, const DerivativeArgs &args,
                              SmallVectorImpl<Value> &grads) {
  resetGrads(op, grads);
  Value dy = args.resultGrads[0];
  return args.wanted[0] ? dy : Value();
}

/// The forward operands `read` when operand 0's gradient is wanted (none
/// otherwise).
inline SmallVector<unsigned> readsIfFirstWanted(ArrayRef<bool> wanted,
                                                ArrayRef<unsigned> read) {
  if (wanted[0])
    return SmallVector<unsigned>(read);
  return {};
}

/// The reads of a product of operands 0 and 1: each factor's gradient reads
/// the other factor.
inline SmallVector<unsigned> productReads(ArrayRef<bool> wanted) {
  SmallVector<unsigned> read;
  if (wanted[0])
    read.push_back(1);
  if (wanted[1])
    read.push_back(0);
  return read;
}

} // namespace mlir::tpc::rules

#endif // DIALECTS_TPC_IR_DERIVATIVERULEUTILS_H
