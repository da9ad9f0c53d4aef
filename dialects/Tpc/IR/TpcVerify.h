//===- TpcVerify.h - shared checks of the tpc op verifiers ------*- C++ -*-===//
//
// Internal to the dialect library: the checks and diagnostic helpers that the
// forward, backward and optimizer op verifiers share.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_TPCVERIFY_H
#define DIALECTS_TPC_IR_TPCVERIFY_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace mlir::tpc::checks {

/// Prints a shape as `4x32x64` (a scalar as `scalar`).
struct ShapeStr {
  ArrayRef<int64_t> shape;
};
inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ShapeStr s) {
  if (s.shape.empty())
    return os << "scalar";
  llvm::interleave(s.shape, os, "x");
  return os;
}
inline Diagnostic &operator<<(Diagnostic &diag, ShapeStr s) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << s;
  return diag << str;
}

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

inline ShapeStr shapeOf(Value v) { return {tensorType(v).getShape()}; }

/// Where a check reports: on the op (verifiers; the message starts with the
/// op name) or at a location (result-type inference, which runs while parsing,
/// before the op exists).
class Reporter {
public:
  Reporter(Operation *op) : op(op) {}
  Reporter(std::optional<Location> loc) : loc(loc) {}

  template <typename... Args> LogicalResult operator()(Args &&...args) const {
    if (!op)
      return emitOptionalError(loc, std::forward<Args>(args)...);
    InFlightDiagnostic diag = op->emitOpError();
    (diag << ... << std::forward<Args>(args));
    return diag;
  }

private:
  Operation *op = nullptr;
  std::optional<Location> loc;
};

/// Checks that `other` (named `otherName`) has the element type of `ref`
/// (named `refName`).
LogicalResult checkSameElementType(Reporter report, Value ref,
                                   StringRef refName, Value other,
                                   StringRef otherName);

/// Checks that `v` (named `name`) is a statically shaped tensor of f32, bf16
/// or f16 (or, with `index`, of i32 or i64). Result-type inference runs while
/// parsing, before the ODS operand constraints are verified, so it checks the
/// operands it reads itself.
LogicalResult checkOperandType(std::optional<Location> loc, Value v,
                               StringRef name, bool index = false);

/// Checks `input` with checkOperandType (as "input") and that `dim` is one of
/// its dimensions; returns its type.
FailureOr<RankedTensorType> checkInputDim(std::optional<Location> loc,
                                          Value input, IntegerAttr dim);

/// Checks that a repeat count (or group size) is at least 1.
LogicalResult checkRepeats(std::optional<Location> loc, int64_t repeats);

/// `type` with dimension `dim` of size `size`.
inline RankedTensorType withDimSize(RankedTensorType type, int64_t dim,
                                    int64_t size) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return RankedTensorType::get(shape, type.getElementType());
}

/// A per-feature norm parameter: shape [hidden], the input's element type.
LogicalResult verifyNormParam(Operation *op, Value input, Value param,
                              StringRef name);
LogicalResult verifyEpsilon(Operation *op, double epsilon);

/// The attributes of an attention (forward or gradient) and its optional
/// dropout block.
LogicalResult verifyAttentionAttrs(Operation *op, double scale, double rate,
                                   int64_t stream, bool causal, bool hasBlock,
                                   int64_t queries, int64_t keys);
/// The result type of an attention over `query`, `key`, `value`, checking
/// their shapes: [b, heads, s, d], or [b, s, heads, d] with `seqMajor`.
FailureOr<RankedTensorType> inferAttentionType(std::optional<Location> loc,
                                               Value query, Value key,
                                               Value value, bool seqMajor);
/// The log-sum-exps of an attention whose result is `result`: f32 [b, heads,
/// s_q] in either layout.
RankedTensorType attentionLseType(RankedTensorType result, bool seqMajor);

LogicalResult verifyDropoutRate(Operation *op, double rate);
LogicalResult verifyDropoutStream(Operation *op, int64_t stream);

/// A rotary embedding (or its gradient) over `type` [b, heads, s, d], with
/// its frequencies' `scaling` if any ([factor] or [factor, low_freq_factor,
/// high_freq_factor, original_max_positions]).
LogicalResult verifyRotary(Operation *op, RankedTensorType type, double theta,
                           std::optional<ArrayRef<double>> scaling,
                           int64_t offset, bool seqMajor);

/// `labels` is `logits` without its last (vocabulary) dimension.
LogicalResult verifyLogitsLabels(Operation *op, Value logits, Value labels);
/// A cross-entropy's `vocab`: positive, and at most the logits' columns
/// times `blocks` (the logits hold one of that many vocabulary blocks).
LogicalResult verifyVocab(Operation *op, Value logits,
                          std::optional<int64_t> vocab,
                          std::optional<int64_t> blocks);

} // namespace mlir::tpc::checks

#endif // DIALECTS_TPC_IR_TPCVERIFY_H
