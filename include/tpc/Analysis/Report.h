//===- Report.h - the figures of tpc-compile --report -----------*- C++ -*-===//
//
// What one device holds and computes, from shapes alone (INTERFACE.md,
// "Report"), and the read-only analyses that compute each figure from the
// IR at a phase boundary of the compile flow (tpc/Pipelines):
//
//   model and mesh          the module's `tpc.model`, the options
//   stash per layer         the `tpc.stash_layer` ops of the distributed step
//   FLOPs                   the matrix products of the distributed step
//   communication bytes     the collectives dist-partition inserted
//   memory                  the memory plan of the lowered rt program
//
// None of them changes the IR or calls back into a tool. lib/Target/Report
// writes the figures as JSON (docs/design/sharding.md, "The report").
//
//===----------------------------------------------------------------------===//

#ifndef TPC_ANALYSIS_REPORT_H
#define TPC_ANALYSIS_REPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <optional>
#include <string>

namespace mlir::tpc {

/// Bytes one device communicates, per collective kind: the full logical
/// tensor of each collective (an all_reduce's tensor, an all_gather's
/// gathered result, a reduce_scatter's unscattered input).
struct CommBytes {
  int64_t allReduce = 0, allGather = 0, reduceScatter = 0, p2p = 0;
};

/// One device of one pipeline stage: an entry of the report's "stages".
struct StageFigures {
  /// The transformer layers its chunks hold, first and last; and with
  /// several chunks per stage (virtual stages), each chunk's.
  int64_t firstLayer = 0, lastLayer = -1;
  SmallVector<std::pair<int64_t, int64_t>> chunkLayers;
  /// Params (the f32 master weights when training) and their 16-bit
  /// copies; gradients; optimizer state.
  int64_t paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  int64_t peakActivationBytes = 0, peakBytes = 0;
  /// Matrix-product FLOPs of one microbatch on one device (local shapes on
  /// a mesh), the recomputation included (hardware FLOPs), and of the
  /// recomputation alone (the model's are the difference).
  int64_t flopsPerMicrobatch = 0, recomputeFlopsPerMicrobatch = 0;
  /// Of flopsPerMicrobatch, those over the scores that causal attentions
  /// mask: the model counts them (MFU), the kernels skip them, the time
  /// model does not charge them.
  int64_t maskedFlopsPerMicrobatch = 0;
  /// What its transformer layers stash for the backward, one microbatch.
  int64_t stashBytesPerMicrobatch = 0;
  /// Its rematerialization: the compile's --remat, or what auto chose.
  std::string remat = "none";
  /// What every microbatch repeats (the total divided by the microbatches),
  /// and what happens once per step (no p2p).
  CommBytes commPerMicrobatch, commPerStep;
  /// A program of actions: the pools of the values its functions hand to
  /// each other, one per kind (the functions touching it), each with a
  /// slot per microbatch it holds at once and the bytes of a slot.
  struct Pool {
    SmallVector<std::string, 3> functions;
    int64_t slots = 0, slotBytes = 0;
  };
  SmallVector<Pool> pools;
};

/// tpc-compile --hardware: the plan's action lists replayed with the cost
/// of each kernel on a hardware description (PlanSimulation.cpp).
struct StepPrediction {
  /// The description's name and file.
  std::string hardware, hardwarePath;
  double stepSeconds = 0;
  /// Idle time (waiting for another stage) over the step, the mean over
  /// the stages.
  double bubbleFraction = 0;
  /// Model FLOPs (without recomputation) and hardware FLOPs (with it) per
  /// device and second, over the peak of the model's type.
  double mfu = 0, hfu = 0;
  /// Hardware FLOP/s per device (Narayanan et al. eq. 3 counts the
  /// recomputation).
  double tflopsPerDevice = 0;
  /// One rank of each stage: busy seconds (kernels, recomputation,
  /// collectives on the compute stream and its waits for the
  /// communication stream's), idle seconds (the four add up to the step),
  /// the communication stream's seconds that kernels overlapped, the
  /// plan's peak.
  struct Stage {
    double computeSeconds = 0, recomputeSeconds = 0, communicationSeconds = 0,
           idleSeconds = 0, overlappedCommunicationSeconds = 0;
    int64_t peakBytes = 0;
    /// Each kind of kernel's own seconds over the step (an opcode, or a
    /// fused group's opcodes joined by '+'; collectives on whichever stream
    /// they run), the largest first.
    std::vector<std::pair<std::string, double>> kernelSeconds;
    /// Each kind's price in the hardware description (the key of the
    /// efficiency that set its time: "gemm", "attention",
    /// "attention_own_kernels.forward", "elementwise_bandwidth",
    /// "elementwise_bandwidth.kinds.<kind>", "communication"; "mixed"
    /// where its kernels differ).
    std::map<std::string, std::string> kernelPrices;
  };
  SmallVector<Stage, 1> stages;
  /// On a description whose runtime device is cuda: the groups of kernels
  /// (indices in the program, head first) that device runs as one, priced
  /// so, and the bytes the groups do not move that their kernels alone
  /// would (intermediates, operands read twice).
  std::optional<std::vector<std::vector<int64_t>>> deviceFusions;
  /// The runs it launches as one multi-tensor kernel (casts and zeros).
  std::vector<std::vector<int64_t>> deviceBatches;
  /// The sum_squares kernels whose squares the optimizer batch before them
  /// sums in its pass (each then only adds the batch's partial sums).
  std::vector<int64_t> squaresInUpdates;
  int64_t fusedBytesNotMoved = 0;
  /// And the candidates it does not fuse, each with the device's reason.
  std::vector<std::string> fusionRefusals;
};

/// The report of one compile (INTERFACE.md, "Report").
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
  /// The pipeline schedule ("none" without one) and chunks per rank.
  std::string schedule = "none";
  /// tpc-compile --remat.
  std::string remat = "none";
  int64_t virtualStages = 1;
  /// Stashed for the backward by one transformer layer for one microbatch,
  /// on one device.
  int64_t activationBytesPerLayer = 0;
  /// One per pipeline stage (one without a pipeline).
  SmallVector<StageFigures, 1> stages;
  /// With --hardware.
  std::optional<StepPrediction> predicted;
};

/// Fills the "model" fields from the `tpc.model` attribute of `module` (as
/// tpc-import writes it) and the activations' type of `forward`; an error
/// names what is missing.
LogicalResult readModelInfo(ModuleOp module, func::FuncOp forward,
                            int64_t microbatches, CompileReport &report);

/// The FLOPs of the matrix products in `functions`, 2·m·n·k each: linear
/// and its input and weight gradients, batch_matmul, attention (scores and
/// the product with v, over every score: the model's count) and its
/// gradient (FlashAttention's count, which recomputes the scores).
/// Elementwise work is not counted. Saturates at INT64_MAX.
int64_t countMatmulFlops(ArrayRef<func::FuncOp> functions);
/// The same over the ops of pipeline stage `stage` of `function` (cut by
/// dist-pipeline-stages: `dist.pipeline_rank`).
int64_t countStageMatmulFlops(func::FuncOp function, int64_t stage);
/// The matrix-product FLOPs of the ops tpc-remat added to recompute stashed
/// values (`tpc.recompute`), of pipeline stage `stage` if given.
int64_t countRecomputeFlops(func::FuncOp function,
                            std::optional<int64_t> stage);
/// Of those FLOPs (of pipeline stage `stage` if given), the ones over the
/// scores that causal attentions mask (getMaskedMatmulFlops): counted in
/// the model's FLOPs, skipped by the kernels.
int64_t countMaskedFlops(func::FuncOp function, std::optional<int64_t> stage);

/// The bytes each of transformer layers 0 .. `layers` - 1 stashes for one
/// microbatch on one device in `function` (an unrolled @train_step,
/// partitioned or not; 0 for an @forward, which stashes nothing), in one
/// walk: the results its `tpc.stash_layer` ops (copies of @train_F's) mark
/// with the layer, at the type they are computed with (one device's shard
/// after dist-partition, before any collective that reads them). Values of
/// a microbatch's data count once per microbatch (an error if they do not
/// divide by `microbatches`); those the microbatches share (computed from
/// parameters alone) count once.
FailureOr<SmallVector<int64_t>> countStashBytesByLayer(func::FuncOp function,
                                                       int64_t microbatches,
                                                       int64_t layers);
/// The bytes pipeline stage `stage` of `function` (cut by
/// dist-pipeline-stages) stashes of what it receives: an activation a
/// chunk receives is its first layer's input, which that layer's backward
/// reads, and which no `tpc.stash_layer` marks (the chunk's F takes it as
/// an argument). One microbatch's (the receives divided by `microbatches`).
int64_t countReceivedStashBytes(func::FuncOp function, int64_t microbatches,
                                int64_t stage);

/// Sums the collectives of `function` (an @train_step or @forward after
/// dist-partition, with `microbatches` microbatches) per kind into what every
/// microbatch repeats and what happens once per step. A collective is
/// repeated by every microbatch when it serves an op that reads a
/// microbatch's data and either moves such data or is a gather
/// (dist-partition gathers for every reader); the others serve the step's
/// driver (loss mean, target count, global norm, optimizer, returned
/// gradients) or reduce a value computed once per step. An error when a
/// kind's repeated bytes do not divide by `microbatches`, or for a
/// collective the report has no field for.
///
/// With `stage`, only the ops of that pipeline stage count (a step cut by
/// dist-pipeline-stages); its point-to-point transfers are `p2p` per
/// microbatch (each message a device sends or receives), except the
/// exchange of a tied parameter's gradient, which sums it over its group:
/// an all_reduce per step, counted once (the tensor the device sends).
LogicalResult countCommBytes(func::FuncOp function, int64_t microbatches,
                             CommBytes &perMicrobatch, CommBytes &perStep,
                             std::optional<int64_t> stage = std::nullopt);

/// Fills the memory figures (params, gradients, optimizer state, peaks) of
/// every entry of `report.stages` from the memory plan of the rt program in
/// `module` (rt-plan-memory ran): a pipeline stage counts the buffers its
/// kernels use.
LogicalResult readMemoryFigures(ModuleOp module, CompileReport &report);
/// Fills each stage's `pools` from the rt program in `module` (planned: each
/// pool's `stride`); none without actions.
LogicalResult readPoolFigures(ModuleOp module, CompileReport &report);

struct Hardware;

/// Kernels a runtime device runs as one: their indices in the program
/// (rt.kernel order), head first. `headWritten`: the head's result is
/// written though a later member reads it (a linear whose gelu writes
/// elsewhere: the aux matrix), else such a result is an intermediate the
/// device never writes.
struct FusedGroup {
  std::vector<int64_t> kernels;
  bool headWritten = false;
};

/// How a runtime device runs the program where the prediction prices it
/// otherwise than kernel by kernel (rt::planCudaDevice, the CUDA device's
/// own rules): the groups of kernels it runs as one, and the attention
/// backward kernels (indices) it runs on its own kernels because cuDNN
/// refuses them (a dropout, fp32, ...): those do seven products with the
/// forward's log-sum-exps (nine without: the forward again), where the
/// others are priced at FlashAttention's five.
struct DevicePlan {
  std::vector<FusedGroup> groups;
  /// Runs of independent kernels it launches as one multi-tensor kernel
  /// (casts and zeros: runtime/cuda/KernelBatches.h), priced as one
  /// memory-bound launch of their bytes and named "<opcodes> batch".
  std::vector<FusedGroup> batches;
  /// The sum_squares kernels (indices) whose squares the optimizer batch
  /// right before them sums in its own pass over the gradients
  /// (runtime/cuda/KernelBatches.h squaresAfterBatch): priced as the
  /// partial sums' addition alone.
  std::vector<int64_t> squaresInUpdates;
  /// The attention kernels (indices, forward and backward) the device runs
  /// on its own kernels, which cuDNN refuses (dropout, fp32, ...): a
  /// backward's seven products, and the description's own-kernel
  /// efficiencies where it has them.
  std::vector<int64_t> ownAttention;
  /// The candidates the device does not fuse, each with its reason
  /// ("kernel K (opcode)...: why", FusionPlan.h's words).
  std::vector<std::string> refusals;
};

/// Fills `report.predicted` (the stages' FLOPs and peaks read before) by
/// replaying the lowered rt program of `module` on `hardware`: one rank per
/// pipeline stage runs its action list (or the program's kernels in order),
/// each kernel costing its roofline time, each collective inside a stage its
/// alpha-beta time on the link its group crosses (ranks placed pp-major,
/// then dp, then tp, `devices_per_node` to a node), each point-to-point
/// transfer its message time between the stages it joins. An error names a
/// kernel the description has no peak for.
///
/// On a description whose runtime device is cuda, `device` is how that
/// device runs the program (rt::planCudaDevice, its own rules): each fused
/// group is priced as one kernel that moves the group's outside buffers
/// once (none of the intermediates the device never writes), an epilogue
/// group at its matrix product's FLOPs, and the report's
/// predicted.device_fusions lists them; an attention backward on the
/// device's own kernels is priced at the products they run.
LogicalResult predictStep(ModuleOp module, const Hardware &hardware,
                          CompileReport &report, const DevicePlan &device = {});

} // namespace mlir::tpc

#endif // TPC_ANALYSIS_REPORT_H
