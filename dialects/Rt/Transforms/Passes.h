//===- Passes.h - rt dialect passes -----------------------------*- C++ -*-===//

#ifndef DIALECTS_RT_TRANSFORMS_PASSES_H
#define DIALECTS_RT_TRANSFORMS_PASSES_H

#include "dialects/Rt/Transforms/ReductionBuckets.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::rt {

#define GEN_PASS_DECL
#include "dialects/Rt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Rt/Transforms/Passes.h.inc"

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_PASSES_H
