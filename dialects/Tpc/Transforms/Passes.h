//===- Passes.h - tpc dialect passes ----------------------------*- C++ -*-===//

#ifndef DIALECTS_TPC_TRANSFORMS_PASSES_H
#define DIALECTS_TPC_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tpc {

#define GEN_PASS_DECL
#include "dialects/Tpc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Tpc/Transforms/Passes.h.inc"

/// Whether `policy` is one tpc-remat takes: none, selective, full,
/// uniform:N or block:N with N >= 1 (Remat.cpp).
bool isRematPolicy(llvm::StringRef policy);

} // namespace mlir::tpc

#endif // DIALECTS_TPC_TRANSFORMS_PASSES_H
