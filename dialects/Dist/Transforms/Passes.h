//===- Passes.h - dist dialect passes ---------------------------*- C++ -*-===//

#ifndef DIALECTS_DIST_TRANSFORMS_PASSES_H
#define DIALECTS_DIST_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {

#define GEN_PASS_DECL
#include "dialects/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Dist/Transforms/Passes.h.inc"

} // namespace mlir::dist

#endif // DIALECTS_DIST_TRANSFORMS_PASSES_H
