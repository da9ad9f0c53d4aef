//===- Report.h - tpc-compile --report ---------------------------*- C++
//-*-===//
//
// The JSON report of a compiled model (INTERFACE.md, "Report"): what one
// device holds and computes, from shapes alone. The numbers come from the
// passes that made the executable: the stash of tpc-autodiff (laid out by
// dist-annotate-megatron and dist-propagate on a mesh), the memory plan of
// rt-plan-memory, the matrix products of the training step and the
// collectives dist-partition inserted (docs/design/sharding.md, "The
// report").
//
//===----------------------------------------------------------------------===//

#ifndef TPC_TARGET_REPORT_H
#define TPC_TARGET_REPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::tpc {

/// Bytes one device communicates, per collective kind: the full logical
/// tensor of each collective (an all_reduce's tensor, an all_gather's
/// gathered result, a reduce_scatter's unscattered input).
struct CommBytes {
  int64_t allReduce = 0, allGather = 0, reduceScatter = 0, p2p = 0;
};

/// One device, one pipeline stage (what tpc-compile supports today).
struct CompileReport {
  // "model"
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  int64_t microbatchSize = 0;
  /// fp32, bf16 or fp16: the activations' type.
  std::string dtype;
  int64_t microbatches = 1;
  // "mesh" and "sequence_parallel".
  int64_t dataParallel = 1, pipelineParallel = 1, tensorParallel = 1;
  bool sequenceParallel = false;
  /// Stashed for the backward by one transformer layer for one microbatch,
  /// on one device.
  int64_t activationBytesPerLayer = 0;
  // "stages"[0]
  /// Params (the f32 master weights when training) and their 16-bit
  /// copies; gradients; optimizer state.
  int64_t paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  int64_t peakActivationBytes = 0, peakBytes = 0;
  /// Matrix-product FLOPs of one microbatch on one device (local shapes on
  /// a mesh).
  int64_t flopsPerMicrobatch = 0;
  /// What every microbatch repeats (the total divided by the microbatches),
  /// and what happens once per step (no p2p).
  CommBytes commPerMicrobatch, commPerStep;
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

/// The bytes that transformer layer `layer` of `trainF` (an @train_F of
/// tpc-autodiff) stashes on one device: `distribute` lays out and partitions
/// a module holding a copy of `trainF` as the compilation does (adding the
/// mesh), and each stashed value counts its local bytes where it is computed,
/// before the collectives that the return (which wants it whole) adds.
FailureOr<int64_t>
computeDeviceLayerStashBytes(func::FuncOp trainF,
                             function_ref<LogicalResult(ModuleOp)> distribute,
                             int64_t layer);

/// Sums the collectives of `function` (an @train_step or @forward after
/// dist-partition, with `microbatches` microbatches) per kind into the
/// report's per-microbatch and per-step bytes. A collective is repeated by
/// every microbatch when it serves an op that reads a microbatch's data and
/// either moves such data or is a gather (dist-partition gathers for every
/// reader); the others serve the step's driver (loss mean, target count,
/// global norm, optimizer, returned gradients) or reduce a value computed
/// once per step. An error when a kind's repeated bytes do not divide by
/// `microbatches`, or for a collective the report has no field for.
LogicalResult countCommBytes(func::FuncOp function, int64_t microbatches,
                             CompileReport &report);

/// Writes the report as JSON to `path` ('-' is stdout).
LogicalResult writeReport(const CompileReport &report, StringRef path,
                          Location loc);

} // namespace mlir::tpc

#endif // TPC_TARGET_REPORT_H
