//===- PlanModel.h - closed forms of a parallel plan ------------*- C++ -*-===//
//
// What tpc-plan searches with (docs/design/cost-model.md): a transformer's
// parameters, FLOPs, per-device memory and step time for a plan (tp, pp, dp,
// virtual stages, microbatch size, sequence parallelism, schedule,
// recomputation), from shapes alone and the same cost functions the
// compile's prediction uses (Cost.h). The memory closed forms are the
// compiler's own stash (Korthikanti et al. 2022, Table 2, which
// test/Plan checks against the compiled report); the time of a candidate is
// first a closed form, then a replay of the schedule's real per-rank action
// lists (dist's generateSchedule) with each action's cost.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_ANALYSIS_PLANMODEL_H
#define TPC_ANALYSIS_PLANMODEL_H

#include "tpc/Analysis/Hardware.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tpc {

/// A decoder-only transformer, as tpc-import builds it.
struct TransformerShape {
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, headDim = 0,
          ffn = 0, vocab = 0, seq = 0;
  /// Llama's gate/up/down MLP (else GPT-2's two matrices), RMS norm,
  /// no learned positions, no biases.
  bool llama = false;
  bool tiedEmbeddings = true;
  /// 2 (bf16) or 4 (fp32).
  int64_t elementBytes = 2;
  /// Fused attention (never materializes s×s) or Megatron's unfused chain.
  bool fusedAttention = false;
  /// The attention's dropout rate: on the CUDA device cuDNN refuses a
  /// fused attention with one (as it refuses fp32), and the device's own
  /// backward runs seven products where FlashAttention's runs five.
  double attentionDropout = 0;
  /// The dropout after the attention and the MLP (its masks are stashed)
  /// and after the embedding (the first stage keeps its mask).
  double residualDropout = 0, embeddingDropout = 0;
};

struct PlanChoice {
  int64_t tp = 1, pp = 1, dp = 1, virtualStages = 1;
  int64_t microbatchSize = 1, microbatches = 1;
  bool sequenceParallel = false;
  /// gpipe, 1f1b, interleaved-1f1b, zb-h1 (none when pp = 1).
  std::string schedule = "1f1b";
  /// none, selective, full.
  std::string remat = "none";
};

/// Per device (the stage with the largest peak), and per step.
struct PlanEstimate {
  int64_t paramBytes = 0, gradBytes = 0, optimizerBytes = 0,
          activationBytes = 0, peakBytes = 0;
  /// The stage the memory figures are of.
  int64_t peakStage = 0;
  double stepSeconds = 0;
  /// The slowest stage's busy time by kind; bubble = the rest of the step.
  double computeSeconds = 0, recomputeSeconds = 0, communicationSeconds = 0,
         bubbleSeconds = 0;
  /// Per device and step.
  double modelFlops = 0, hardwareFlops = 0;
  double mfu = 0, hfu = 0;
};

/// Parameters of the model as tpc-import builds it (GPT-2: biases, two
/// layer norms per layer and a final one, learned positions; Llama: RMS
/// norms, no biases); the LM head counts once when tied.
int64_t countParameters(const TransformerShape &shape);
/// The parameters of one transformer layer (countParameters' per layer).
int64_t countLayerParameters(const TransformerShape &shape);
/// The elements of each of one layer's vector parameters (norms, biases) on
/// a rank of `tp` (the column-parallel biases divided by tp): the
/// gradients no GEMM accumulates over microbatches.
std::vector<double> layerVectorElements(const TransformerShape &shape,
                                        double tp);
/// The elements of each of one layer's parameter tensors on a rank of `tp`
/// (split ones divided by tp), in the order the backward finishes them:
/// what the data-parallel reduction reduces, one all_reduce per tensor (on
/// the CUDA device in runs of up to kReductionBucketBytes).
std::vector<double> layerTensorElements(const TransformerShape &shape,
                                        double tp);

/// Narayanan et al. 2021 (Megatron-LM), eq. 2 and eq. 3, and Korthikanti et
/// al. 2022's model FLOPs: P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h));
/// model FLOPs per iteration 72·B·l·s·h²·(1 + s/(6h) + V/(12·h·l)); with
/// full recomputation 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
double narayananParameters(double l, double h, double V, double s);
double korthikantiModelFlops(double B, double l, double s, double h,
                             double V);
double narayananRecomputeFlops(double B, double l, double s, double h,
                               double V);

/// The widest rows whose norm backward the CUDA device runs as one group
/// with the norm's parameter gradients (runtime/cuda/FusionPlan.h's
/// kNormBackwardMostColumns: the block's sums in shared memory; the
/// compiler's CudaFusions.cpp asserts they agree).
constexpr int64_t kCudaNormBackwardMostColumns = 8192;
/// The partial sums per operand of the CUDA device's sum_squares
/// (runtime/cuda/KernelBatches.h kSquaresPartialBlocks): what it reads
/// where the optimizer batch before it summed the squares.
constexpr int64_t kCudaSquaresPartialBlocks = 128;

/// Bytes one transformer layer stashes for one microbatch on one device
/// (Korthikanti Table 2 generalized to what the compiler stashes of GPT-2
/// and Llama layers: none, selective, full, with tp and sequence
/// parallelism).
int64_t stashBytesPerLayer(const TransformerShape &shape,
                           const PlanChoice &plan);

/// What a schedule that defers the weight gradients (ZB-H1, ZB-V) holds of
/// one layer and microbatch from its input-gradient backward (B) to its
/// weight-gradient one (W), on one device: the stashed inputs that W reads
/// (the linears' inputs, the norms' inputs; the rest of the stash is freed
/// at B), and the output gradients B writes for W (each linear's and each
/// norm's).
struct DeferredWeightBytes {
  int64_t weightInputs = 0, outputGradients = 0;
};
DeferredWeightBytes deferredWeightBytesPerLayer(const TransformerShape &shape,
                                                const PlanChoice &plan);

/// The plan's memory and, with `simulate` (and with pp > 1, m <= 2p and
/// p·m·v <= 256), its step replayed on the schedule's action lists (else the
/// closed form: (m + p − 1)·c for 1F1B, (m + (p − 1)/v)·c interleaved,
/// m·c + (p − 1)·(F + B − W) for ZB-H1). An
/// error for a plan the shapes do not allow (heads not divisible by tp,
/// layers not by pp·v, ...).
std::optional<PlanEstimate> estimatePlan(const TransformerShape &shape,
                                         const PlanChoice &plan,
                                         const Hardware &hw, bool simulate,
                                         std::string &error);

} // namespace mlir::tpc

#endif // TPC_ANALYSIS_PLANMODEL_H
