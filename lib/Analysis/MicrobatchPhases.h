//===- MicrobatchPhases.h - when the values of a step are computed -*- C++ -*-//
//
// Whether each value of an unrolled training step (or @forward) depends on a
// microbatch's data, is computed once per step by the driver, or from
// parameters alone: what the report's figures repeat per microbatch and what
// they count once. Private to lib/Analysis.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_ANALYSIS_MICROBATCHPHASES_H
#define LIB_ANALYSIS_MICROBATCHPHASES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::tpc {

/// When a value is computed, relative to the microbatches of a step
/// (ordered: an op is as late as its latest operand).
enum class Phase {
  /// From parameters and constants alone: once per step (the unrolled
  /// microbatches' copies are merged by CSE).
  Invariant,
  /// By the driver, once per step: the loss mean, the target count, the
  /// optimizer, and what follows from them.
  Step,
  /// From a microbatch's data.
  Microbatch,
};

/// The phase of every value and op of `function` (one block after
/// unrolling): its `tpc.input` arguments are a microbatch's data, and so is
/// what a dropout draws (its block of the stream is its microbatch's).
struct MicrobatchPhases {
  explicit MicrobatchPhases(func::FuncOp function);

  Phase of(Value value) const { return values.lookup(value); }
  Phase of(Operation *op) const { return ops.lookup(op); }

  DenseMap<Value, Phase> values;
  DenseMap<Operation *, Phase> ops;
};

/// Whether `op` is an op of package dist that moves data between devices (or
/// slices and pads one device's part).
bool isCollective(Operation *op);

int64_t byteSize(Type type);

} // namespace mlir::tpc

#endif // LIB_ANALYSIS_MICROBATCHPHASES_H
