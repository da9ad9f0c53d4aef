//===- Report.h - tpc-compile --report ---------------------------*- C++
//-*-===//
//
// The JSON report of a compiled model (INTERFACE.md, "Report"): what one
// device holds and computes, from shapes alone. The numbers come from the
// passes that made the executable: the stash of tpc-autodiff, the memory
// plan of rt-plan-memory, and the matrix products of the training step.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_TARGET_REPORT_H
#define TPC_TARGET_REPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::tpc {

/// One device, one pipeline stage (what tpc-compile supports today).
struct CompileReport {
  // "model"
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  int64_t microbatchSize = 0;
  /// fp32, bf16 or fp16: the activations' type.
  std::string dtype;
  int64_t microbatches = 1;
  /// Stashed for the backward by one transformer layer for one microbatch.
  int64_t activationBytesPerLayer = 0;
  // "stages"[0]
  /// Params (the f32 master weights when training) and their 16-bit
  /// copies; gradients; optimizer state.
  int64_t paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  int64_t peakActivationBytes = 0, peakBytes = 0;
  int64_t flopsPerMicrobatch = 0;
};

/// Fills the "model" fields from the `tpc.model` attribute of `module` (as
/// tpc-import writes it) and the activations' type of `forward`; an error
/// names what is missing.
LogicalResult readModelInfo(ModuleOp module, func::FuncOp forward,
                            int64_t microbatches, CompileReport &report);

/// The FLOPs of the matrix products in `functions`, 2·m·n·k each, as the
/// kernels compute them: linear and its input and weight gradients,
/// batch_matmul, attention (scores and the product with v) and its
/// gradient (which recomputes the scores). Elementwise work is not counted.
/// Saturates at INT64_MAX.
int64_t countMatmulFlops(ArrayRef<func::FuncOp> functions);

/// Writes the report as JSON to `path` ('-' is stdout).
LogicalResult writeReport(const CompileReport &report, StringRef path,
                          Location loc);

} // namespace mlir::tpc

#endif // TPC_TARGET_REPORT_H
