//===- CpuGradKernels.cpp - backward kernels of the CPU backend -----------===//
//
// Each backward recomputes what its forward computed with the same helpers
// (KernelSupport.h): norm statistics, softmax rows, attention probabilities
// and dropout masks, so that the gradient is the derivative of exactly the
// function the forward evaluated.
//
//===----------------------------------------------------------------------===//

#include "FastMath.h"
#include "KernelSupport.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Random.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tpcrt {
namespace cpu {

using namespace detail;

Status embeddingGrad(const float *dY, const int64_t *ids, int64_t numIds,
                     int64_t rows, int64_t hidden, float *dTable,
                     const VocabBlock *block) {
  if (Status s = checkNonNegative("embedding_grad", {numIds, rows, hidden}); !s)
    return s;
  int64_t offset = block ? block->offset : 0;
  int64_t vocab = block ? block->vocab : rows;
  std::fill(dTable, dTable + rows * hidden, 0.0f);
  for (int64_t i = 0; i < numIds; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= vocab)
      return outsideVocabulary("embedding_grad", "id", id, i, vocab);
    if (id < offset || id - offset >= rows)
      continue; // another rank's row
    float *row = dTable + (id - offset) * hidden;
    const float *g = dY + i * hidden;
    for (int64_t c = 0; c < hidden; ++c)
      row[c] += g[c];
  }
  return Status::ok();
}

Status embeddingGradAccumulate(const float *dY, const int64_t *ids,
                               int64_t numIds, int64_t rows, int64_t hidden,
                               float *dTable, const VocabBlock *block,
                               int64_t *order, float *row) {
  const char *name = "embedding_grad_accumulate";
  if (Status s = checkNonNegative(name, {numIds, rows, hidden}); !s)
    return s;
  int64_t offset = block ? block->offset : 0;
  int64_t vocab = block ? block->vocab : rows;
  // This block's positions, by (row, position): std::sort in place (no
  // allocation), the key unique.
  int64_t count = 0;
  for (int64_t i = 0; i < numIds; ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= vocab)
      return outsideVocabulary(name, "id", id, i, vocab);
    if (id >= offset && id - offset < rows)
      order[count++] = i;
  }
  std::sort(order, order + count, [&](int64_t a, int64_t b) {
    return ids[a] != ids[b] ? ids[a] < ids[b] : a < b;
  });
  for (int64_t j = 0; j < count;) {
    int64_t id = ids[order[j]];
    std::fill(row, row + hidden, 0.0f);
    for (; j < count && ids[order[j]] == id; ++j) {
      const float *g = dY + order[j] * hidden;
      for (int64_t c = 0; c < hidden; ++c)
        row[c] += g[c];
    }
    float *sum = dTable + (id - offset) * hidden;
    for (int64_t c = 0; c < hidden; ++c)
      sum[c] += row[c];
  }
  return Status::ok();
}

Status linearInputGrad(const float *dY, const float *weight, int64_t m,
                       int64_t k, int64_t n, WeightLayout layout, float *dX) {
  if (Status s = checkNonNegative("linear_input_grad", {m, k, n}); !s)
    return s;
  bool outIn = layout == WeightLayout::OutIn;
  // in_out: dX = dY W^T with W [k, n]; out_in: dX = dY W with W [n, k].
  Status s = gemm(false, !outIn, m, k, n, 1.0f, dY, std::max<int64_t>(1, n),
                  weight, std::max<int64_t>(1, outIn ? k : n), 0.0f, dX,
                  std::max<int64_t>(1, k));
  return s ? s : s.withContext("linear_input_grad");
}

Status linearWeightGrad(const float *x, const float *dY, int64_t m, int64_t k,
                        int64_t n, WeightLayout layout, float *dW,
                        bool accumulate) {
  if (Status s = checkNonNegative("linear_weight_grad", {m, k, n}); !s)
    return s;
  int64_t ldx = std::max<int64_t>(1, k), ldy = std::max<int64_t>(1, n);
  const float beta = accumulate ? 1.0f : 0.0f;
  Status s =
      layout == WeightLayout::InOut
          ? gemm(true, false, k, n, m, 1.0f, x, ldx, dY, ldy, beta, dW, ldy)
          : gemm(true, false, n, k, m, 1.0f, dY, ldy, x, ldx, beta, dW, ldx);
  return s ? s : s.withContext("linear_weight_grad");
}

Status sumTo(const float *x, int64_t count, int64_t outCount, double *scratch,
             float *out) {
  if (Status s = checkNonNegative("sum_to", {count, outCount}); !s)
    return s;
  if (outCount == 0 ? count != 0 : count % outCount != 0)
    return Status::error("sum_to: " + std::to_string(outCount) +
                         " elements do not tile " + std::to_string(count));
  std::fill(scratch, scratch + outCount, 0.0);
  for (int64_t base = 0; base < count; base += outCount)
    for (int64_t j = 0; j < outCount; ++j)
      scratch[j] += x[base + j];
  for (int64_t j = 0; j < outCount; ++j)
    out[j] = static_cast<float>(scratch[j]);
  return Status::ok();
}

namespace {

/// Mean and 1 / sqrt(var + eps) of a row, as layerNorm computes them.
void rowMoments(const float *x, int64_t cols, float epsilon, double &mean,
                double &rstd) {
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c)
    sum += x[c];
  mean = sum / static_cast<double>(cols);
  double sq = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    double d = x[c] - mean;
    sq += d * d;
  }
  rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
}

/// 1 / sqrt(mean(x^2) + eps) of a row, as rmsNorm computes it.
double rowInverseRms(const float *x, int64_t cols, float epsilon) {
  double sq = 0.0;
  for (int64_t c = 0; c < cols; ++c)
    sq += static_cast<double>(x[c]) * x[c];
  return 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
}

} // namespace

Status layerNormInputGrad(const float *dY, const float *x, const float *weight,
                          int64_t rows, int64_t cols, float epsilon,
                          float *dX) {
  if (Status s = checkNonNegative("layer_norm_input_grad", {rows, cols}); !s)
    return s;
  if (cols == 0)
    return Status::ok();
  // dX = rstd (g - mean(g) - xhat mean(g xhat)), g = dY * weight.
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols, *gr = dY + r * cols;
    double mean, rstd;
    rowMoments(xr, cols, epsilon, mean, rstd);
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      double g = static_cast<double>(gr[c]) * weight[c];
      sumG += g;
      sumGX += g * (xr[c] - mean) * rstd;
    }
    double meanG = sumG / static_cast<double>(cols);
    double meanGX = sumGX / static_cast<double>(cols);
    float *out = dX + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      double xhat = (xr[c] - mean) * rstd;
      double g = static_cast<double>(gr[c]) * weight[c];
      out[c] = static_cast<float>(rstd * (g - meanG - xhat * meanGX));
    }
  }
  return Status::ok();
}

Status layerNormParamGrad(const float *dY, const float *x, int64_t rows,
                          int64_t cols, float epsilon, double *scratch,
                          float *dWeight, float *dBias) {
  if (Status s = checkNonNegative("layer_norm_param_grad", {rows, cols}); !s)
    return s;
  double *sumW = scratch, *sumB = scratch + cols;
  std::fill(scratch, scratch + 2 * cols, 0.0);
  for (int64_t r = 0; r < rows && cols > 0; ++r) {
    const float *xr = x + r * cols, *gr = dY + r * cols;
    double mean, rstd;
    rowMoments(xr, cols, epsilon, mean, rstd);
    for (int64_t c = 0; c < cols; ++c) {
      // xhat rounded to float, as the forward multiplies it by the weight.
      float xhat = static_cast<float>((xr[c] - mean) * rstd);
      sumW[c] += static_cast<double>(gr[c]) * xhat;
      sumB[c] += gr[c];
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    dWeight[c] = static_cast<float>(sumW[c]);
    dBias[c] = static_cast<float>(sumB[c]);
  }
  return Status::ok();
}

Status rmsNormInputGrad(const float *dY, const float *x, const float *weight,
                        int64_t rows, int64_t cols, float epsilon, float *dX) {
  if (Status s = checkNonNegative("rms_norm_input_grad", {rows, cols}); !s)
    return s;
  if (cols == 0)
    return Status::ok();
  // dX = r (g - xhat mean(g xhat)), g = dY * weight, xhat = x r.
  for (int64_t row = 0; row < rows; ++row) {
    const float *xr = x + row * cols, *gr = dY + row * cols;
    double inv = rowInverseRms(xr, cols, epsilon);
    double sumGX = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sumGX += static_cast<double>(gr[c]) * weight[c] * xr[c] * inv;
    double meanGX = sumGX / static_cast<double>(cols);
    float *out = dX + row * cols;
    for (int64_t c = 0; c < cols; ++c) {
      double g = static_cast<double>(gr[c]) * weight[c];
      out[c] = static_cast<float>(inv * (g - xr[c] * inv * meanGX));
    }
  }
  return Status::ok();
}

Status rmsNormParamGrad(const float *dY, const float *x, int64_t rows,
                        int64_t cols, float epsilon, double *scratch,
                        float *dWeight) {
  if (Status s = checkNonNegative("rms_norm_param_grad", {rows, cols}); !s)
    return s;
  std::fill(scratch, scratch + cols, 0.0);
  for (int64_t r = 0; r < rows && cols > 0; ++r) {
    const float *xr = x + r * cols, *gr = dY + r * cols;
    double inv = rowInverseRms(xr, cols, epsilon);
    for (int64_t c = 0; c < cols; ++c)
      scratch[c] +=
          static_cast<double>(gr[c]) * static_cast<float>(xr[c] * inv);
  }
  for (int64_t c = 0; c < cols; ++c)
    dWeight[c] = static_cast<float>(scratch[c]);
  return Status::ok();
}

namespace {

TPCRT_VECTOR_CLONES
void geluErfGrad(const float *dY, const float *x, int64_t count, float *dX) {
  const float invSqrt2 = 0.70710678118654752f;
  const float invSqrt2Pi = 0.39894228040143268f;
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + fastmath::erf(v * invSqrt2));
    float pdf = invSqrt2Pi * fastmath::exp(-0.5f * v * v);
    dX[i] = dY[i] * (cdf + v * pdf);
  }
}

TPCRT_VECTOR_CLONES
void geluTanhGrad(const float *dY, const float *x, int64_t count, float *dX) {
  const float k = 0.79788456080286536f; // sqrt(2 / pi)
  const float c = 0.044715f;
  for (int64_t i = 0; i < count; ++i) {
    float v = x[i];
    float t = fastmath::tanh(k * (v + c * v * v * v));
    float du = k * (1.0f + 3.0f * c * v * v);
    dX[i] = dY[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  }
}

TPCRT_VECTOR_CLONES
void siluGradLoop(const float *dY, const float *x, int64_t count, float *dX) {
  for (int64_t i = 0; i < count; ++i) {
    float s = fastmath::sigmoid(x[i]);
    dX[i] = dY[i] * (s * (1.0f + x[i] * (1.0f - s)));
  }
}

} // namespace

Status geluGrad(const float *dY, const float *x, int64_t count,
                GeluApproximation approximation, float *dX) {
  if (Status s = checkNonNegative("gelu_grad", {count}); !s)
    return s;
  if (approximation == GeluApproximation::Erf)
    geluErfGrad(dY, x, count, dX);
  else
    geluTanhGrad(dY, x, count, dX);
  return Status::ok();
}

Status siluGrad(const float *dY, const float *x, int64_t count, float *dX) {
  if (Status s = checkNonNegative("silu_grad", {count}); !s)
    return s;
  siluGradLoop(dY, x, count, dX);
  return Status::ok();
}

Status dropoutMask(int64_t count, uint64_t key, double rate, int64_t firstIndex,
                   uint8_t *mask, const GlobalBlock *block) {
  if (Status s = checkNonNegative("dropout_mask", {count, firstIndex}); !s)
    return s;
  if (Status s = checkDropoutRate("dropout_mask", rate); !s)
    return s;
  if (Status s = checkGlobalBlock("dropout_mask", block, count); !s)
    return s;
  uint64_t threshold = dropoutThreshold(rate);
  auto base = static_cast<uint64_t>(firstIndex);
  forEachGlobalRun(
      block, count, [&](int64_t local, uint64_t global, int64_t length) {
        uint8_t *ms = mask + local;
        forEachDropoutKeep(key, base + global, length, threshold,
                           [&](int64_t i, bool kept) { ms[i] = kept ? 1 : 0; });
      });
  return Status::ok();
}

Status applyMask(const float *x, const uint8_t *mask, int64_t count,
                 double rate, float *out) {
  if (Status s = checkNonNegative("apply_mask", {count}); !s)
    return s;
  if (Status s = checkDropoutRate("apply_mask", rate); !s)
    return s;
  float scale = dropoutScale(rate);
  for (int64_t i = 0; i < count; ++i)
    out[i] = mask[i] ? x[i] * scale : 0.0f;
  return Status::ok();
}

Status softmaxGrad(const float *dY, const float *y, int64_t outer, int64_t q,
                   int64_t k, bool causal, float *dX) {
  if (Status s = checkNonNegative("softmax_grad", {outer, q, k}); !s)
    return s;
  if (causal && k < q)
    return Status::error("softmax_grad: causal needs k >= q, got q " +
                         std::to_string(q) + " k " + std::to_string(k));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < q; ++i) {
      int64_t row = (o * q + i) * k;
      int64_t valid = causal ? i + (k - q) + 1 : k;
      const float *g = dY + row, *p = y + row;
      double dot = 0.0;
      for (int64_t j = 0; j < valid; ++j)
        dot += static_cast<double>(g[j]) * p[j];
      float d = static_cast<float>(dot);
      float *out = dX + row;
      for (int64_t j = 0; j < valid; ++j)
        out[j] = p[j] * (g[j] - d);
      std::fill(out + valid, out + k, 0.0f);
    }
  return Status::ok();
}

Status attentionGrad(const float *dO, const float *q, const float *k,
                     const float *v, int64_t batch, int64_t heads,
                     int64_t kvHeads, int64_t seqQ, int64_t seqK,
                     int64_t headDim, int64_t valueDim, bool causal,
                     float scale, float *scratch, float *dq, float *dk,
                     float *dv, const AttentionDropout *dropout,
                     AttentionLayout layout, const float *out,
                     const float *lse) {
  if ((out == nullptr) != (lse == nullptr))
    return Status::error("attention_grad: the forward's output and lse are "
                         "given both or neither");
  if (Status s = checkAttention(batch, heads, kvHeads, seqQ, seqK, headDim,
                                valueDim, causal, dropout, layout);
      !s)
    return s.withContext("grad");
  bool drop = dropout && dropout->rate > 0.0;
  uint64_t threshold = drop ? dropoutThreshold(dropout->rate) : 0;
  float dropScale = drop ? dropoutScale(dropout->rate) : 1.0f;
  int64_t group = heads / kvHeads;
  // dq and dk lie as q and k, dO as the output, dv as v.
  HeadRows qRows = headRows(layout, heads, seqQ, headDim),
           kRows = headRows(layout, kvHeads, seqK, headDim),
           vRows = headRows(layout, kvHeads, seqK, valueDim),
           oRows = resultRows(layout, heads, seqQ, valueDim);
  float *p = scratch;
  float *dp = scratch + attentionScratchSize(seqQ, seqK);
  // dk and dv sum into their rows (packed: between dq's parts).
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < kvHeads; ++h)
      for (int64_t i = 0; i < seqK; ++i) {
        std::fill_n(dk + kRows.at(b, h, i), headDim, 0.0f);
        std::fill_n(dv + vRows.at(b, h, i), valueDim, 0.0f);
      }
  // With P = softmax(S), Pd = P * mask / (1 - rate), O = Pd V:
  //   dV = Pd^T dO; dP = (dO V^T) * mask / (1 - rate);
  //   dS = P (dP - rowsum(dP P)); dQ = scale dS K; dK = scale dS^T Q.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t qh = qRows.head(b, h), kh = kRows.head(b, h / group),
              vh = vRows.head(b, h / group);
      const float *qHead = q + qh, *kHead = k + kh, *vHead = v + vh;
      const float *dOHead = dO + oRows.head(b, h);
      const float *outHead = out ? out + oRows.head(b, h) : nullptr;
      const float *lseHead = lse ? lse + (b * heads + h) * seqQ : nullptr;
      float *dqHead = dq + qh, *dkHead = dk + kh, *dvHead = dv + vh;
      for (int64_t i0 = 0; i0 < seqQ; i0 += kAttentionBlock) {
        AttentionBlock block = attentionBlock(i0, seqQ, seqK, causal);
        int64_t ld = block.ld;
        uint64_t firstRow =
            drop ? dropoutRow(*dropout, b, h, i0, heads, seqQ, seqK) : 0;
        Status s = attentionProbabilities(
            qHead, qRows.ld, kHead, kRows.ld, headDim, i0, block, seqQ, seqK,
            causal, scale, p, nullptr, lseHead ? lseHead + i0 : nullptr);
        if (s)
          s = gemm(false, true, block.rows, block.keys, valueDim, 1.0f,
                   dOHead + i0 * oRows.ld, oRows.ld, vHead, vRows.ld, 0.0f, dp,
                   ld);
        if (!s)
          return s.withContext("attention_grad");
        for (int64_t i = 0; i < block.rows; ++i) {
          float *pRow = p + i * ld, *dpRow = dp + i * ld;
          uint64_t index = firstRow + static_cast<uint64_t>(i * seqK);
          if (drop)
            forEachDropoutKeep(dropout->key, index, block.keys, threshold,
                               [&](int64_t j, bool kept) {
                                 dpRow[j] = kept ? dpRow[j] * dropScale : 0.0f;
                               });
          double dot = 0.0;
          if (!outHead)
            for (int64_t j = 0; j < block.keys; ++j)
              dot += static_cast<double>(dpRow[j]) * pRow[j];
          // The same D from the forward's output: rowsum(dO * O).
          if (outHead) {
            const float *dORow = dOHead + (i0 + i) * oRows.ld,
                        *oRow = outHead + (i0 + i) * oRows.ld;
            dot = 0.0;
            for (int64_t c = 0; c < valueDim; ++c)
              dot += static_cast<double>(dORow[c]) * oRow[c];
          }
          float d = static_cast<float>(dot);
          for (int64_t j = 0; j < block.keys; ++j)
            dpRow[j] = pRow[j] * (dpRow[j] - d);
        }
        // dp now holds dS.
        s = gemm(false, false, block.rows, headDim, block.keys, scale, dp, ld,
                 kHead, kRows.ld, 0.0f, dqHead + i0 * qRows.ld, qRows.ld);
        if (s)
          s = gemm(true, false, block.keys, headDim, block.rows, scale, dp, ld,
                   qHead + i0 * qRows.ld, qRows.ld, 1.0f, dkHead, kRows.ld);
        if (s && drop)
          dropProbabilities(p, block, firstRow, seqK, *dropout);
        if (s)
          s = gemm(true, false, block.keys, valueDim, block.rows, 1.0f, p, ld,
                   dOHead + i0 * oRows.ld, oRows.ld, 1.0f, dvHead, vRows.ld);
        if (!s)
          return s.withContext("attention_grad");
      }
    }
  return Status::ok();
}

Status crossEntropyGrad(const float *logits, const int64_t *labels,
                        int64_t positions, int64_t vocab, int64_t ignoreIndex,
                        float scale, float *dLogits) {
  if (Status s = checkNonNegative("cross_entropy_grad", {positions, vocab}); !s)
    return s;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t label = labels[p];
    float *out = dLogits + p * vocab;
    if (label == ignoreIndex) {
      std::fill(out, out + vocab, 0.0f);
      continue;
    }
    if (label < 0 || label >= vocab)
      return outsideVocabulary("cross_entropy_grad", "label", label, p, vocab);
    const float *row = logits + p * vocab;
    float maxValue = rowMax(row, vocab);
    float factor =
        static_cast<float>(scale / expInto(row, vocab, maxValue, out));
    for (int64_t j = 0; j < vocab; ++j)
      out[j] *= factor;
    out[label] -= scale;
  }
  return Status::ok();
}

Status crossEntropyBlockGrad(const float *logits, const int64_t *labels,
                             int64_t positions, int64_t columns,
                             const VocabBlock &block, int64_t ignoreIndex,
                             const float *max, const float *sumExp, float scale,
                             float *dLogits) {
  if (Status s = checkNonNegative("cross_entropy_grad",
                                  {positions, columns, block.offset});
      !s)
    return s;
  int64_t real = realColumns(columns, block);
  for (int64_t p = 0; p < positions; ++p) {
    float *out = dLogits + p * columns;
    int64_t label = labels[p];
    if (label == ignoreIndex) {
      std::fill(out, out + columns, 0.0f);
      continue;
    }
    if (label < 0 || label >= block.vocab)
      return outsideVocabulary("cross_entropy_grad", "label", label, p,
                               block.vocab);
    expInto(logits + p * columns, real, max[p], out);
    float factor = static_cast<float>(scale / static_cast<double>(sumExp[p]));
    for (int64_t j = 0; j < real; ++j)
      out[j] *= factor;
    std::fill(out + real, out + columns, 0.0f);
    int64_t local = label - block.offset;
    if (local >= 0 && local < real)
      out[local] -= scale;
  }
  return Status::ok();
}

Status pad(const float *x, const int64_t *shape, int rank, int64_t dim,
           int64_t offset, int64_t extent, float *out) {
  int64_t outer, inner;
  if (Status s = splitAt("pad", shape, rank, dim, outer, inner); !s)
    return s;
  int64_t size = shape[dim];
  if (offset < 0 || extent < 0 || offset > extent || size > extent - offset)
    return Status::error(
        "pad: [" + std::to_string(offset) + ", +" + std::to_string(size) +
        ") lies outside a dimension of " + std::to_string(extent));
  for (int64_t o = 0; o < outer; ++o) {
    float *row = out + o * extent * inner;
    std::fill(row, row + offset * inner, 0.0f);
    std::copy(x + o * size * inner, x + (o + 1) * size * inner,
              row + offset * inner);
    std::fill(row + (offset + size) * inner, row + extent * inner, 0.0f);
  }
  return Status::ok();
}

Status sumGroups(const float *x, const int64_t *shape, int rank, int64_t dim,
                 int64_t repeats, float *out) {
  int64_t outer, inner;
  if (Status s = splitAt("sum_groups", shape, rank, dim, outer, inner); !s)
    return s;
  if (repeats < 1 || shape[dim] % repeats != 0)
    return Status::error("sum_groups: dimension of " +
                         std::to_string(shape[dim]) +
                         " is not a positive multiple of " +
                         std::to_string(repeats) + " repeats");
  int64_t groups = shape[dim] / repeats;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t i = 0; i < groups; ++i) {
      float *o = out + (a * groups + i) * inner;
      const float *src = x + (a * shape[dim] + i * repeats) * inner;
      std::copy(src, src + inner, o);
      for (int64_t r = 1; r < repeats; ++r)
        for (int64_t e = 0; e < inner; ++e)
          o[e] += src[r * inner + e];
    }
  return Status::ok();
}

} // namespace cpu
} // namespace tpcrt
