//===- KernelSupport.h - pieces shared by the CPU kernels -------*- C++ -*-===//
//
// Internal to runtime/cpu: argument checks and the row and attention-block
// helpers that the forward kernels (CpuKernels.cpp) and their backward
// (CpuGradKernels.cpp) both use, so a backward recomputes exactly what its
// forward computed.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CPU_KERNELSUPPORT_H
#define TPCRT_CPU_KERNELSUPPORT_H

#include "tpcrt/CpuKernels.h"

#include <cstdint>
#include <initializer_list>

namespace tpcrt {
namespace cpu {
namespace detail {

/// An error naming `kernel` when a size is negative.
Status checkNonNegative(const char *kernel,
                        std::initializer_list<int64_t> sizes);

/// The error of an id or label (`what`) at `position` outside [0, vocab).
Status outsideVocabulary(const char *kernel, const char *what, int64_t value,
                         int64_t position, int64_t vocab);

/// Element count of `shape`; false when a dimension is negative.
bool checkShape(const int64_t *shape, int rank, int64_t &count);

/// Splits shape around dim into (outer, dim, inner) element counts.
Status splitAt(const char *kernel, const int64_t *shape, int rank, int64_t dim,
               int64_t &outer, int64_t &inner);

Status checkDropoutRate(const char *kernel, double rate);

/// An error unless `block` (if any) has `count` elements and lies inside its
/// whole tensor.
Status checkGlobalBlock(const char *kernel, const GlobalBlock *block,
                        int64_t count);

/// Calls run(local, global, length) for each run of elements consecutive in
/// both the block and the whole tensor (each row of the block): local and
/// global are the run's first element's indices. Without a block, one run
/// of `count` elements at 0.
template <typename Run>
void forEachGlobalRun(const GlobalBlock *block, int64_t count, Run run) {
  if (!block) {
    run(int64_t(0), uint64_t(0), count);
    return;
  }
  int rank = block->rank;
  if (rank == 0) {
    run(int64_t(0), uint64_t(0), int64_t(1));
    return;
  }
  for (int d = 0; d < rank; ++d)
    if (block->shape[d] == 0)
      return;
  int64_t stride[kMaxRank], index[kMaxRank] = {};
  stride[rank - 1] = 1;
  for (int d = rank - 1; d-- > 0;)
    stride[d] = stride[d + 1] * block->globalShape[d + 1];
  int64_t row = block->shape[rank - 1];
  for (int64_t local = 0;; local += row) {
    int64_t global = 0;
    for (int d = 0; d < rank; ++d)
      global += (block->offset[d] + index[d]) * stride[d];
    run(local, static_cast<uint64_t>(global), row);
    int d = rank - 1;
    while (d-- > 0 && ++index[d] == block->shape[d])
      index[d] = 0;
    if (d < 0)
      return;
  }
}

/// The stream index of probability (b, h, i, 0) of a block of attention
/// (local indices; `dropout` places the block in the whole tensor).
uint64_t dropoutRow(const AttentionDropout &dropout, int64_t b, int64_t h,
                    int64_t i, int64_t heads, int64_t seqQ, int64_t seqK);

/// The local columns of a block of `columns` logits that are classes of the
/// vocabulary (the rest are padding): [0, the returned count).
inline int64_t realColumns(int64_t columns, const VocabBlock &block) {
  int64_t real = block.vocab - block.offset;
  return real < 0 ? 0 : real > columns ? columns : real;
}

/// Max of row[0, n) (-inf when n is 0).
float rowMax(const float *row, int64_t n);

/// Sum of e^(row[j] - shift) over [0, n), accumulated in double.
double expSum(const float *row, int64_t n, float shift);

/// out[j] = e^(row[j] - shift) over [0, n); returns their sum in double.
double expInto(const float *row, int64_t n, float shift, float *out);

/// Softmax of row[0, valid) into out[0, valid), zeros in out[valid, len).
/// out may equal row. Returns the row's log-sum-exp, log(sum_j e^row[j]).
float softmaxRow(const float *row, int64_t valid, int64_t len, float *out);

/// The sizes attention's arguments must have (see attention()).
Status checkAttention(int64_t batch, int64_t heads, int64_t kvHeads,
                      int64_t seqQ, int64_t seqK, int64_t headDim,
                      int64_t valueDim, bool causal,
                      const AttentionDropout *dropout, AttentionLayout layout);

/// Query rows [i0, i0 + rows) of one head and the keys [0, keys) they see;
/// a scratch block holds them with row stride ld.
struct AttentionBlock {
  int64_t rows = 0, keys = 0, ld = 1;
};
AttentionBlock attentionBlock(int64_t i0, int64_t seqQ, int64_t seqK,
                              bool causal);

/// p[i, j] = softmax_j(scale * q[i0 + i] . k[j]) for the block, causal rows
/// masked to exactly 0; q and k are one head's [s_q, d] and [s_k, d] rows,
/// with row strides ldq and ldk. The block's rows' log-sum-exps: with
/// `givenLse` (row i's at givenLse[i]) p[i, j] = e^(scale q . k - lse)
/// instead of the softmax; else written to `lse` where not null.
Status attentionProbabilities(const float *q, int64_t ldq, const float *k,
                              int64_t ldk, int64_t headDim, int64_t i0,
                              const AttentionBlock &block, int64_t seqQ,
                              int64_t seqK, bool causal, float scale, float *p,
                              float *lse = nullptr,
                              const float *givenLse = nullptr);

/// Dropout on a block of probabilities: element (i, j) is element
/// firstRow + i * seqK + j of the stream.
void dropProbabilities(float *p, const AttentionBlock &block, uint64_t firstRow,
                       int64_t seqK, const AttentionDropout &dropout);

} // namespace detail
} // namespace cpu
} // namespace tpcrt

#endif // TPCRT_CPU_KERNELSUPPORT_H
