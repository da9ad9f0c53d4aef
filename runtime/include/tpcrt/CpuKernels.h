//===- CpuKernels.h - fp32 forward kernels of the CPU backend ---*- C++ -*-===//
//
// The forward semantics of the tpc ops (dialects/Tpc/IR/TpcOps.td) on the
// CPU, in fp32. Every kernel is a plain function on raw, row-major, contiguous
// float pointers with explicit sizes, and allocates nothing: the interpreter
// owns the memory (an arena) and passes pointers into it. Kernels that need
// scratch space take it as an argument and say how much.
//
// Every kernel returns a Status: sizes that cannot be right (negative, a
// permutation that is not one, an id outside the table) are errors, never
// undefined behaviour. Outputs must not alias inputs unless a kernel says so.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CPUKERNELS_H
#define TPCRT_CPUKERNELS_H

#include "tpcrt/AttentionRows.h"
#include "tpcrt/Shape.h"
#include "tpcrt/Status.h"

#include <algorithm>
#include <cstdint>

namespace tpcrt {
namespace cpu {

/// The floating-point storage types of buffers; kernels compute in fp32.
enum class FloatType { F32, BF16, F16 };

/// True when the GEMM kernels call OpenBLAS' cblas_sgemm (TPCRT_HAVE_OPENBLAS
/// at build time); false when they use the portable fallback.
bool hasOpenBlas();

/// Row-major C = alpha * op(A) * op(B) + beta * C with op(A) [m, k] and op(B)
/// [k, n]; op transposes when the flag is set. lda/ldb/ldc are the row strides
/// of A, B and C as stored. beta == 0 overwrites C (NaNs in C do not survive),
/// as BLAS does. Uses cblas_sgemm when OpenBLAS is built in, else
/// gemmFallback.
Status gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            float alpha, const float *a, int64_t lda, const float *b,
            int64_t ldb, float beta, float *c, int64_t ldc);

/// The portable blocked GEMM used without OpenBLAS; same contract as gemm.
/// Always compiled, so that it is tested on machines that have OpenBLAS too.
Status gemmFallback(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                    float alpha, const float *a, int64_t lda, const float *b,
                    int64_t ldb, float beta, float *c, int64_t ldc);

/// A block of a vocabulary split over ranks (vocabulary-parallel embedding
/// tables and logits): the kernel's local entries (table rows, logits
/// columns) are the global entries [offset, offset + local extent), and ids
/// or labels must lie in [0, vocab). Global entries at or past `vocab` are
/// padding (cross-entropy excludes them; an embedding table is padded only
/// past its last block, so there `vocab` is the padded size).
struct VocabBlock {
  int64_t offset = 0;
  int64_t vocab = 0;
};

/// out[i, :] = table[ids[i], :]; table is [vocab, hidden], out [numIds,
/// hidden]. An id outside [0, vocab) is an error naming it.
Status embedding(const float *table, int64_t vocab, int64_t hidden,
                 const int64_t *ids, int64_t numIds, float *out);

/// embedding with the table and the result stored as any float types: each
/// row is converted as cast converts, so a 16-bit table is never widened as
/// a whole. With a block, the table's `rows` are the block's rows: an id in
/// [offset, offset + rows) reads row id - offset, any other id in [0,
/// vocab) gives a zero row (the result is this rank's part of a sum over
/// the ranks).
Status embeddingRows(const void *table, FloatType tableType, int64_t rows,
                     int64_t hidden, const int64_t *ids, int64_t numIds,
                     FloatType outType, void *out,
                     const VocabBlock *block = nullptr);

/// Layout of a linear weight, as the op's `layout` attribute.
enum class WeightLayout {
  /// [in, out] (GPT-2 Conv1D).
  InOut,
  /// [out, in] (torch.nn.Linear).
  OutIn,
};

/// out[m, n] = x[m, k] · W (+ bias[n]). Several output dimensions of the op
/// are flattened into n by the caller. bias may be null.
Status linear(const float *x, const float *weight, const float *bias, int64_t m,
              int64_t k, int64_t n, WeightLayout layout, float *out);

/// out[b, m, n] = scale * sum_k lhs[b, m, k] * rhs[b, k, n]; transposeLhs
/// reads lhs stored as [b, k, m], transposeRhs rhs stored as [b, n, k].
Status batchMatmul(const float *lhs, const float *rhs, int64_t batch, int64_t m,
                   int64_t k, int64_t n, bool transposeLhs, bool transposeRhs,
                   float scale, float *out);

/// (x - mean) / sqrt(var + eps) * weight + bias over rows of length cols,
/// biased variance.
Status layerNorm(const float *x, const float *weight, const float *bias,
                 int64_t rows, int64_t cols, float epsilon, float *out);

/// x / sqrt(mean(x^2) + eps) * weight over rows of length cols.
Status rmsNorm(const float *x, const float *weight, int64_t rows, int64_t cols,
               float epsilon, float *out);

enum class GeluApproximation { Erf, Tanh };

/// Elementwise; out may equal x.
Status gelu(const float *x, int64_t count, GeluApproximation approximation,
            float *out);

/// x * sigmoid(x), elementwise; out may equal x.
Status silu(const float *x, int64_t count, float *out);

/// out = lhs + rhs where rhs (rhsCount elements) is lhs's shape or a suffix of
/// it, repeated over the leading dimensions: rhsCount must divide lhsCount.
/// out may equal lhs.
Status add(const float *lhs, int64_t lhsCount, const float *rhs,
           int64_t rhsCount, float *out);

/// As add, on i64 (sums of target counts), wrapping on overflow.
Status addInt64(const int64_t *lhs, int64_t lhsCount, const int64_t *rhs,
                int64_t rhsCount, int64_t *out);

/// As add, with a product.
Status mul(const float *lhs, int64_t lhsCount, const float *rhs,
           int64_t rhsCount, float *out);

/// Softmax over the last dimension of x [outer, q, k]. With causal, (i, j)
/// with j > i + (k - q) gets probability 0 (exactly), which needs k >= q.
/// Without causal, q only splits the rows. out may equal x.
Status softmax(const float *x, int64_t outer, int64_t q, int64_t k, bool causal,
               float *out);

/// Where a rank's block of a split tensor lies in the whole tensor, for the
/// kernels that draw a dropout stream at global indices: per dimension
/// (`rank` of them), the block's extent, the whole tensor's extent and the
/// block's offset in it (Layout.h's Block).
struct GlobalBlock {
  int rank = 0;
  const int64_t *shape = nullptr;
  const int64_t *globalShape = nullptr;
  const int64_t *offset = nullptr;
};

/// Dropout of x [count] with the counter-based stream of tpcrt/Random.h:
/// element i is element firstIndex + i of the op's full result tensor (a
/// slice passes its offset and draws the same mask as the whole tensor
/// would there). With `block` (x is that block, count its elements), an
/// element draws at firstIndex + its row-major index in the whole tensor.
/// Kept elements are scaled by 1 / (1 - rate); rate must lie in [0, 1).
/// out may equal x.
Status dropout(const float *x, int64_t count, uint64_t key, double rate,
               int64_t firstIndex, float *out,
               const GlobalBlock *block = nullptr);

/// Dropout on attention probabilities (see attention).
struct AttentionDropout {
  /// dropoutKey(seed, stream, step).
  uint64_t key = 0;
  /// In [0, 1); 0 keeps every probability.
  double rate = 0.0;
  /// Stream index of probability (0, 0, 0, 0): where this piece (e.g. a
  /// microbatch) starts in the op's full probability tensor.
  uint64_t firstIndex = 0;
  /// On a mesh, where this rank's [b, heads, sq, sk] block lies in the whole
  /// probability tensor: the offsets of its batch, head and query indices
  /// and the whole tensor's heads and queries (0: the block's own). Keys are
  /// never split.
  int64_t batchOffset = 0, headOffset = 0, queryOffset = 0;
  int64_t globalHeads = 0, globalSeqQ = 0;
};

/// Query rows attention handles at once (its scratch is one block of scores).
constexpr int64_t kAttentionBlock = 64;

/// Floats of scratch that attention needs: a block of scores [rows, s_k].
inline int64_t attentionScratchSize(int64_t seqQ, int64_t seqK) {
  return std::min(seqQ, kAttentionBlock) * seqK;
}

/// softmax(scale * q k^T [+ causal mask]) v per head with grouped KV heads:
/// q [b, heads, sq, d], k [b, kvHeads, sk, d], v [b, kvHeads, sk, dv], out
/// [b, heads, sq, dv] (SeqMajor: every tensor's second and third dims
/// swapped, the same values otherwise; PackedQkv: q, k and v point at their
/// parts of one [b, s, 3, heads, d] tensor, qkvPartOffset, and out is
/// sequence-major); query head h reads kv head h / (heads / kvHeads).
/// scratch holds attentionScratchSize(sq, sk) floats. With `dropout` (may be
/// null), the probabilities are masked after the softmax and before the
/// product with v, probability (b, h, i, j) being element
/// firstIndex + ((b * heads + h) * sq + i) * sk + j of the dropout stream
/// (b, h, i, heads and sq global ones where `dropout` places the block).
/// With `lse`, row i of head h also writes its log-sum-exp (of the scaled,
/// masked scores, before dropout) to lse[(b * heads + h) * sq + i].
Status attention(const float *q, const float *k, const float *v, int64_t batch,
                 int64_t heads, int64_t kvHeads, int64_t seqQ, int64_t seqK,
                 int64_t headDim, int64_t valueDim, bool causal, float scale,
                 float *scratch, float *out,
                 const AttentionDropout *dropout = nullptr,
                 AttentionLayout layout = AttentionLayout::HeadMajor,
                 float *lse = nullptr);

/// Rotary embedding of x [outer, s, heads, d] (head-major: outer = b *
/// heads and heads = 1; sequence-major: outer = b), rotate-half
/// (Hugging Face) convention, position offset + s_index, inv_freq[i] =
/// theta^(-2i/d). d must be even. Angles are computed in double and rounded,
/// not read from a table. out may equal x. With inverse, rotates by the
/// opposite angles (the transpose, i.e. rotary's backward).
///
/// With `scaling` (rotary_scaled), the frequencies are scaled as Hugging
/// Face's rope_scaling does, in float32: linear divides each by `factor`;
/// llama3 (lowFreqFactor > 0) divides the low frequencies (wavelength
/// above originalMaxPositions / lowFreqFactor) by `factor`, keeps the high
/// ones (below originalMaxPositions / highFreqFactor) and blends between.
struct RopeScaling {
  double factor = 1.0;
  double lowFreqFactor = 0.0, highFreqFactor = 0.0;
  double originalMaxPositions = 0.0;
};
Status rotary(const float *x, int64_t outer, int64_t seq, int64_t dim,
              double theta, int64_t offset, float *out, bool inverse = false,
              const RopeScaling *scaling = nullptr, int64_t heads = 1);

/// Sum over positions whose label is not ignoreIndex of logsumexp(logits) -
/// logits[label], and the count of those positions. logits is [positions,
/// vocab]. A label outside [0, vocab) that is not ignoreIndex is an error.
Status crossEntropy(const float *logits, const int64_t *labels,
                    int64_t positions, int64_t vocab, int64_t ignoreIndex,
                    float *lossSum, int64_t *count);

/// Cross-entropy over a vocabulary that ends in padding or is split in
/// blocks over ranks. Each rank holds logits [positions, columns], the global
/// columns [block.offset, block.offset + columns); only those below
/// block.vocab are classes (the max, the sum of exponentials and the targets
/// ignore the rest). The ranks' per-position values are combined between
/// these steps (a max, then a sum over the ranks; on one rank the steps
/// follow each other directly):
///   1. crossEntropyBlockMax checks the labels (each in [0, vocab) or
///      ignoreIndex; every rank holds them all) and writes, per position,
///      the max of the block's classes (-inf where it has none);
///   2. crossEntropyBlockSums writes sumExp[p] = sum over the block's classes
///      of e^(logit - max[p]) and, unless target is null, target[p] = the
///      label's logit where this block holds it, else 0;
///   3. crossEntropyCombine (the loss: sum over positions not ignored of
///      max + log(sumExp) - target, and their count) or
///      crossEntropyBlockGrad (CpuTrainingKernels.h).
/// Sums of exponentials accumulate in double per rank.
Status crossEntropyBlockMax(const float *logits, const int64_t *labels,
                            int64_t positions, int64_t columns,
                            const VocabBlock &block, int64_t ignoreIndex,
                            float *max);
Status crossEntropyBlockSums(const float *logits, const int64_t *labels,
                             int64_t positions, int64_t columns,
                             const VocabBlock &block, int64_t ignoreIndex,
                             const float *max, float *sumExp, float *target);
Status crossEntropyCombine(const int64_t *labels, int64_t positions,
                           int64_t ignoreIndex, const float *max,
                           const float *sumExp, const float *target,
                           float *lossSum, int64_t *count);

/// sum / count, or 0 when count is 0 (every target ignored); a negative
/// count is an error.
Status lossMean(const float *sum, const int64_t *count, float *out);

/// Converts count elements between storage types (any pair; the same type
/// copies). Narrowing rounds to nearest, ties to even, as torch's `.to()`;
/// bf16 <-> f16 goes through fp32, which holds both exactly. out must not
/// overlap x.
Status cast(const void *x, FloatType from, int64_t count, FloatType to,
            void *out);

/// Copies bytes (a reshape of contiguous data, any dtype); out may overlap x.
Status copy(const void *x, int64_t bytes, void *out);

/// transpose, slice and repeatInterleave take ranks up to kMaxRank
/// (tpcrt/Shape.h).
///
/// out.shape[i] = shape[permutation[i]], out[idx] = x[idx permuted back].
Status transpose(const float *x, const int64_t *shape, int rank,
                 const int64_t *permutation, float *out);

/// Keeps indices [offset, offset + size) of dimension dim.
Status slice(const float *x, const int64_t *shape, int rank, int64_t dim,
             int64_t offset, int64_t size, float *out);

/// concat as rows of bytes: `outer` rows, input j's row `rowBytes[j]` long;
/// each output row holds the inputs' rows one after another (any type).
Status concatRows(const uint8_t *const *inputs, const int64_t *rowBytes,
                  int64_t count, int64_t outer, void *out);

/// slice on elements of any type, `elementSize` bytes each (token ids,
/// masks, 16-bit floats without conversion).
Status sliceBytes(const void *x, const int64_t *shape, int rank, int64_t dim,
                  int64_t offset, int64_t size, int64_t elementSize, void *out);

/// torch.repeat_interleave(x, repeats, dim): index i of out along dim reads
/// index i / repeats of x.
Status repeatInterleave(const float *x, const int64_t *shape, int rank,
                        int64_t dim, int64_t repeats, float *out);

} // namespace cpu
} // namespace tpcrt

#endif // TPCRT_CPUKERNELS_H
