//===- CpuKernels.cpp - fp32 forward kernels of the CPU backend -----------===//
//
// Reductions (norm statistics, softmax sums, logsumexp) accumulate in double:
// it costs nothing measurable at these sizes and keeps the kernels within
// 1e-5 of PyTorch whatever the row length. The transcendental functions of
// the hot loops (exp, erf, tanh) are FastMath.h's vectorizable float ones;
// their sums are still accumulated in double, lane by lane.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/CpuKernels.h"
#include "FastMath.h"
#include "KernelSupport.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#ifdef TPCRT_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace tpcrt {
namespace cpu {

namespace detail {

Status checkNonNegative(const char *kernel,
                        std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s < 0)
      return Status::error(std::string(kernel) + ": negative size " +
                           std::to_string(s));
  return Status::ok();
}

Status outsideVocabulary(const char *kernel, const char *what, int64_t value,
                         int64_t position, int64_t vocab) {
  return Status::error(std::string(kernel) + ": " + what + " " +
                       std::to_string(value) + " at position " +
                       std::to_string(position) + " is outside [0, " +
                       std::to_string(vocab) + ")");
}

} // namespace detail

using namespace detail;

namespace {

Status checkGemmArgs(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                     int64_t lda, int64_t ldb, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0)
    return Status::error("gemm: negative size");
  // Stored shapes: A is [m, k] or [k, m], B is [k, n] or [n, k].
  int64_t aCols = transA ? m : k;
  int64_t bCols = transB ? k : n;
  if (lda < std::max<int64_t>(1, aCols) || ldb < std::max<int64_t>(1, bCols) ||
      ldc < std::max<int64_t>(1, n))
    return Status::error("gemm: leading dimension smaller than a row");
  return Status::ok();
}

size_t floatTypeSize(FloatType type) { return type == FloatType::F32 ? 4 : 2; }

} // namespace

bool detail::checkShape(const int64_t *shape, int rank, int64_t &count) {
  count = 1;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    count *= shape[i];
  }
  return true;
}

bool hasOpenBlas() {
#ifdef TPCRT_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

Status gemmFallback(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                    float alpha, const float *a, int64_t lda, const float *b,
                    int64_t ldb, float beta, float *c, int64_t ldc) {
  if (Status s = checkGemmArgs(transA, transB, m, n, k, lda, ldb, ldc); !s)
    return s;
  for (int64_t i = 0; i < m; ++i) {
    float *row = c + i * ldc;
    if (beta == 0.0f)
      std::fill(row, row + n, 0.0f);
    else if (beta != 1.0f)
      for (int64_t j = 0; j < n; ++j)
        row[j] *= beta;
  }
  if (k == 0 || alpha == 0.0f)
    return Status::ok();

  // A block of op(B) is packed, row-major and contiguous, into a stack tile so
  // that the innermost loop is a unit-stride axpy over a row of C that the
  // compiler vectorizes, whichever way B is stored. The tile (64 KiB) stays in
  // L2 while every row of A streams past it.
  constexpr int64_t kBlockK = 128;
  constexpr int64_t kBlockN = 128;
  float tile[kBlockK * kBlockN];
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    int64_t nb = std::min(kBlockN, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kBlockK) {
      int64_t kb = std::min(kBlockK, k - p0);
      for (int64_t p = 0; p < kb; ++p)
        for (int64_t j = 0; j < nb; ++j)
          tile[p * kBlockN + j] =
              transB ? b[(j0 + j) * ldb + p0 + p] : b[(p0 + p) * ldb + j0 + j];
      for (int64_t i = 0; i < m; ++i) {
        float *row = c + i * ldc + j0;
        for (int64_t p = 0; p < kb; ++p) {
          float av =
              alpha * (transA ? a[(p0 + p) * lda + i] : a[i * lda + p0 + p]);
          const float *tileRow = tile + p * kBlockN;
          for (int64_t j = 0; j < nb; ++j)
            row[j] += av * tileRow[j];
        }
      }
    }
  }
  return Status::ok();
}

Status gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            float alpha, const float *a, int64_t lda, const float *b,
            int64_t ldb, float beta, float *c, int64_t ldc) {
#ifdef TPCRT_HAVE_OPENBLAS
  if (Status s = checkGemmArgs(transA, transB, m, n, k, lda, ldb, ldc); !s)
    return s;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax || lda > kIntMax ||
      ldb > kIntMax || ldc > kIntMax)
    return Status::error("gemm: size exceeds the BLAS int range");
  if (m == 0 || n == 0)
    return Status::ok();
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
  return Status::ok();
#else
  return gemmFallback(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                      ldc);
#endif
}

Status embedding(const float *table, int64_t vocab, int64_t hidden,
                 const int64_t *ids, int64_t numIds, float *out) {
  return embeddingRows(table, FloatType::F32, vocab, hidden, ids, numIds,
                       FloatType::F32, out);
}

Status embeddingRows(const void *table, FloatType tableType, int64_t rows,
                     int64_t hidden, const int64_t *ids, int64_t numIds,
                     FloatType outType, void *out, const VocabBlock *block) {
  if (Status s = checkNonNegative("embedding", {rows, hidden, numIds}); !s)
    return s;
  int64_t offset = block ? block->offset : 0;
  int64_t vocab = block ? block->vocab : rows;
  const auto *data = static_cast<const uint8_t *>(table);
  auto *o = static_cast<uint8_t *>(out);
  size_t inRow = static_cast<size_t>(hidden) * floatTypeSize(tableType);
  size_t outRow = static_cast<size_t>(hidden) * floatTypeSize(outType);
  for (int64_t i = 0; i < numIds; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= vocab)
      return outsideVocabulary("embedding", "id", id, i, vocab);
    int64_t row = id - offset;
    if (row < 0 || row >= rows) {
      // Another rank's row: zero bits are 0.0 in every float type.
      std::memset(o + i * outRow, 0, outRow);
      continue;
    }
    if (Status s = cast(data + row * inRow, tableType, hidden, outType,
                        o + i * outRow);
        !s)
      return s;
  }
  return Status::ok();
}

Status linear(const float *x, const float *weight, const float *bias, int64_t m,
              int64_t k, int64_t n, WeightLayout layout, float *out) {
  if (Status s = checkNonNegative("linear", {m, k, n}); !s)
    return s;
  float beta = 0.0f;
  if (bias) {
    for (int64_t i = 0; i < m; ++i)
      std::copy(bias, bias + n, out + i * n);
    beta = 1.0f;
  }
  bool outIn = layout == WeightLayout::OutIn;
  Status s = gemm(false, outIn, m, n, k, 1.0f, x, std::max<int64_t>(1, k),
                  weight, std::max<int64_t>(1, outIn ? k : n), beta, out,
                  std::max<int64_t>(1, n));
  return s ? s : s.withContext("linear");
}

Status batchMatmul(const float *lhs, const float *rhs, int64_t batch, int64_t m,
                   int64_t k, int64_t n, bool transposeLhs, bool transposeRhs,
                   float scale, float *out) {
  if (Status s = checkNonNegative("batch_matmul", {batch, m, k, n}); !s)
    return s;
  for (int64_t b = 0; b < batch; ++b) {
    Status s = gemm(transposeLhs, transposeRhs, m, n, k, scale, lhs + b * m * k,
                    std::max<int64_t>(1, transposeLhs ? m : k), rhs + b * k * n,
                    std::max<int64_t>(1, transposeRhs ? k : n), 0.0f,
                    out + b * m * n, std::max<int64_t>(1, n));
    if (!s)
      return s.withContext("batch_matmul");
  }
  return Status::ok();
}

Status layerNorm(const float *x, const float *weight, const float *bias,
                 int64_t rows, int64_t cols, float epsilon, float *out) {
  if (Status s = checkNonNegative("layer_norm", {rows, cols}); !s)
    return s;
  if (cols == 0)
    return Status::ok();
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * cols;
    float *o = out + r * cols;
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sum += in[c];
    double mean = sum / static_cast<double>(cols);
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      double d = in[c] - mean;
      sq += d * d;
    }
    double inv = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
    for (int64_t c = 0; c < cols; ++c)
      o[c] = static_cast<float>((in[c] - mean) * inv) * weight[c] + bias[c];
  }
  return Status::ok();
}

Status rmsNorm(const float *x, const float *weight, int64_t rows, int64_t cols,
               float epsilon, float *out) {
  if (Status s = checkNonNegative("rms_norm", {rows, cols}); !s)
    return s;
  if (cols == 0)
    return Status::ok();
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * cols;
    float *o = out + r * cols;
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sq += static_cast<double>(in[c]) * in[c];
    double inv = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
    for (int64_t c = 0; c < cols; ++c)
      o[c] = static_cast<float>(in[c] * inv) * weight[c];
  }
  return Status::ok();
}

namespace {

TPCRT_VECTOR_CLONES
void geluErf(const float *x, int64_t count, float *out) {
  const float invSqrt2 = 0.70710678118654752f;
  for (int64_t i = 0; i < count; ++i)
    out[i] = 0.5f * x[i] * (1.0f + fastmath::erf(x[i] * invSqrt2));
}

TPCRT_VECTOR_CLONES
void geluTanh(const float *x, int64_t count, float *out) {
  const float k = 0.79788456080286536f; // sqrt(2 / pi)
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i];
    out[i] =
        0.5f * v * (1.0f + fastmath::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

TPCRT_VECTOR_CLONES
void siluLoop(const float *x, int64_t count, float *out) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = x[i] * fastmath::sigmoid(x[i]);
}

} // namespace

Status gelu(const float *x, int64_t count, GeluApproximation approximation,
            float *out) {
  if (Status s = checkNonNegative("gelu", {count}); !s)
    return s;
  if (approximation == GeluApproximation::Erf)
    geluErf(x, count, out);
  else
    geluTanh(x, count, out);
  return Status::ok();
}

Status silu(const float *x, int64_t count, float *out) {
  if (Status s = checkNonNegative("silu", {count}); !s)
    return s;
  siluLoop(x, count, out);
  return Status::ok();
}

namespace {

template <typename T, typename Op>
Status broadcastBinary(const char *kernel, const T *lhs, int64_t lhsCount,
                       const T *rhs, int64_t rhsCount, T *out, Op op) {
  if (Status s = checkNonNegative(kernel, {lhsCount, rhsCount}); !s)
    return s;
  if (lhsCount == 0)
    return Status::ok();
  if (rhsCount == 0 || lhsCount % rhsCount != 0)
    return Status::error(
        std::string(kernel) + ": rhs of " + std::to_string(rhsCount) +
        " elements does not tile lhs of " + std::to_string(lhsCount));
  for (int64_t base = 0; base < lhsCount; base += rhsCount)
    for (int64_t i = 0; i < rhsCount; ++i)
      out[base + i] = op(lhs[base + i], rhs[i]);
  return Status::ok();
}

} // namespace

Status add(const float *lhs, int64_t lhsCount, const float *rhs,
           int64_t rhsCount, float *out) {
  return broadcastBinary("add", lhs, lhsCount, rhs, rhsCount, out,
                         [](float a, float b) { return a + b; });
}

Status addInt64(const int64_t *lhs, int64_t lhsCount, const int64_t *rhs,
                int64_t rhsCount, int64_t *out) {
  // Wrapping, as the unsigned sum: no overflow is undefined.
  return broadcastBinary("add", lhs, lhsCount, rhs, rhsCount, out,
                         [](int64_t a, int64_t b) {
                           return static_cast<int64_t>(
                               static_cast<uint64_t>(a) +
                               static_cast<uint64_t>(b));
                         });
}

Status mul(const float *lhs, int64_t lhsCount, const float *rhs,
           int64_t rhsCount, float *out) {
  return broadcastBinary("mul", lhs, lhsCount, rhs, rhsCount, out,
                         [](float a, float b) { return a * b; });
}

namespace {
/// Sums run in kLanes independent double accumulators, which vectorize and
/// keep the double-precision sum of float exps.
constexpr int kLanes = 8;
} // namespace

TPCRT_VECTOR_CLONES
float detail::rowMax(const float *row, int64_t n) {
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = std::max(lanes[l], row[i + l]);
  for (; i < n; ++i)
    lanes[0] = std::max(lanes[0], row[i]);
  return *std::max_element(lanes, lanes + kLanes);
}

/// Sum of e^(row[j] - shift) over [0, n), in double.
TPCRT_VECTOR_CLONES
double detail::expSum(const float *row, int64_t n, float shift) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += fastmath::exp(row[i + l] - shift);
  for (; i < n; ++i)
    lanes[0] += fastmath::exp(row[i] - shift);
  double sum = 0.0;
  for (double lane : lanes)
    sum += lane;
  return sum;
}

/// out[j] = e^(row[j] - shift) over [0, n); returns their sum, in double.
TPCRT_VECTOR_CLONES
double detail::expInto(const float *row, int64_t n, float shift, float *out) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      float e = fastmath::exp(row[i + l] - shift);
      out[i + l] = e;
      lanes[l] += e;
    }
  for (; i < n; ++i) {
    float e = fastmath::exp(row[i] - shift);
    out[i] = e;
    lanes[0] += e;
  }
  double sum = 0.0;
  for (double lane : lanes)
    sum += lane;
  return sum;
}

float detail::softmaxRow(const float *row, int64_t valid, int64_t len,
                         float *out) {
  float maxValue = rowMax(row, valid);
  double sum = expInto(row, valid, maxValue, out);
  float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < valid; ++j)
    out[j] *= inv;
  std::fill(out + valid, out + len, 0.0f);
  return static_cast<float>(maxValue + std::log(sum));
}

Status softmax(const float *x, int64_t outer, int64_t q, int64_t k, bool causal,
               float *out) {
  if (Status s = checkNonNegative("softmax", {outer, q, k}); !s)
    return s;
  if (causal && k < q)
    return Status::error("softmax: causal needs k >= q, got q " +
                         std::to_string(q) + " k " + std::to_string(k));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < q; ++i) {
      int64_t row = (o * q + i) * k;
      int64_t valid = causal ? i + (k - q) + 1 : k;
      softmaxRow(x + row, valid, k, out + row);
    }
  return Status::ok();
}

Status detail::checkDropoutRate(const char *kernel, double rate) {
  if (!(rate >= 0.0 && rate < 1.0))
    return Status::error(std::string(kernel) + ": dropout rate " +
                         std::to_string(rate) + " is outside [0, 1)");
  return Status::ok();
}

Status detail::checkGlobalBlock(const char *kernel, const GlobalBlock *block,
                                int64_t count) {
  if (!block)
    return Status::ok();
  if (block->rank < 0 || block->rank > kMaxRank)
    return Status::error(std::string(kernel) + ": block rank " +
                         std::to_string(block->rank) + " is outside [0, " +
                         std::to_string(kMaxRank) + "]");
  int64_t elements = 1;
  for (int d = 0; d < block->rank; ++d) {
    int64_t extent = block->shape[d], offset = block->offset[d];
    if (extent < 0 || offset < 0 || offset > block->globalShape[d] - extent)
      return Status::error(std::string(kernel) + ": block dimension " +
                           std::to_string(d) + " [" + std::to_string(offset) +
                           ", +" + std::to_string(extent) +
                           ") is outside the whole tensor's " +
                           std::to_string(block->globalShape[d]));
    elements *= extent;
  }
  if (elements != count)
    return Status::error(std::string(kernel) + ": the block has " +
                         std::to_string(elements) + " elements, not " +
                         std::to_string(count));
  return Status::ok();
}

uint64_t detail::dropoutRow(const AttentionDropout &dropout, int64_t b,
                            int64_t h, int64_t i, int64_t heads, int64_t seqQ,
                            int64_t seqK) {
  int64_t allHeads = dropout.globalHeads ? dropout.globalHeads : heads;
  int64_t allQ = dropout.globalSeqQ ? dropout.globalSeqQ : seqQ;
  int64_t row =
      ((dropout.batchOffset + b) * allHeads + dropout.headOffset + h) * allQ +
      dropout.queryOffset + i;
  return dropout.firstIndex + static_cast<uint64_t>(row * seqK);
}

Status dropout(const float *x, int64_t count, uint64_t key, double rate,
               int64_t firstIndex, float *out, const GlobalBlock *block) {
  if (Status s = checkNonNegative("dropout", {count, firstIndex}); !s)
    return s;
  if (Status s = checkDropoutRate("dropout", rate); !s)
    return s;
  if (Status s = checkGlobalBlock("dropout", block, count); !s)
    return s;
  uint64_t threshold = dropoutThreshold(rate);
  float scale = dropoutScale(rate);
  uint64_t base = static_cast<uint64_t>(firstIndex);
  forEachGlobalRun(
      block, count, [&](int64_t local, uint64_t global, int64_t length) {
        const float *xs = x + local;
        float *os = out + local;
        forEachDropoutKeep(
            key, base + global, length, threshold,
            [&](int64_t i, bool kept) { os[i] = kept ? xs[i] * scale : 0.0f; });
      });
  return Status::ok();
}

Status detail::checkAttention(int64_t batch, int64_t heads, int64_t kvHeads,
                              int64_t seqQ, int64_t seqK, int64_t headDim,
                              int64_t valueDim, bool causal,
                              const AttentionDropout *dropout,
                              AttentionLayout layout) {
  if (Status s = checkNonNegative(
          "attention", {batch, heads, kvHeads, seqQ, seqK, headDim, valueDim});
      !s)
    return s;
  // q, k and v are parts of one tensor: of one shape.
  if (layout == AttentionLayout::PackedQkv &&
      (kvHeads != heads || valueDim != headDim || seqK != seqQ))
    return Status::error(
        "attention: packed q, k and v need kv heads = heads, d_v = d and "
        "s_k = s_q, not " +
        std::to_string(kvHeads) + " / " + std::to_string(heads) + ", " +
        std::to_string(valueDim) + " / " + std::to_string(headDim) + ", " +
        std::to_string(seqK) + " / " + std::to_string(seqQ));
  if (kvHeads == 0 || heads % kvHeads != 0)
    return Status::error("attention: " + std::to_string(heads) +
                         " heads are not a multiple of " +
                         std::to_string(kvHeads) + " kv heads");
  if (causal && seqK < seqQ)
    return Status::error("attention: causal needs s_k >= s_q");
  if (!causal && seqK == 0 && seqQ > 0)
    return Status::error("attention: no keys");
  if (dropout)
    if (Status s = checkDropoutRate("attention", dropout->rate); !s)
      return s;
  return Status::ok();
}

AttentionBlock detail::attentionBlock(int64_t i0, int64_t seqQ, int64_t seqK,
                                      bool causal) {
  AttentionBlock block;
  block.rows = std::min(kAttentionBlock, seqQ - i0);
  block.keys = causal ? i0 + block.rows + (seqK - seqQ) : seqK;
  block.ld = std::max<int64_t>(1, block.keys);
  return block;
}

Status detail::attentionProbabilities(
    const float *q, int64_t ldq, const float *k, int64_t ldk, int64_t headDim,
    int64_t i0, const AttentionBlock &block, int64_t seqQ, int64_t seqK,
    bool causal, float scale, float *p, float *lse, const float *givenLse) {
  if (Status s = gemm(false, true, block.rows, block.keys, headDim, scale,
                      q + i0 * ldq, ldq, k, ldk, 0.0f, p, block.ld);
      !s)
    return s;
  for (int64_t i = 0; i < block.rows; ++i) {
    int64_t valid = causal ? i0 + i + (seqK - seqQ) + 1 : seqK;
    float *row = p + i * block.ld;
    if (givenLse) {
      expInto(row, valid, givenLse[i], row);
      std::fill(row + valid, row + block.keys, 0.0f);
      continue;
    }
    float rowLse = softmaxRow(row, valid, block.keys, row);
    if (lse)
      lse[i] = rowLse;
  }
  return Status::ok();
}

void detail::dropProbabilities(float *p, const AttentionBlock &block,
                               uint64_t firstRow, int64_t seqK,
                               const AttentionDropout &dropout) {
  uint64_t threshold = dropoutThreshold(dropout.rate);
  float scale = dropoutScale(dropout.rate);
  for (int64_t i = 0; i < block.rows; ++i) {
    uint64_t index = firstRow + static_cast<uint64_t>(i * seqK);
    float *row = p + i * block.ld;
    forEachDropoutKeep(
        dropout.key, index, block.keys, threshold,
        [&](int64_t j, bool kept) { row[j] = kept ? row[j] * scale : 0.0f; });
  }
}

Status attention(const float *q, const float *k, const float *v, int64_t batch,
                 int64_t heads, int64_t kvHeads, int64_t seqQ, int64_t seqK,
                 int64_t headDim, int64_t valueDim, bool causal, float scale,
                 float *scratch, float *out, const AttentionDropout *dropout,
                 AttentionLayout layout, float *lse) {
  if (Status s = checkAttention(batch, heads, kvHeads, seqQ, seqK, headDim,
                                valueDim, causal, dropout, layout);
      !s)
    return s;
  bool drop = dropout && dropout->rate > 0.0;
  int64_t group = heads / kvHeads;
  HeadRows qRows = headRows(layout, heads, seqQ, headDim),
           kRows = headRows(layout, kvHeads, seqK, headDim),
           vRows = headRows(layout, kvHeads, seqK, valueDim),
           oRows = resultRows(layout, heads, seqQ, valueDim);
  // Per (batch, head) and block of query rows: S = scale * Q K^T and
  // O = P V are GEMMs through the scratch block.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float *qh = q + qRows.head(b, h);
      const float *kh = k + kRows.head(b, h / group);
      const float *vh = v + vRows.head(b, h / group);
      float *oh = out + oRows.head(b, h);
      float *lseHead = lse ? lse + (b * heads + h) * seqQ : nullptr;
      for (int64_t i0 = 0; i0 < seqQ; i0 += kAttentionBlock) {
        AttentionBlock block = attentionBlock(i0, seqQ, seqK, causal);
        Status s = attentionProbabilities(
            qh, qRows.ld, kh, kRows.ld, headDim, i0, block, seqQ, seqK, causal,
            scale, scratch, lseHead ? lseHead + i0 : nullptr);
        if (s && drop)
          dropProbabilities(scratch, block,
                            dropoutRow(*dropout, b, h, i0, heads, seqQ, seqK),
                            seqK, *dropout);
        if (s)
          s = gemm(false, false, block.rows, valueDim, block.keys, 1.0f,
                   scratch, block.ld, vh, vRows.ld, 0.0f, oh + i0 * oRows.ld,
                   oRows.ld);
        if (!s)
          return s.withContext("attention");
      }
    }
  return Status::ok();
}

/// inv_freq[i] scaled as Hugging Face's _compute_linear_scaling_rope_
/// parameters and _compute_llama3_parameters do: float32 tensors with
/// Python scalars, which torch rounds to float32; `scalar / tensor` is
/// torch's reciprocal(tensor) * scalar, and scalar-only arithmetic is
/// Python's, in double.
static float scaledInvFreq(float invFreq, const RopeScaling &scaling) {
  auto factor = static_cast<float>(scaling.factor);
  if (scaling.lowFreqFactor == 0.0)
    return invFreq / factor;
  double low = scaling.lowFreqFactor, high = scaling.highFreqFactor;
  double old = scaling.originalMaxPositions;
  auto lowFreqWavelen = static_cast<float>(old / low);
  auto highFreqWavelen = static_cast<float>(old / high);
  float wavelen = (1.0f / invFreq) * static_cast<float>(2.0 * M_PI);
  float llama = wavelen > lowFreqWavelen ? invFreq / factor : invFreq;
  bool medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
  if (!medium)
    return llama;
  float smooth = ((1.0f / wavelen) * static_cast<float>(old) -
                  static_cast<float>(low)) /
                 static_cast<float>(high - low);
  return (1.0f - smooth) * llama / factor + smooth * llama;
}

Status rotary(const float *x, int64_t outer, int64_t seq, int64_t dim,
              double theta, int64_t offset, float *out, bool inverse,
              const RopeScaling *scaling, int64_t heads) {
  if (Status s = checkNonNegative("rotary", {outer, seq, dim, heads}); !s)
    return s;
  if (dim % 2 != 0)
    return Status::error("rotary: head dimension " + std::to_string(dim) +
                         " is odd");
  int64_t half = dim / 2;
  for (int64_t s = 0; s < seq; ++s) {
    double position = static_cast<double>(offset + s);
    for (int64_t i = 0; i < half; ++i) {
      double invFreq = std::pow(theta, -2.0 * static_cast<double>(i) /
                                           static_cast<double>(dim));
      auto freq = static_cast<float>(invFreq);
      if (scaling)
        freq = scaledInvFreq(freq, *scaling);
      // The angle is rounded to fp32 before cos/sin, as Hugging Face computes
      // it (an fp32 product of fp32 position and fp32 inv_freq).
      float angle = static_cast<float>(position) * freq;
      // The inverse rotates by -angle (rotary's backward: R^T = R^-1).
      float c = std::cos(angle),
            sn = inverse ? -std::sin(angle) : std::sin(angle);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t h = 0; h < heads; ++h) {
          int64_t at = ((o * seq + s) * heads + h) * dim;
          float x1 = x[at + i], x2 = x[at + i + half];
          out[at + i] = x1 * c - x2 * sn;
          out[at + i + half] = x2 * c + x1 * sn;
        }
    }
  }
  return Status::ok();
}

Status crossEntropy(const float *logits, const int64_t *labels,
                    int64_t positions, int64_t vocab, int64_t ignoreIndex,
                    float *lossSum, int64_t *count) {
  if (Status s = checkNonNegative("cross_entropy", {positions, vocab}); !s)
    return s;
  double total = 0.0;
  int64_t n = 0;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t label = labels[p];
    if (label == ignoreIndex)
      continue;
    if (label < 0 || label >= vocab)
      return outsideVocabulary("cross_entropy", "label", label, p, vocab);
    const float *row = logits + p * vocab;
    float maxValue = rowMax(row, vocab);
    total += maxValue + std::log(expSum(row, vocab, maxValue)) - row[label];
    ++n;
  }
  *lossSum = static_cast<float>(total);
  *count = n;
  return Status::ok();
}

Status crossEntropyBlockMax(const float *logits, const int64_t *labels,
                            int64_t positions, int64_t columns,
                            const VocabBlock &block, int64_t ignoreIndex,
                            float *max) {
  if (Status s =
          checkNonNegative("cross_entropy", {positions, columns, block.offset});
      !s)
    return s;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t label = labels[p];
    if (label != ignoreIndex && (label < 0 || label >= block.vocab))
      return outsideVocabulary("cross_entropy", "label", label, p, block.vocab);
  }
  int64_t real = realColumns(columns, block);
  for (int64_t p = 0; p < positions; ++p)
    max[p] = rowMax(logits + p * columns, real);
  return Status::ok();
}

Status crossEntropyBlockSums(const float *logits, const int64_t *labels,
                             int64_t positions, int64_t columns,
                             const VocabBlock &block, int64_t ignoreIndex,
                             const float *max, float *sumExp, float *target) {
  if (Status s =
          checkNonNegative("cross_entropy", {positions, columns, block.offset});
      !s)
    return s;
  int64_t real = realColumns(columns, block);
  for (int64_t p = 0; p < positions; ++p) {
    const float *row = logits + p * columns;
    sumExp[p] = static_cast<float>(expSum(row, real, max[p]));
    if (!target)
      continue;
    int64_t local = labels[p] - block.offset;
    bool held = labels[p] != ignoreIndex && local >= 0 && local < real;
    target[p] = held ? row[local] : 0.0f;
  }
  return Status::ok();
}

Status crossEntropyCombine(const int64_t *labels, int64_t positions,
                           int64_t ignoreIndex, const float *max,
                           const float *sumExp, const float *target,
                           float *lossSum, int64_t *count) {
  double total = 0.0;
  int64_t n = 0;
  for (int64_t p = 0; p < positions; ++p) {
    if (labels[p] == ignoreIndex)
      continue;
    total += max[p] + std::log(static_cast<double>(sumExp[p])) - target[p];
    ++n;
  }
  *lossSum = static_cast<float>(total);
  *count = n;
  return Status::ok();
}

Status lossMean(const float *sum, const int64_t *count, float *out) {
  if (*count < 0)
    return Status::error("loss_mean: negative count " + std::to_string(*count));
  *out = *count == 0 ? 0.0f
                     : static_cast<float>(static_cast<double>(*sum) /
                                          static_cast<double>(*count));
  return Status::ok();
}

namespace {

float loadFloat(const uint8_t *p, FloatType type) {
  if (type == FloatType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return type == FloatType::BF16 ? bfloat16ToFloat(bits) : halfToFloat(bits);
}

void storeFloat(float f, FloatType type, uint8_t *p) {
  if (type == FloatType::F32) {
    std::memcpy(p, &f, 4);
    return;
  }
  uint16_t bits = type == FloatType::BF16 ? floatToBFloat16(f) : floatToHalf(f);
  std::memcpy(p, &bits, 2);
}

} // namespace

Status cast(const void *x, FloatType from, int64_t count, FloatType to,
            void *out) {
  if (Status s = checkNonNegative("cast", {count}); !s)
    return s;
  size_t inSize = floatTypeSize(from), outSize = floatTypeSize(to);
  const auto *in = static_cast<const uint8_t *>(x);
  auto *o = static_cast<uint8_t *>(out);
  if (from == to) {
    std::memcpy(o, in, static_cast<size_t>(count) * inSize);
    return Status::ok();
  }
  for (int64_t i = 0; i < count; ++i)
    storeFloat(loadFloat(in + i * inSize, from), to, o + i * outSize);
  return Status::ok();
}

Status copy(const void *x, int64_t bytes, void *out) {
  if (Status s = checkNonNegative("copy", {bytes}); !s)
    return s;
  if (bytes > 0 && x != out)
    std::memmove(out, x, static_cast<size_t>(bytes));
  return Status::ok();
}

Status transpose(const float *x, const int64_t *shape, int rank,
                 const int64_t *permutation, float *out) {
  if (rank < 0 || rank > kMaxRank)
    return Status::error("transpose: rank " + std::to_string(rank) +
                         " outside [0, " + std::to_string(kMaxRank) + "]");
  int64_t total;
  if (!checkShape(shape, rank, total))
    return Status::error("transpose: negative dimension");
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    int64_t p = permutation[i];
    if (p < 0 || p >= rank || seen[p])
      return Status::error("transpose: not a permutation of " +
                           std::to_string(rank) + " dimensions");
    seen[p] = true;
  }
  // Input strides, read in output-dimension order; the output is walked in
  // row-major order with an odometer so the writes are contiguous.
  int64_t inStride[kMaxRank];
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    inStride[i] = stride;
    stride *= shape[i];
  }
  int64_t outShape[kMaxRank], srcStride[kMaxRank], index[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    outShape[i] = shape[permutation[i]];
    srcStride[i] = inStride[permutation[i]];
  }
  int64_t src = 0;
  for (int64_t e = 0; e < total; ++e) {
    out[e] = x[src];
    for (int d = rank - 1; d >= 0; --d) {
      src += srcStride[d];
      if (++index[d] < outShape[d])
        break;
      src -= srcStride[d] * outShape[d];
      index[d] = 0;
    }
  }
  return Status::ok();
}

/// Splits shape around dim into (outer, dim, inner) element counts.
Status detail::splitAt(const char *kernel, const int64_t *shape, int rank,
                       int64_t dim, int64_t &outer, int64_t &inner) {
  if (rank < 1 || rank > kMaxRank || dim < 0 || dim >= rank)
    return Status::error(std::string(kernel) + ": dimension " +
                         std::to_string(dim) + " of a rank " +
                         std::to_string(rank) + " tensor");
  int64_t total;
  if (!checkShape(shape, rank, total))
    return Status::error(std::string(kernel) + ": negative dimension");
  outer = 1;
  inner = 1;
  for (int i = 0; i < dim; ++i)
    outer *= shape[i];
  for (int i = static_cast<int>(dim) + 1; i < rank; ++i)
    inner *= shape[i];
  return Status::ok();
}

Status slice(const float *x, const int64_t *shape, int rank, int64_t dim,
             int64_t offset, int64_t size, float *out) {
  return sliceBytes(x, shape, rank, dim, offset, size, sizeof(float), out);
}

Status concatRows(const uint8_t *const *inputs, const int64_t *rowBytes,
                  int64_t count, int64_t outer, void *out) {
  int64_t outRow = 0;
  for (int64_t j = 0; j < count; ++j) {
    if (rowBytes[j] < 0)
      return Status::error("concat: input " + std::to_string(j) + " has " +
                           std::to_string(rowBytes[j]) + "-byte rows");
    outRow += rowBytes[j];
  }
  auto *o = static_cast<uint8_t *>(out);
  for (int64_t a = 0; a < outer; ++a) {
    uint8_t *row = o + a * outRow;
    for (int64_t j = 0; j < count; ++j) {
      if (rowBytes[j] > 0)
        std::memcpy(row, inputs[j] + a * rowBytes[j],
                    static_cast<size_t>(rowBytes[j]));
      row += rowBytes[j];
    }
  }
  return Status::ok();
}

Status sliceBytes(const void *x, const int64_t *shape, int rank, int64_t dim,
                  int64_t offset, int64_t size, int64_t elementSize,
                  void *out) {
  int64_t outer, inner;
  if (Status s = splitAt("slice", shape, rank, dim, outer, inner); !s)
    return s;
  int64_t extent = shape[dim];
  if (offset < 0 || size < 0 || offset > extent || size > extent - offset)
    return Status::error("slice: [" + std::to_string(offset) + ", " +
                         std::to_string(offset) + " + " + std::to_string(size) +
                         ") outside dimension of " + std::to_string(extent));
  if (elementSize < 1)
    return Status::error("slice: element size " + std::to_string(elementSize));
  const auto *in = static_cast<const uint8_t *>(x);
  auto *o = static_cast<uint8_t *>(out);
  size_t row = static_cast<size_t>(size * inner * elementSize);
  for (int64_t a = 0; a < outer; ++a)
    std::memcpy(o + a * row, in + (a * extent + offset) * inner * elementSize,
                row);
  return Status::ok();
}

Status repeatInterleave(const float *x, const int64_t *shape, int rank,
                        int64_t dim, int64_t repeats, float *out) {
  int64_t outer, inner;
  if (Status s = splitAt("repeat", shape, rank, dim, outer, inner); !s)
    return s;
  if (repeats < 1)
    return Status::error("repeat: repeats " + std::to_string(repeats) +
                         " is not positive");
  int64_t extent = shape[dim];
  float *o = out;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t i = 0; i < extent; ++i) {
      const float *src = x + (a * extent + i) * inner;
      for (int64_t r = 0; r < repeats; ++r, o += inner)
        std::copy(src, src + inner, o);
    }
  return Status::ok();
}

} // namespace cpu
} // namespace tpcrt
