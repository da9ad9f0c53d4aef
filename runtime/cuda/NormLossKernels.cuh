//===- NormLossKernels.cuh - norms and cross-entropy on the GPU -*- C++ -*-===//
//
// ReductionKernels.cu's kernels of layer_norm and rms_norm (with their
// input and parameter gradients) and of cross_entropy(_grad) over a whole
// vocabulary, with their device helpers (block max and exp sum of a row,
// row moments) and launch sizes (kRowThreads, kTotalThreads, rowGrid,
// paramGradChunks). ReductionKernels.cu launches them; the split-vocabulary
// phases there use the same helpers.
//
// TPCRT_CUDA_EMULATION: compiled for the host, to be tested on the CPU
// (runtime/test/NormLossEmulationTest.cpp, the emulated backend); the CUDA
// types and built-ins (threads, barriers, shuffles, __shared__, __f*_rn)
// come from runtime/test/CudaEmulation.h. Without it nothing changes.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_NORMLOSSKERNELS_CUH
#define TPCRT_CUDA_NORMLOSSKERNELS_CUH

#include "CudaCommon.cuh"
#ifdef TPCRT_CUDA_EMULATION
#include "CudaEmulation.h"
#endif

#include <algorithm>
#include <cstdint>

namespace tpcrt::cuda::normloss {

/// Threads of a block that reduces one row.
constexpr unsigned kRowThreads = 256;
/// Threads of a block that reduces a whole (small) tensor alone.
constexpr unsigned kTotalThreads = 1024;
/// The most blocks a row loop launches (each then loops over rows).
constexpr int64_t kMaxRowBlocks = int64_t(1) << 20;

inline unsigned rowGrid(int64_t rows) {
  return static_cast<unsigned>(
      std::min<int64_t>(std::max<int64_t>(rows, 1), kMaxRowBlocks));
}

/// Max of row[0, n) (-inf when n is 0), on every thread. fmaxf skips NaN
/// as the CPU's std::max from -inf does.
__device__ float blockRowMax(const void *x, Storage type, int64_t base,
                             int64_t n, float *shared) {
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    m = fmaxf(m, loadFloat(x, type, base + c));
  return blockMax(m, shared);
}

/// Sum of e^(row[j] - shift) over [0, n) in double (the CPU's expSum), on
/// every thread.
__device__ double blockExpSum(const void *x, Storage type, int64_t base,
                              int64_t n, float shift, double *shared) {
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    s += static_cast<double>(expf(loadFloat(x, type, base + c) - shift));
  return blockSumOf<double>(s, shared);
}

//===----------------------------------------------------------------------===//
// Norms: one block per row (rows in a block-stride loop), statistics in
// double as runtime/cpu computes them (rowMoments, rowInverseRms).
//===----------------------------------------------------------------------===//

struct Moments {
  double mean, rstd;
};

/// Mean and 1 / sqrt(biased var + eps) of a row (layerNorm's), given the
/// thread's sum of its columns (rowMoments' first loop).
__device__ Moments momentsGivenSum(double sum, const void *x, Storage type,
                                   int64_t base, int64_t cols, float epsilon,
                                   double *shared) {
  double mean = blockSumOf<double>(sum, shared) / static_cast<double>(cols);
  double sq = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    double d = loadFloat(x, type, base + c) - mean;
    sq = __dadd_rn(sq, __dmul_rn(d, d));
  }
  sq = blockSumOf<double>(sq, shared);
  return {mean, 1.0 / sqrt(sq / static_cast<double>(cols) +
                           static_cast<double>(epsilon))};
}

/// 1 / sqrt(mean(x^2) + eps) of a row (rmsNorm's), given the thread's sum
/// of its columns' squares.
__device__ double inverseRmsGivenSquares(double sq, int64_t cols, float epsilon,
                                         double *shared) {
  sq = blockSumOf<double>(sq, shared);
  return 1.0 /
         sqrt(sq / static_cast<double>(cols) + static_cast<double>(epsilon));
}

/// Mean and 1 / sqrt(biased var + eps) of a row (layerNorm's).
__device__ Moments rowMoments(const void *x, Storage type, int64_t base,
                              int64_t cols, float epsilon, double *shared) {
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum += loadFloat(x, type, base + c);
  return momentsGivenSum(sum, x, type, base, cols, epsilon, shared);
}

/// 1 / sqrt(mean(x^2) + eps) of a row (rmsNorm's).
__device__ double rowInverseRms(const void *x, Storage type, int64_t base,
                                int64_t cols, float epsilon, double *shared) {
  double sq = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    double v = loadFloat(x, type, base + c);
    sq += v * v;
  }
  return inverseRmsGivenSquares(sq, cols, epsilon, shared);
}

/// A float tensor operand as a kernel reads it.
struct In {
  const void *data;
  Storage type;
  __device__ float operator[](int64_t i) const {
    return loadFloat(data, type, i);
  }
};

/// A float tensor result.
struct Out {
  void *data;
  Storage type;
  __device__ void store(int64_t i, float v) const {
    storeFloat(data, type, i, v);
  }
};

/// Row `base` of layer_norm (bias.data non-null) or rms_norm, y =
/// float(xhat) * w (+ b), given the thread's first sum over its columns
/// (of x for layer_norm, of x^2 for rms_norm).
__device__ void normRowGiven(double first, In x, In weight, In bias,
                             int64_t base, int64_t cols, float epsilon,
                             double *shared, Out y) {
  if (bias.data) {
    Moments m =
        momentsGivenSum(first, x.data, x.type, base, cols, epsilon, shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      auto xhat = static_cast<float>((x[base + c] - m.mean) * m.rstd);
      y.store(base + c, __fadd_rn(__fmul_rn(xhat, weight[c]), bias[c]));
    }
  } else {
    double inv = inverseRmsGivenSquares(first, cols, epsilon, shared);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      auto xhat = static_cast<float>(x[base + c] * inv);
      y.store(base + c, __fmul_rn(xhat, weight[c]));
    }
  }
}

/// A thread's sum of `v` into a norm's first sum (normRowGiven's); _rn so
/// that the two kernels that sum it (normKernel, normOfSourceKernel) round
/// alike, no FMA contracted in one and not the other.
__device__ __forceinline__ void addToFirstSum(double &first, float v,
                                              bool layer) {
  double d = v;
  first = __dadd_rn(first, layer ? d : __dmul_rn(d, d));
}

/// layer_norm (bias.data non-null) or rms_norm: y = float(xhat) * w (+ b).
__global__ void normKernel(In x, In weight, In bias, int64_t rows, int64_t cols,
                           float epsilon, Out y) {
  TPCRT_SHARED(double, shared, [32]);
  bool layer = bias.data != nullptr;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    double first = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      addToFirstSum(first, x[base + c], layer);
    normRowGiven(first, x, weight, bias, base, cols, epsilon, shared, y);
  }
}

/// normKernel of z, which it computes on the way: each thread stores its
/// columns' z = round_z(source(i)) and sums them as normKernel sums the
/// stored z, then reads them back (its own stores) for the rest. A residual
/// add group with its norm (MaskAdd.cuh's source): z and y the unfused
/// kernels' bit for bit.
template <typename Source>
__global__ void normOfSourceKernel(Source source, Out z, In weight, In bias,
                                   int64_t rows, int64_t cols, float epsilon,
                                   Out y) {
  TPCRT_SHARED(double, shared, [32]);
  bool layer = bias.data != nullptr;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    double first = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float v = roundTo(source(base + c), z.type);
      z.store(base + c, v);
      addToFirstSum(first, v, layer);
    }
    normRowGiven(first, In{z.data, z.type}, weight, bias, base, cols, epsilon,
                 shared, y);
  }
}

/// Row `base` of layer_norm_input_grad: dX = rstd (g - mean(g) - xhat
/// mean(g xhat)), g = dY * weight, in double as the CPU's. For each of the
/// thread's columns c, emit(c, dX, dY, float(xhat)) (the last two as
/// layer_norm_param_grad sums them). `shared` holds 64 values.
template <typename Emit>
__device__ __forceinline__ void
layerNormInputGradRow(In dY, In x, In weight, int64_t base, int64_t cols,
                      float epsilon, double *shared, Emit emit) {
  double n = static_cast<double>(cols);
  Moments m = rowMoments(x.data, x.type, base, cols, epsilon, shared);
  double sumG = 0.0, sumGX = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    double g = static_cast<double>(dY[base + c]) * weight[c];
    sumG += g;
    sumGX += g * (x[base + c] - m.mean) * m.rstd;
  }
  // One reduction for both (a row's latency is mostly its barriers).
  blockSumOfTwo(sumG, sumGX, shared);
  double meanG = sumG / n;
  double meanGX = sumGX / n;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float xv = x[base + c], dy = dY[base + c];
    double xhat = (xv - m.mean) * m.rstd;
    double g = static_cast<double>(dy) * weight[c];
    emit(c, static_cast<float>(m.rstd * (g - meanG - xhat * meanGX)), dy,
         static_cast<float>(xhat));
  }
}

/// Row `base` of rms_norm_input_grad: dX = inv (g - x inv mean(g x inv)),
/// g = dY * weight; emit as layerNormInputGradRow's (float(x inv) the
/// normalized input).
template <typename Emit>
__device__ __forceinline__ void
rmsNormInputGradRow(In dY, In x, In weight, int64_t base, int64_t cols,
                    float epsilon, double *shared, Emit emit) {
  double inv = rowInverseRms(x.data, x.type, base, cols, epsilon, shared);
  double sumGX = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sumGX += static_cast<double>(dY[base + c]) * weight[c] * x[base + c] * inv;
  double meanGX = blockSumOf<double>(sumGX, shared) / static_cast<double>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float xv = x[base + c], dy = dY[base + c];
    double g = static_cast<double>(dy) * weight[c];
    emit(c, static_cast<float>(inv * (g - xv * inv * meanGX)), dy,
         static_cast<float>(xv * inv));
  }
}

/// layer_norm_input_grad (layer) or rms_norm_input_grad, a row per block.
__global__ void normInputGradKernel(In dY, In x, In weight, bool layer,
                                    int64_t rows, int64_t cols, float epsilon,
                                    Out dX) {
  TPCRT_SHARED(double, shared, [64]);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    auto store = [&](int64_t c, float dx, float, float) {
      dX.store(base + c, dx);
    };
    if (layer)
      layerNormInputGradRow(dY, x, weight, base, cols, epsilon, shared, store);
    else
      rmsNormInputGradRow(dY, x, weight, base, cols, epsilon, shared, store);
  }
}

/// Per row the statistics the parameter gradients need: layer_norm's mean
/// and rstd (stats[2r], stats[2r + 1]) or rms_norm's inverse rms (stats[r]).
__global__ void normStatsKernel(In x, int64_t rows, int64_t cols, float epsilon,
                                bool layer, double *stats) {
  TPCRT_SHARED(double, shared, [32]);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    if (layer) {
      Moments m = rowMoments(x.data, x.type, base, cols, epsilon, shared);
      if (threadIdx.x == 0) {
        stats[2 * r] = m.mean;
        stats[2 * r + 1] = m.rstd;
      }
    } else {
      double inv = rowInverseRms(x.data, x.type, base, cols, epsilon, shared);
      if (threadIdx.x == 0)
        stats[r] = inv;
    }
  }
}

/// How a parameter gradient's sum over rows is cut: blockIdx.y is a chunk
/// of rowsPerChunk rows, summed in row order per column; the chunks' sums
/// are then added in chunk order. Both depend on the sizes alone.
struct RowChunks {
  int64_t chunks = 1, rowsPerChunk = 0;
};

/// At most this many chunks (the fused norm backward's blocks, FusionPlan.h).
constexpr int64_t kParamGradChunks = 512;

/// The chunks of a parameter gradient's rows: the unfused kernels' and the
/// fused norm backward's alike, so that the two add the same partial sums
/// in the same order (their gradients are the same bits).
inline RowChunks paramGradChunks(int64_t rows) {
  RowChunks c;
  c.rowsPerChunk =
      std::max<int64_t>(1, (rows + kParamGradChunks - 1) / kParamGradChunks);
  c.chunks = std::max<int64_t>(1, (rows + c.rowsPerChunk - 1) / c.rowsPerChunk);
  return c;
}

/// Column c of chunk blockIdx.y: sum over its rows of dY * float(xhat) (and
/// of dY for layer_norm's bias) in double, as the CPU's param grads.
__global__ void normParamPartialsKernel(In dY, In x, int64_t rows, int64_t cols,
                                        int64_t rowsPerChunk,
                                        const double *stats, bool layer,
                                        double *partialW, double *partialB) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  int64_t chunk = blockIdx.y;
  int64_t begin = chunk * rowsPerChunk;
  int64_t end = min(rows, begin + rowsPerChunk);
  double sumW = 0.0, sumB = 0.0;
  for (int64_t r = begin; r < end; ++r) {
    float g = dY[r * cols + c];
    float xv = x[r * cols + c];
    if (layer) {
      auto xhat = static_cast<float>((xv - stats[2 * r]) * stats[2 * r + 1]);
      sumW += static_cast<double>(g) * xhat;
      sumB += g;
    } else {
      sumW += static_cast<double>(g) * static_cast<float>(xv * stats[r]);
    }
  }
  partialW[chunk * cols + c] = sumW;
  if (layer)
    partialB[chunk * cols + c] = sumB;
}

__global__ void normParamSumKernel(const double *partialW,
                                   const double *partialB, int64_t chunks,
                                   int64_t cols, Out dWeight, Out dBias) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       c < cols; c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double w = 0.0, b = 0.0;
    for (int64_t k = 0; k < chunks; ++k) {
      w += partialW[k * cols + c];
      if (dBias.data)
        b += partialB[k * cols + c];
    }
    dWeight.store(c, static_cast<float>(w));
    if (dBias.data)
      dBias.store(c, static_cast<float>(b));
  }
}

//===----------------------------------------------------------------------===//
// The fused norm backward (FusionPlan.h): a norm's parameter gradients and
// its input gradient in one pass over dY and x, and where the plan fuses
// it the residual add of the input gradient too (dX then never stored).
//===----------------------------------------------------------------------===//

/// The block's dynamic shared memory: its chunk's sums per column, of
/// dY * xhat (then, for layer_norm, of dY).
inline uint64_t normBackwardSharedBytes(int64_t cols, bool layer) {
  return static_cast<uint64_t>(layer ? 2 : 1) * cols * sizeof(double);
}

struct NormBackward {
  In dY{nullptr, Storage::F32}, x{nullptr, Storage::F32},
      weight{nullptr, Storage::F32};
  bool layer = true;
  int64_t rows = 0, cols = 0, rowsPerChunk = 0;
  float epsilon = 0.0f;
  /// The input gradient; not written where an add takes it (residual.data
  /// non-null): sum = residual + dX then (dX rounded to dXType first, the
  /// add's operand order kept: dX its lhs when dXLhs).
  Out dX{nullptr, Storage::F32};
  In residual{nullptr, Storage::F32};
  Out sum{nullptr, Storage::F32};
  Storage dXType = Storage::F32;
  bool dXLhs = true;
  /// The dropout of the group's result (dX, or the sum): masked = result
  /// (as stored) * scale where mask, else 0 (null: none).
  const uint8_t *mask = nullptr;
  Out masked{nullptr, Storage::F32};
  float maskScale = 1.0f;
  /// Per chunk and column, as normParamPartialsKernel's (normParamSumKernel
  /// adds them); null: no parameter gradient (the input gradient and its
  /// add alone, e.g. where the parameter gradient is refused or computed
  /// elsewhere), and no shared memory.
  double *partialW = nullptr, *partialB = nullptr;
};

/// Block b: rows [b rowsPerChunk, (b + 1) rowsPerChunk), each as
/// normInputGradKernel's, the parameter gradients' sums over them kept per
/// column in shared memory by the thread that owns the column (no
/// barrier), in row order as normParamPartialsKernel's.
__global__ void normBackwardKernel(NormBackward p) {
  TPCRT_SHARED(double, shared, [64]);
  TPCRT_DYNAMIC_SHARED(double, sums, 8);
  const bool paramSums = p.partialW != nullptr;
  for (int64_t c = threadIdx.x; paramSums && c < p.cols; c += blockDim.x) {
    sums[c] = 0.0;
    if (p.layer)
      sums[p.cols + c] = 0.0;
  }
  int64_t begin = static_cast<int64_t>(blockIdx.x) * p.rowsPerChunk;
  int64_t end = min(p.rows, begin + p.rowsPerChunk);
  for (int64_t r = begin; r < end; ++r) {
    int64_t base = r * p.cols;
    auto emit = [&](int64_t c, float dx, float dy, float xhat) {
      if (paramSums) {
        sums[c] += static_cast<double>(dy) * xhat;
        if (p.layer)
          sums[p.cols + c] += dy;
      }
      int64_t i = base + c;
      float stored;
      if (!p.residual.data) {
        p.dX.store(i, dx);
        stored = roundTo(dx, p.dX.type);
      } else {
        float d = roundTo(dx, p.dXType), rv = p.residual[i];
        float sum = p.dXLhs ? __fadd_rn(d, rv) : __fadd_rn(rv, d);
        p.sum.store(i, sum);
        stored = roundTo(sum, p.sum.type);
      }
      // PointwiseKernels.cu's ApplyMask of the value as stored.
      if (p.mask)
        p.masked.store(i,
                       p.mask[i] != 0 ? __fmul_rn(stored, p.maskScale) : 0.0f);
    };
    if (p.layer)
      layerNormInputGradRow(p.dY, p.x, p.weight, base, p.cols, p.epsilon,
                            shared, emit);
    else
      rmsNormInputGradRow(p.dY, p.x, p.weight, base, p.cols, p.epsilon, shared,
                          emit);
  }
  int64_t chunk = blockIdx.x;
  for (int64_t c = threadIdx.x; paramSums && c < p.cols; c += blockDim.x) {
    p.partialW[chunk * p.cols + c] = sums[c];
    if (p.layer)
      p.partialB[chunk * p.cols + c] = sums[p.cols + c];
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy over a whole vocabulary (padded or not): one block per
// position writes its loss (double) to scratch, then one block adds them in
// a fixed order.
//===----------------------------------------------------------------------===//

__device__ __forceinline__ bool targetLabel(int64_t label, int64_t ignore,
                                            int64_t vocab) {
  return label != ignore && label >= 0 && label < vocab;
}

/// A row's loss, max + log(sum e^(x - max)) - x[label] (the CPU's).
__device__ __forceinline__ double rowLossOf(float max, double sum,
                                            float target) {
  return static_cast<double>(max) + log(sum) - static_cast<double>(target);
}

/// rowLoss[p] = max + log(sum e^(x - max)) - x[label], 0 where ignored.
/// A row's first `classes` of its `cols` columns are the vocabulary; the
/// rest (a padded vocabulary on one device) take no probability mass.
__global__ void crossEntropyRowsKernel(In logits, const int64_t *labels,
                                       int64_t rows, int64_t cols,
                                       int64_t classes, int64_t ignore,
                                       double *rowLoss) {
  TPCRT_SHARED(float, sharedF, [32]);
  TPCRT_SHARED(double, sharedD, [32]);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t label = labels[r];
    if (!targetLabel(label, ignore, classes)) {
      if (threadIdx.x == 0)
        rowLoss[r] = 0.0;
      continue;
    }
    int64_t base = r * cols;
    float max = blockRowMax(logits.data, logits.type, base, classes, sharedF);
    double sum =
        blockExpSum(logits.data, logits.type, base, classes, max, sharedD);
    if (threadIdx.x == 0)
      rowLoss[r] = rowLossOf(max, sum, logits[base + label]);
  }
}

/// The loss sum and the count of positions that have a target (one block);
/// a null one is not written.
__global__ void crossEntropyTotalKernel(const double *rowLoss,
                                        const int64_t *labels, int64_t rows,
                                        int64_t classes, int64_t ignore,
                                        float *lossSum, int64_t *count) {
  TPCRT_SHARED(double, sharedD, [32]);
  TPCRT_SHARED(long long, sharedI, [32]);
  double total = 0.0;
  long long n = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += rowLoss[r];
    n += targetLabel(labels[r], ignore, classes);
  }
  total = blockSumOf<double>(total, sharedD);
  n = blockSumOf<long long>(n, sharedI);
  if (threadIdx.x == 0) {
    if (lossSum)
      *lossSum = static_cast<float>(total);
    if (count)
      *count = n;
  }
}

/// dLogits = scale (softmax - onehot), zero rows where ignored and zero
/// padding columns (from `classes` on); with rowLoss non-null also
/// cross_entropy's rows (crossEntropyRowsKernel's) from the same
/// statistics: cross_entropy and its gradient fused (FusionPlan.h), the
/// logits read three times instead of five.
__global__ void crossEntropyGradKernel(In logits, const int64_t *labels,
                                       int64_t rows, int64_t cols,
                                       int64_t classes, int64_t ignore,
                                       const float *lossSumGrad, Out dLogits,
                                       double *rowLoss) {
  TPCRT_SHARED(float, sharedF, [32]);
  TPCRT_SHARED(double, sharedD, [32]);
  float scale = *lossSumGrad;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t label = labels[r], base = r * cols;
    if (!targetLabel(label, ignore, classes)) {
      if (rowLoss && threadIdx.x == 0)
        rowLoss[r] = 0.0;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        dLogits.store(base + c, 0.0f);
      continue;
    }
    float max = blockRowMax(logits.data, logits.type, base, classes, sharedF);
    double sum =
        blockExpSum(logits.data, logits.type, base, classes, max, sharedD);
    if (rowLoss && threadIdx.x == 0)
      rowLoss[r] = rowLossOf(max, sum, logits[base + label]);
    auto factor = static_cast<float>(static_cast<double>(scale) / sum);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float g = c < classes
                    ? __fmul_rn(expf(logits[base + c] - max), factor)
                    : 0.0f;
      dLogits.store(base + c, c == label ? __fsub_rn(g, scale) : g);
    }
  }
}

} // namespace tpcrt::cuda::normloss

#endif // TPCRT_CUDA_NORMLOSSKERNELS_CUH
