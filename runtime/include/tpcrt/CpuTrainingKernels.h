//===- CpuTrainingKernels.h - backward and optimizer CPU kernels -*- C++ -*-=//
//
// The backward ops of docs/design/training.md and the optimizer's ops, on the
// CPU in fp32, with the conventions of CpuKernels.h: plain functions on raw,
// row-major, contiguous pointers with explicit sizes, allocating nothing (a
// kernel that needs scratch takes it and says how much), returning a Status.
// Each is checked against torch autograd / torch.optim by
// runtime/test/kernel_reference.py.
//
// Gradients are sums over many terms: where a kernel reduces over rows (bias,
// norm-parameter and global-norm sums) it accumulates in double.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CPUTRAININGKERNELS_H
#define TPCRT_CPUTRAININGKERNELS_H

#include "tpcrt/CpuKernels.h"
#include "tpcrt/Status.h"

#include <cstdint>

namespace tpcrt {
namespace cpu {

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// The table gradient of embedding: dTable [vocab, hidden] is zeroed, then
/// row ids[i] += dY[i, :] for every i (repeated ids accumulate). An id
/// outside [0, vocab) is an error. With a block (CpuKernels.h), dTable is the
/// block's `rows` rows: ids in [offset, offset + rows) add to row id - offset,
/// other ids in [0, vocab) add nothing here.
Status embeddingGrad(const float *dY, const int64_t *ids, int64_t numIds,
                     int64_t rows, int64_t hidden, float *dTable,
                     const VocabBlock *block = nullptr);

/// embeddingGrad added into dTable instead: each row an id hits gets the
/// sum of its dY rows, summed in float from 0 in position order (the sum
/// embeddingGrad writes) and then added to it; the other rows are left as
/// they are. `order` (numIds) and `row` (hidden) are scratch.
Status embeddingGradAccumulate(const float *dY, const int64_t *ids,
                               int64_t numIds, int64_t rows, int64_t hidden,
                               float *dTable, const VocabBlock *block,
                               int64_t *order, float *row);

/// dX [m, k] of linear: dY [m, n] times the weight's transpose (in_out
/// weight [k, n]) or the weight itself (out_in weight [n, k]).
Status linearInputGrad(const float *dY, const float *weight, int64_t m,
                       int64_t k, int64_t n, WeightLayout layout, float *dX);

/// dW of linear in the weight's layout: x^T dY [k, n] (in_out) or dY^T x
/// [n, k] (out_in); x is [m, k], dY [m, n]. With `accumulate`, added to
/// dW's values (linear_weight_grad_accumulate: the GEMM's beta = 1).
Status linearWeightGrad(const float *x, const float *dY, int64_t m, int64_t k,
                        int64_t n, WeightLayout layout, float *dW,
                        bool accumulate = false);

/// out[j] = sum over the leading dims of x[.., j]: x has `count` elements,
/// out `outCount`, which must divide it (the reverse of add's broadcast: a
/// bias gradient). Accumulates in double, `scratch` holding outCount doubles.
Status sumTo(const float *x, int64_t count, int64_t outCount, double *scratch,
             float *out);

/// dX of layer_norm over rows of length cols (statistics recomputed from x
/// as the forward computes them).
Status layerNormInputGrad(const float *dY, const float *x, const float *weight,
                          int64_t rows, int64_t cols, float epsilon, float *dX);

/// dWeight[c] = sum_r dY[r, c] * xhat[r, c] and dBias[c] = sum_r dY[r, c];
/// scratch holds 2 * cols doubles.
Status layerNormParamGrad(const float *dY, const float *x, int64_t rows,
                          int64_t cols, float epsilon, double *scratch,
                          float *dWeight, float *dBias);

/// dX of rms_norm.
Status rmsNormInputGrad(const float *dY, const float *x, const float *weight,
                        int64_t rows, int64_t cols, float epsilon, float *dX);

/// dWeight[c] = sum_r dY[r, c] * x[r, c] / rms(x[r]); scratch holds cols
/// doubles.
Status rmsNormParamGrad(const float *dY, const float *x, int64_t rows,
                        int64_t cols, float epsilon, double *scratch,
                        float *dWeight);

/// dX = dY * gelu'(x); dX may equal dY.
Status geluGrad(const float *dY, const float *x, int64_t count,
                GeluApproximation approximation, float *dX);

/// dX = dY * silu'(x); dX may equal dY.
Status siluGrad(const float *dY, const float *x, int64_t count, float *dX);

/// The keep mask of dropout as bytes (1 kept, 0 dropped), element i being
/// element firstIndex + i of the stream (with `block`, as dropout() indexes
/// it), exactly what dropout() keeps.
Status dropoutMask(int64_t count, uint64_t key, double rate, int64_t firstIndex,
                   uint8_t *mask, const GlobalBlock *block = nullptr);

/// out = mask ? x / (1 - rate) : 0 (the scale of dropoutScale); out may
/// equal x. Both dropout's forward with a stashed mask and its backward.
Status applyMask(const float *x, const uint8_t *mask, int64_t count,
                 double rate, float *out);

/// dX = y * (dY - sum_j dY * y) per row of [outer, q, k] (y is softmax's
/// output); with causal, entries past the diagonal are 0. dX may equal dY.
Status softmaxGrad(const float *dY, const float *y, int64_t outer, int64_t q,
                   int64_t k, bool causal, float *dX);

/// Floats of scratch attentionGrad needs: two blocks of scores.
inline int64_t attentionGradScratchSize(int64_t seqQ, int64_t seqK) {
  return 2 * attentionScratchSize(seqQ, seqK);
}

/// The gradients of attention (same arguments as attention()) from dO [b,
/// heads, sq, dv] (or SeqMajor, as all the others): dq like q, dk like k,
/// dv like v (PackedQkv: dq, dk and dv point at their parts of one tensor,
/// as q, k and v do). The probabilities and
/// their dropout mask are recomputed from q, k and the stream; dk and dv of
/// a kv head sum the contributions of its group of query heads. With the
/// forward's `out` (dO's layout) and `lse` (attention()'s), P = e^(scale q
/// k^T - lse) and D = rowsum(dO * out) instead of a softmax and
/// rowsum(dPd * P): what a device that keeps no whole rows of P does.
Status attentionGrad(const float *dO, const float *q, const float *k,
                     const float *v, int64_t batch, int64_t heads,
                     int64_t kvHeads, int64_t seqQ, int64_t seqK,
                     int64_t headDim, int64_t valueDim, bool causal,
                     float scale, float *scratch, float *dq, float *dk,
                     float *dv, const AttentionDropout *dropout = nullptr,
                     AttentionLayout layout = AttentionLayout::HeadMajor,
                     const float *out = nullptr, const float *lse = nullptr);

/// dLogits = scale * (softmax(logits) - onehot(label)) per position, 0 for
/// positions whose label is ignoreIndex; scale is d(loss sum) (1 / count for
/// the mean). A label outside [0, vocab) that is not ignored is an error.
Status crossEntropyGrad(const float *logits, const int64_t *labels,
                        int64_t positions, int64_t vocab, int64_t ignoreIndex,
                        float scale, float *dLogits);

/// crossEntropyGrad on a block of a padded or split vocabulary, after steps 1
/// and 2 of crossEntropyBlockMax (max and sumExp combined over the ranks):
/// dLogits = scale * (e^(logit - max) / sumExp - onehot(label)) on the
/// block's classes, 0 on its padding columns and on ignored positions.
Status crossEntropyBlockGrad(const float *logits, const int64_t *labels,
                             int64_t positions, int64_t columns,
                             const VocabBlock &block, int64_t ignoreIndex,
                             const float *max, const float *sumExp, float scale,
                             float *dLogits);

/// The reverse of slice: out has x's shape except `extent` along dim; x
/// lands at [offset, offset + shape[dim]) and the rest is zero.
Status pad(const float *x, const int64_t *shape, int rank, int64_t dim,
           int64_t offset, int64_t extent, float *out);

/// The reverse of repeatInterleave: along dim, out[i] = sum over r <
/// repeats of x[i * repeats + r]; shape is x's, shape[dim] a multiple of
/// repeats.
Status sumGroups(const float *x, const int64_t *shape, int rank, int64_t dim,
                 int64_t repeats, float *out);

//===----------------------------------------------------------------------===//
// Training driver and optimizers
//===----------------------------------------------------------------------===//

/// The number of labels that are not ignoreIndex.
Status countTargets(const int64_t *labels, int64_t count, int64_t ignoreIndex,
                    int64_t *out);

/// 1 / count as f32, 0 when count is 0 (the gradient of the mean loss
/// with respect to the loss sum); a negative count is an error.
Status inverseCount(const int64_t *count, float *out);

/// Hyperparameters of adamwUpdate, as torch.optim.AdamW takes them.
struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
};

/// One torch.optim.AdamW step (amsgrad off, maximize off), in place on
/// param, expAvg and expAvgSq, for the 1-based optimizer step `step`, with
/// the gradient multiplied by gradScale first (the clip coefficient; 1
/// without clipping):
///   param *= 1 - lr * weight_decay
///   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
///   param -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step)
///                                        + eps)
/// in float with double scalars, in torch's order of operations.
Status adamwUpdate(float *param, const float *grad, float *expAvg,
                   float *expAvgSq, int64_t count, float lr, int64_t step,
                   const AdamWOptions &options, float gradScale);

/// One torch.optim.SGD step (dampening 0, no Nesterov), in place:
///   d = g * gradScale + weight_decay * param
///   buf = momentum * buf + d     (buf starts at 0, so step 1 gives d)
///   param -= lr * buf
/// Without a momentumBuffer (sgd_update_plain, momentum 0, as torch keeps no
/// buffer then): param -= lr * d, the same numbers as momentum 0 with one.
Status sgdUpdate(float *param, const float *grad, float *momentumBuffer,
                 int64_t count, float lr, double momentum, double weightDecay,
                 float gradScale);

/// Adds the squares of x[0, count) to *sum (double).
Status sumSquares(const float *x, int64_t count, double *sum);

/// The global gradient norm sqrt(sumSquares) and torch's
/// clip_grad_norm_ coefficient min(1, maxNorm / (norm + 1e-6)); maxNorm 0
/// means no clipping (coefficient 1). A negative sum or maxNorm is an error.
Status clipCoefficient(float sumSquares, double maxNorm, float *norm,
                       float *coefficient);

/// Learning-rate schedules.
enum class LrScheduleKind { Constant, Cosine };

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::Constant;
  double lr = 0.0, minLr = 0.0;
  /// Cosine only: lr rises linearly over steps 1..warmupSteps, then decays
  /// along a half cosine to minLr at decaySteps, and stays there.
  int64_t warmupSteps = 0, decaySteps = 0;
};

/// The learning rate of 1-based optimizer step `step`:
///   constant:  lr
///   cosine:    lr * step / warmup                      for step <= warmup
///              min_lr + (lr - min_lr) (1 + cos(pi t)) / 2
///                with t = (step - warmup) / (decay - warmup), clamped to 1
/// A step below 1 is an error.
Status lrSchedule(int64_t step, const LrScheduleOptions &options, float *lr);

} // namespace cpu
} // namespace tpcrt

#endif // TPCRT_CPUTRAININGKERNELS_H
