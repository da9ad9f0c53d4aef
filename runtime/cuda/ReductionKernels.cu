//===- ReductionKernels.cu - norms, embeddings and losses on the GPU ------===//
//
// The reduction family (CudaKernels.h): layer_norm and rms_norm with their
// gradients, embedding(_grad), cross_entropy(_grad) over a whole vocabulary
// and the phases of a padded or split one; the optimizer and training-driver
// opcodes are OptimizerKernels.cu's, dispatched from here.
//
// Every result equals the CPU device's (runtime/cpu) up to fp32 rounding:
// the same formulas, statistics in double where the CPU keeps them in double,
// and float products and sums written with __f*_rn where the CPU rounds each
// operation (nvcc would otherwise fuse them into FMAs). Every reduction has a
// fixed shape and order (block sums of CudaCommon.cuh, ordered loops), so a
// run repeats bit for bit; nothing adds floats with atomics.
//
// The CPU kernels return an error for an id or a label outside the
// vocabulary; here the kernels themselves make no such check (a GPU has no
// cheap synchronous error: the device checks the ids and labels beside them,
// DataChecks.cu, and reports the first bad one when the step synchronizes),
// and compute on: an embedding id outside the table's rows reads a zero row (as
// another rank's row does), embedding_grad adds it nowhere, and an
// unsplit cross_entropy(_grad) treats an out-of-range label as ignored (no
// loss, not counted, a zero gradient row); in the split phases such a
// label has no target logit (0) and no one-hot term but is counted, which
// is the CPU's formula. Memory is never read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"
#include "CudaKernels.h"
#include "MaskAdd.cuh"
#include "NormLossKernels.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tpcrt::cuda {

// The norm and cross-entropy kernels, their helpers and launch sizes.
using namespace normloss;

namespace {

Storage operandType(const KernelCall &call, size_t j) {
  return storageOf(call.operands[j].dtype);
}
Storage resultType(const KernelCall &call, size_t j) {
  return storageOf(call.results[j].dtype);
}

In inOperand(const KernelCall &call, const KernelArgs &args, size_t j) {
  return {args.operands[j], operandType(call, j)};
}
Out outResult(const KernelCall &call, const KernelArgs &args, size_t j) {
  return {args.results[j], resultType(call, j)};
}

/// Scratch of a norm parameter gradient: the row statistics (the unfused
/// kernels'), then the chunks' partial sums (weight, then bias; the fused
/// norm backward's too, at the same place).
struct ParamGradScratch {
  uint64_t statsBytes = 0, partialBytes = 0;
  RowChunks chunks;
  uint64_t total() const { return statsBytes + partialBytes; }
  double *stats(void *scratch) const { return static_cast<double *>(scratch); }
  double *partialW(void *scratch) const {
    return reinterpret_cast<double *>(static_cast<uint8_t *>(scratch) +
                                      statsBytes);
  }
};

ParamGradScratch paramGradScratch(const KernelCall &call) {
  ParamGradScratch s;
  bool layer = call.op == fb::OpCode::LayerNormParamGrad;
  uint64_t perRow = layer ? 2 : 1;
  s.chunks = paramGradChunks(call.rows);
  s.statsBytes = alignScratch(perRow * call.rows * sizeof(double));
  s.partialBytes =
      alignScratch(perRow * s.chunks.chunks * call.cols * sizeof(double));
  return s;
}

Status runNorm(const KernelCall &call, const KernelArgs &args) {
  if (call.rows == 0 || call.cols == 0)
    return Status::ok();
  auto epsilon = static_cast<float>(call.floatAttrs[0]);
  In none{nullptr, Storage::F32};
  unsigned grid = rowGrid(call.rows);
  switch (call.op) {
  case fb::OpCode::LayerNorm:
  case fb::OpCode::RmsNorm: {
    bool layer = call.op == fb::OpCode::LayerNorm;
    TPCRT_LAUNCH(normKernel, grid, kRowThreads, 0, args.stream,
                 inOperand(call, args, 0), inOperand(call, args, 1),
                 layer ? inOperand(call, args, 2) : none, call.rows, call.cols,
                 epsilon, outResult(call, args, 0));
    return launchStatus(layer ? "layer_norm" : "rms_norm");
  }
  default: {
    bool layer = call.op == fb::OpCode::LayerNormInputGrad;
    TPCRT_LAUNCH(normInputGradKernel, grid, kRowThreads, 0, args.stream,
                 inOperand(call, args, 0), inOperand(call, args, 1),
                 inOperand(call, args, 2), layer, call.rows, call.cols, epsilon,
                 outResult(call, args, 0));
    return launchStatus(layer ? "layer_norm_input_grad"
                              : "rms_norm_input_grad");
  }
  }
}

/// A norm parameter gradient's results (`call`'s): the chunks' partial sums
/// at `partialW` (then the bias's) added in chunk order.
Status sumParamPartials(const KernelCall &call, const KernelArgs &args,
                        const double *partialW, int64_t chunks,
                        const char *name) {
  bool layer = call.op == fb::OpCode::LayerNormParamGrad;
  TPCRT_LAUNCH(normParamSumKernel, gridFor(call.cols), 256, 0, args.stream,
               partialW, partialW + chunks * call.cols, chunks, call.cols,
               outResult(call, args, 0),
               layer ? outResult(call, args, 1) : Out{nullptr, Storage::F32});
  return launchStatus(name);
}

Status runNormParamGrad(const KernelCall &call, const KernelArgs &args) {
  bool layer = call.op == fb::OpCode::LayerNormParamGrad;
  const char *name = layer ? "layer_norm_param_grad" : "rms_norm_param_grad";
  if (call.cols == 0)
    return Status::ok();
  ParamGradScratch s = paramGradScratch(call);
  if (args.scratchBytes < s.total())
    return Status::error(std::string(name) + ": scratch too small");
  double *stats = s.stats(args.scratch);
  double *partialW = s.partialW(args.scratch);
  double *partialB = partialW + s.chunks.chunks * call.cols;
  In dY = inOperand(call, args, 0), x = inOperand(call, args, 1);
  auto epsilon = static_cast<float>(call.floatAttrs[0]);
  if (call.rows > 0) {
    TPCRT_LAUNCH(normStatsKernel, rowGrid(call.rows), kRowThreads, 0,
                 args.stream, x, call.rows, call.cols, epsilon, layer, stats);
    if (Status st = launchStatus(name); !st)
      return st;
  }
  dim3 grid(static_cast<unsigned>((call.cols + kRowThreads - 1) / kRowThreads),
            static_cast<unsigned>(s.chunks.chunks));
  TPCRT_LAUNCH(normParamPartialsKernel, grid, kRowThreads, 0, args.stream, dY,
               x, call.rows, call.cols, s.chunks.rowsPerChunk, stats, layer,
               partialW, partialB);
  if (Status st = launchStatus(name); !st)
    return st;
  return sumParamPartials(call, args, partialW, s.chunks.chunks, name);
}

//===----------------------------------------------------------------------===//
// Embedding: a table that is block `position` of the vocabulary (with a
// group) holds rows [offset, offset + rows); other ids read zeros.
//===----------------------------------------------------------------------===//

int64_t vocabOffset(const KernelCall &call) {
  return call.group >= 0 ? call.groupPosition * call.k : 0;
}

/// The table row of an id, or -1 (another rank's row, or not an id).
__device__ __forceinline__ int64_t tableRow(int64_t id, int64_t offset,
                                            int64_t rows) {
  return id >= offset && id - offset < rows ? id - offset : -1;
}

__global__ void embeddingKernel(In table, int64_t rows, int64_t hidden,
                                const int64_t *ids, int64_t numIds,
                                int64_t offset, Out out) {
  int64_t total = numIds * hidden;
  bool same = table.type == out.type;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t p = i / hidden, c = i - p * hidden;
    int64_t row = tableRow(ids[p], offset, rows);
    if (row < 0) {
      out.store(i, 0.0f); // zero bits in every float storage
      continue;
    }
    int64_t at = row * hidden + c;
    // The same storage is copied bit for bit (as the CPU's cast does).
    if (same && storageBytes(out.type) == 2)
      static_cast<uint16_t *>(out.data)[i] =
          static_cast<const uint16_t *>(table.data)[at];
    else if (same)
      static_cast<uint32_t *>(out.data)[i] =
          static_cast<const uint32_t *>(table.data)[at];
    else
      out.store(i, table[at]);
  }
}

Status runEmbedding(const KernelCall &call, const KernelArgs &args) {
  int64_t total = call.m * call.n;
  if (total == 0)
    return Status::ok();
  TPCRT_LAUNCH(embeddingKernel, gridFor(total), 256, 0, args.stream,
               inOperand(call, args, 0), call.k, call.n,
               static_cast<const int64_t *>(args.operands[1]), call.m,
               vocabOffset(call), outResult(call, args, 0));
  return launchStatus("embedding");
}

// embedding_grad: the (row, position) pairs sorted by row with CUB's radix
// sort (stable, so each row's positions stay ascending), then one block per
// table row adds its positions' dY rows in position order, in float from
// 0 as the CPU does (the same sums, bit for bit). A row no id hits gets 0.
// Ids outside the table's rows get the key `rows`, past every row.

/// Keys and positions are 32-bit unless rows or ids need 64.
bool wideEmbeddingGrad(const KernelCall &call) {
  return call.k >= INT32_MAX || call.m >= INT32_MAX;
}

/// Bits of the keys: enough for `rows` itself.
int keyBits(int64_t rows) {
  int bits = 1;
  while (bits < 63 && (uint64_t(1) << bits) <= static_cast<uint64_t>(rows))
    ++bits;
  return bits;
}

template <typename T>
using CountOf = std::conditional_t<sizeof(T) == 4, int, int64_t>;

/// The radix sort's temporary bytes (a host-only query; 0 if it fails, and
/// the run then reports CUB's error).
template <typename T> uint64_t sortTempBytes(int64_t items, int endBit) {
  size_t bytes = 0;
  cub::DoubleBuffer<T> keys(nullptr, nullptr), values(nullptr, nullptr);
  if (cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values,
                                      static_cast<CountOf<T>>(items), 0,
                                      endBit) != cudaSuccess)
    return 0;
  return bytes;
}

/// Scratch: keys, alternate keys, positions, alternate positions (m each),
/// then CUB's temporary storage.
uint64_t embeddingGradScratchBytes(const KernelCall &call) {
  if (call.m == 0 || call.k == 0 || call.n == 0)
    return 0;
  bool wide = wideEmbeddingGrad(call);
  uint64_t size = wide ? 8 : 4;
  int bits = keyBits(call.k);
  uint64_t temp = wide ? sortTempBytes<uint64_t>(call.m, bits)
                       : sortTempBytes<uint32_t>(call.m, bits);
  return 4 * alignScratch(size * call.m) + alignScratch(temp);
}

template <typename T>
__global__ void embeddingGradKeysKernel(const int64_t *ids, int64_t numIds,
                                        int64_t offset, int64_t rows, T *keys,
                                        T *positions) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numIds; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t row = tableRow(ids[i], offset, rows);
    keys[i] = static_cast<T>(row < 0 ? rows : row);
    positions[i] = static_cast<T>(i);
  }
}

/// The first index of sorted keys[0, n) whose key is not below `key`.
template <typename T>
__device__ int64_t lowerBound(const T *keys, int64_t n, uint64_t key) {
  int64_t low = 0, high = n;
  while (low < high) {
    int64_t mid = low + (high - low) / 2;
    if (static_cast<uint64_t>(keys[mid]) < key)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

template <typename T>
__global__ void embeddingGradRowsKernel(In dY, const T *keys,
                                        const T *positions, int64_t numIds,
                                        int64_t rows, int64_t hidden,
                                        Out dTable) {
  TPCRT_SHARED(int64_t, run, [2]);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    __syncthreads(); // the previous row's run is read
    if (threadIdx.x == 0) {
      run[0] = lowerBound(keys, numIds, static_cast<uint64_t>(r));
      run[1] = run[0] + lowerBound(keys + run[0], numIds - run[0],
                                   static_cast<uint64_t>(r) + 1);
    }
    __syncthreads();
    int64_t begin = run[0], end = run[1];
    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
      float sum = 0.0f;
      for (int64_t j = begin; j < end; ++j)
        sum += dY[static_cast<int64_t>(positions[j]) * hidden + c];
      dTable.store(r * hidden + c, sum);
    }
  }
}

// embedding_grad_accumulate: the same sort; then one block per sorted
// position that starts a row's run adds that run's dY rows, in position
// order from 0 (embedding_grad's sum, bit for bit), into the table grad's
// row. Rows no id hits are not touched.
template <typename T>
__global__ void embeddingGradAccumulateKernel(In dY, const T *keys,
                                              const T *positions,
                                              int64_t numIds, int64_t rows,
                                              int64_t hidden, float *dTable) {
  for (int64_t i = blockIdx.x; i < numIds; i += gridDim.x) {
    uint64_t key = static_cast<uint64_t>(keys[i]);
    if (key >= static_cast<uint64_t>(rows) ||
        (i > 0 && static_cast<uint64_t>(keys[i - 1]) == key))
      continue; // past the table (another block's ids), or not a run's start
    int64_t end = i + lowerBound(keys + i, numIds - i, key + 1);
    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
      float sum = 0.0f;
      for (int64_t j = i; j < end; ++j)
        sum += dY[static_cast<int64_t>(positions[j]) * hidden + c];
      dTable[static_cast<int64_t>(key) * hidden + c] += sum;
    }
  }
}

template <typename T>
Status embeddingGradSorted(const KernelCall &call, const KernelArgs &args) {
  const bool accumulate = call.op == fb::OpCode::EmbeddingGradAccumulate;
  const char *name =
      accumulate ? "embedding_grad_accumulate" : "embedding_grad";
  uint64_t arrayBytes = alignScratch(sizeof(T) * call.m);
  if (args.scratchBytes < 4 * arrayBytes)
    return Status::error(std::string(name) + ": scratch too small");
  auto *bytes = static_cast<uint8_t *>(args.scratch);
  auto *keys0 = reinterpret_cast<T *>(bytes);
  auto *keys1 = reinterpret_cast<T *>(bytes + arrayBytes);
  auto *positions0 = reinterpret_cast<T *>(bytes + 2 * arrayBytes);
  auto *positions1 = reinterpret_cast<T *>(bytes + 3 * arrayBytes);
  TPCRT_LAUNCH(embeddingGradKeysKernel<T>, gridFor(call.m), 256, 0, args.stream,
               static_cast<const int64_t *>(args.operands[1]), call.m,
               vocabOffset(call), call.k, keys0, positions0);
  if (Status s = launchStatus(name); !s)
    return s;
  cub::DoubleBuffer<T> keys(keys0, keys1), positions(positions0, positions1);
  size_t tempBytes = args.scratchBytes - 4 * arrayBytes;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(
      bytes + 4 * arrayBytes, tempBytes, keys, positions,
      static_cast<CountOf<T>>(call.m), 0, keyBits(call.k), args.stream);
  if (err != cudaSuccess)
    return Status::error(std::string(name) +
                         ": radix sort failed: " + cudaGetErrorString(err));
  if (accumulate) {
    TPCRT_LAUNCH(embeddingGradAccumulateKernel<T>, rowGrid(call.m), kRowThreads,
                 0, args.stream, inOperand(call, args, 0), keys.Current(),
                 positions.Current(), call.m, call.k, call.n,
                 static_cast<float *>(args.results[0]));
    return launchStatus(name);
  }
  TPCRT_LAUNCH(embeddingGradRowsKernel<T>, rowGrid(call.k), kRowThreads, 0,
               args.stream, inOperand(call, args, 0), keys.Current(),
               positions.Current(), call.m, call.k, call.n,
               outResult(call, args, 0));
  return launchStatus(name);
}

Status runEmbeddingGrad(const KernelCall &call, const KernelArgs &args) {
  if (call.k == 0 || call.n == 0)
    return Status::ok();
  if (call.m == 0 && call.op == fb::OpCode::EmbeddingGradAccumulate)
    return Status::ok(); // nothing to add
  if (call.m == 0) {
    // Nothing to add: the table is zeros.
    const uint64_t *none = nullptr;
    TPCRT_LAUNCH(embeddingGradRowsKernel<uint64_t>, rowGrid(call.k),
                 kRowThreads, 0, args.stream, inOperand(call, args, 0), none,
                 none, 0, call.k, call.n, outResult(call, args, 0));
    return launchStatus("embedding_grad");
  }
  return wideEmbeddingGrad(call) ? embeddingGradSorted<uint64_t>(call, args)
                                 : embeddingGradSorted<uint32_t>(call, args);
}

/// A whole row's columns that are classes: the real vocabulary of a padded
/// one ([ignore, vocab]), else all.
int64_t classesOf(const KernelCall &call) {
  return call.intAttrs.size() == 2 ? std::min(call.intAttrs[1], call.cols)
                                   : call.cols;
}

const int64_t *labelsOf(const KernelArgs &args) {
  return static_cast<const int64_t *>(args.operands[1]);
}

/// cross_entropy's loss sum and count from its rows' losses (but for the
/// results whose bit `unwritten` sets).
Status crossEntropyTotal(const KernelCall &call, const KernelArgs &args,
                         const double *rowLoss, const char *name,
                         uint8_t unwritten = 0) {
  TPCRT_LAUNCH(crossEntropyTotalKernel, 1, kTotalThreads, 0, args.stream,
               rowLoss, labelsOf(args), call.rows, classesOf(call),
               call.intAttrs[0],
               unwritten & 1 ? nullptr : static_cast<float *>(args.results[0]),
               unwritten & 2 ? nullptr
                             : static_cast<int64_t *>(args.results[1]));
  return launchStatus(name);
}

Status runCrossEntropy(const KernelCall &call, const KernelArgs &args) {
  const char *name = call.op == fb::OpCode::CrossEntropy ? "cross_entropy"
                                                         : "cross_entropy_grad";
  if (call.crossEntropyOverBlock())
    return Status::error(std::string(name) +
                         ": a split vocabulary runs in the device's phases");
  In logits = inOperand(call, args, 0);
  const int64_t *labels = labelsOf(args);
  int64_t ignore = call.intAttrs[0];
  if (call.op == fb::OpCode::CrossEntropyGrad) {
    if (call.rows == 0 || call.cols == 0)
      return Status::ok();
    TPCRT_LAUNCH(crossEntropyGradKernel, rowGrid(call.rows), kRowThreads, 0,
                 args.stream, logits, labels, call.rows, call.cols,
                 classesOf(call), ignore,
                 static_cast<const float *>(args.operands[2]),
                 outResult(call, args, 0), nullptr);
    return launchStatus(name);
  }
  if (args.scratchBytes < call.rows * sizeof(double))
    return Status::error(std::string(name) + ": scratch too small");
  auto *rowLoss = static_cast<double *>(args.scratch);
  if (call.rows > 0) {
    TPCRT_LAUNCH(crossEntropyRowsKernel, rowGrid(call.rows), kRowThreads, 0,
                 args.stream, logits, labels, call.rows, call.cols,
                 classesOf(call), ignore, rowLoss);
    if (Status s = launchStatus(name); !s)
      return s;
  }
  return crossEntropyTotal(call, args, rowLoss, name);
}

//===----------------------------------------------------------------------===//
// The phases of a split vocabulary, padded or not (CpuKernels.h's
// crossEntropyBlock*): the logits' columns are the classes [blockStart,
// blockStart + cols); those at or past `classes` are padding.
//===----------------------------------------------------------------------===//

/// The block's columns that are classes (KernelSupport.h's realColumns).
int64_t realColumns(int64_t cols, int64_t blockStart, int64_t classes) {
  int64_t real = classes - blockStart;
  return real < 0 ? 0 : real > cols ? cols : real;
}

__global__ void blockMaxKernel(In logits, int64_t rows, int64_t cols,
                               int64_t real, float *max) {
  TPCRT_SHARED(float, shared, [32]);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float m = blockRowMax(logits.data, logits.type, r * cols, real, shared);
    if (threadIdx.x == 0)
      max[r] = m;
  }
}

__global__ void blockSumsKernel(In logits, const int64_t *labels, int64_t rows,
                                int64_t cols, int64_t real, int64_t blockStart,
                                int64_t ignore, const float *max, float *sumExp,
                                float *target) {
  TPCRT_SHARED(double, shared, [32]);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    double sum =
        blockExpSum(logits.data, logits.type, base, real, max[r], shared);
    if (threadIdx.x == 0) {
      sumExp[r] = static_cast<float>(sum);
      int64_t label = labels[r];
      bool held =
          label != ignore && label >= blockStart && label - blockStart < real;
      if (target)
        target[r] = held ? logits[base + label - blockStart] : 0.0f;
    }
  }
}

__global__ void combineKernel(const int64_t *labels, int64_t rows,
                              int64_t ignore, const float *max,
                              const float *sumExp, const float *target,
                              float *lossSum, int64_t *count) {
  TPCRT_SHARED(double, sharedD, [32]);
  TPCRT_SHARED(long long, sharedI, [32]);
  double total = 0.0;
  long long n = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    if (labels[r] == ignore)
      continue;
    total += static_cast<double>(max[r]) + log(static_cast<double>(sumExp[r])) -
             static_cast<double>(target[r]);
    ++n;
  }
  total = blockSumOf<double>(total, sharedD);
  n = blockSumOf<long long>(n, sharedI);
  if (threadIdx.x == 0) {
    *lossSum = static_cast<float>(total);
    *count = n;
  }
}

__global__ void blockGradKernel(In logits, const int64_t *labels, int64_t rows,
                                int64_t cols, int64_t real, int64_t blockStart,
                                int64_t ignore, const float *max,
                                const float *sumExp, const float *lossSumGrad,
                                Out dLogits) {
  float scale = *lossSumGrad;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t label = labels[r], base = r * cols;
    if (label == ignore) {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        dLogits.store(base + c, 0.0f);
      continue;
    }
    auto factor = static_cast<float>(static_cast<double>(scale) /
                                     static_cast<double>(sumExp[r]));
    int64_t local = label >= blockStart && label - blockStart < real
                        ? label - blockStart
                        : -1;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float g = 0.0f;
      if (c < real)
        g = __fmul_rn(expf(logits[base + c] - max[r]), factor);
      dLogits.store(base + c, c == local ? __fsub_rn(g, scale) : g);
    }
  }
}

template <bool kBias, bool kMask>
void launchNormOfMaskAdd(const MaskAdd &add, const KernelCall &norm,
                         const KernelArgs &args, float epsilon,
                         cudaStream_t stream) {
  bool layer = norm.op == fb::OpCode::LayerNorm;
  auto *kernel = &normOfSourceKernel<MaskAddAt<kBias, kMask>>;
  TPCRT_LAUNCH(kernel, rowGrid(norm.rows), kRowThreads, 0, stream,
               MaskAddAt<kBias, kMask>{add}, Out{add.z, add.zType},
               inOperand(norm, args, 1),
               layer ? inOperand(norm, args, 2) : In{nullptr, Storage::F32},
               norm.rows, norm.cols, epsilon, outResult(norm, args, 0));
}

} // namespace

Status runNormOfMaskAdd(const char *name, const MaskAdd &add, bool bias,
                        bool mask, const KernelCall &norm,
                        const KernelArgs &normArgs, cudaStream_t stream) {
  bool layer = norm.op == fb::OpCode::LayerNorm;
  if ((!layer && norm.op != fb::OpCode::RmsNorm) ||
      norm.operands.size() != (layer ? 3u : 2u) || norm.results.size() != 1 ||
      norm.floatAttrs.empty())
    return Status::error(std::string(name) + ": the last kernel is not a norm");
  if (norm.rows * norm.cols != add.count)
    return Status::error(std::string(name) + ": the norm's " +
                         std::to_string(norm.rows) + " rows of " +
                         std::to_string(norm.cols) + " are not the add's " +
                         std::to_string(add.count) + " elements");
  if (normArgs.operands[0] != add.z)
    return Status::error(std::string(name) +
                         ": the norm does not read the add's result");
  if (add.count == 0)
    return Status::ok();
  auto epsilon = static_cast<float>(norm.floatAttrs[0]);
  if (bias)
    mask ? launchNormOfMaskAdd<true, true>(add, norm, normArgs, epsilon, stream)
         : launchNormOfMaskAdd<true, false>(add, norm, normArgs, epsilon,
                                            stream);
  else
    mask
        ? launchNormOfMaskAdd<false, true>(add, norm, normArgs, epsilon, stream)
        : launchNormOfMaskAdd<false, false>(add, norm, normArgs, epsilon,
                                            stream);
  return launchStatus(name);
}

Status crossEntropyBlockMax(const void *logits, Storage logitsType,
                            const int64_t *, int64_t rows, int64_t cols,
                            int64_t blockStart, int64_t classes, int64_t,
                            float *max, cudaStream_t stream) {
  // The CPU checks the labels here; the GPU does not (see the file header).
  if (rows == 0)
    return Status::ok();
  TPCRT_LAUNCH(blockMaxKernel, rowGrid(rows), kRowThreads, 0, stream,
               In{logits, logitsType}, rows, cols,
               realColumns(cols, blockStart, classes), max);
  return launchStatus("cross_entropy block max");
}

Status crossEntropyBlockSums(const void *logits, Storage logitsType,
                             const int64_t *labels, int64_t rows, int64_t cols,
                             int64_t blockStart, int64_t classes,
                             int64_t ignoreIndex, const float *max,
                             float *sumExp, float *target,
                             cudaStream_t stream) {
  if (rows == 0)
    return Status::ok();
  TPCRT_LAUNCH(blockSumsKernel, rowGrid(rows), kRowThreads, 0, stream,
               In{logits, logitsType}, labels, rows, cols,
               realColumns(cols, blockStart, classes), blockStart, ignoreIndex,
               max, sumExp, target);
  return launchStatus("cross_entropy block sums");
}

Status crossEntropyCombine(const int64_t *labels, int64_t rows,
                           int64_t ignoreIndex, const float *max,
                           const float *sumExp, const float *target,
                           float *lossSum, int64_t *count,
                           cudaStream_t stream) {
  TPCRT_LAUNCH(combineKernel, 1, kTotalThreads, 0, stream, labels, rows,
               ignoreIndex, max, sumExp, target, lossSum, count);
  return launchStatus("cross_entropy combine");
}

Status crossEntropyBlockGrad(const void *logits, Storage logitsType,
                             const int64_t *labels, int64_t rows, int64_t cols,
                             int64_t blockStart, int64_t classes,
                             int64_t ignoreIndex, const float *max,
                             const float *sumExp, const float *lossSumGrad,
                             void *dLogits, Storage dLogitsType,
                             cudaStream_t stream) {
  if (rows == 0 || cols == 0)
    return Status::ok();
  TPCRT_LAUNCH(blockGradKernel, rowGrid(rows), kRowThreads, 0, stream,
               In{logits, logitsType}, labels, rows, cols,
               realColumns(cols, blockStart, classes), blockStart, ignoreIndex,
               max, sumExp, lossSumGrad, Out{dLogits, dLogitsType});
  return launchStatus("cross_entropy block grad");
}

Status runCrossEntropyWithGrad(const KernelCall &loss, const KernelCall &grad,
                               const KernelArgs &lossArgs,
                               const KernelArgs &gradArgs, uint8_t unwritten) {
  const char *name = "cross_entropy + cross_entropy_grad";
  if (loss.op != fb::OpCode::CrossEntropy ||
      grad.op != fb::OpCode::CrossEntropyGrad || loss.crossEntropyOverBlock() ||
      grad.crossEntropyOverBlock() || loss.rows != grad.rows ||
      loss.cols != grad.cols || loss.intAttrs.empty() ||
      loss.intAttrs != grad.intAttrs || loss.results.size() != 2 ||
      grad.operands.size() != 3)
    return Status::error(std::string(name) +
                         ": not a whole vocabulary's loss and its gradient");
  if (lossArgs.scratchBytes < loss.rows * sizeof(double))
    return Status::error(std::string(name) + ": scratch too small");
  auto *rowLoss = static_cast<double *>(lossArgs.scratch);
  if (loss.rows > 0) {
    TPCRT_LAUNCH(crossEntropyGradKernel, rowGrid(loss.rows), kRowThreads, 0,
                 gradArgs.stream, inOperand(grad, gradArgs, 0),
                 labelsOf(gradArgs), grad.rows, grad.cols, classesOf(grad),
                 grad.intAttrs[0],
                 static_cast<const float *>(gradArgs.operands[2]),
                 outResult(grad, gradArgs, 0), rowLoss);
    if (Status s = launchStatus(name); !s)
      return s;
  }
  return crossEntropyTotal(loss, lossArgs, rowLoss, name, unwritten);
}

/// The fused kernel's parameters from `inputGrad` and, where given, the
/// residual `add` of its result; an error where the add does not add the
/// input gradient to another tensor of its size.
Status normBackwardOf(const KernelCall &inputGrad, const KernelCall *add,
                      const KernelArgs &inputArgs, const KernelArgs *addArgs,
                      const char *name, NormBackward &p) {
  p.dY = inOperand(inputGrad, inputArgs, 0);
  p.x = inOperand(inputGrad, inputArgs, 1);
  p.weight = inOperand(inputGrad, inputArgs, 2);
  p.rows = inputGrad.rows;
  p.cols = inputGrad.cols;
  p.epsilon = static_cast<float>(inputGrad.floatAttrs[0]);
  p.dX = outResult(inputGrad, inputArgs, 0);
  p.dXType = resultType(inputGrad, 0);
  if (!add)
    return Status::ok();
  uint32_t dX = inputGrad.results[0].buffer;
  if (!addArgs || add->op != fb::OpCode::Add || add->operands.size() != 2 ||
      add->results.size() != 1 ||
      (add->operands[0].buffer == dX) == (add->operands[1].buffer == dX) ||
      add->count != add->rhsCount ||
      add->count != inputGrad.results[0].elements)
    return Status::error(std::string(name) +
                         ": the add does not add the input gradient to "
                         "another tensor of its size");
  p.dXLhs = add->operands[0].buffer == dX;
  p.residual = inOperand(*add, *addArgs, p.dXLhs ? 1 : 0);
  p.sum = outResult(*add, *addArgs, 0);
  return Status::ok();
}

/// p's mask from `applyMask` (the dropout of the group's result, `count`
/// elements), as the apply_mask's run sees it (rate 0 in evaluation).
Status normMaskOf(const KernelCall &applyMask, const KernelArgs &maskArgs,
                  int64_t count, const char *name, NormBackward &p) {
  if (applyMask.op != fb::OpCode::ApplyMask || applyMask.operands.size() != 2 ||
      applyMask.results.size() != 1 || applyMask.floatAttrs.empty() ||
      applyMask.operands[1].dtype != fb::DType::U8 || applyMask.count != count)
    return Status::error(std::string(name) +
                         ": the apply_mask does not mask the group's result");
  p.mask = static_cast<const uint8_t *>(maskArgs.operands[1]);
  p.masked = outResult(applyMask, maskArgs, 0);
  return applyMaskScale(applyMask, maskArgs, name, p.maskScale);
}

Status runNormGroup(const NormGroup &g) {
  if (!g.inputGrad || !g.inputArgs || (g.paramGrad && !g.paramArgs) ||
      (g.add && !g.addArgs) || (g.mask && !g.maskArgs))
    return Status::error("norm backward: a member without its addresses");
  const KernelCall &inputGrad = *g.inputGrad;
  bool layer = inputGrad.op == fb::OpCode::LayerNormInputGrad;
  const char *name = g.paramGrad
                         ? (layer ? "layer_norm backward" : "rms_norm backward")
                         : (layer ? "layer_norm_input_grad group"
                                  : "rms_norm_input_grad group");
  if ((!layer && inputGrad.op != fb::OpCode::RmsNormInputGrad) ||
      inputGrad.floatAttrs.empty() || inputGrad.operands.size() != 3 ||
      inputGrad.results.size() != 1)
    return Status::error(std::string(name) + ": not a norm's input gradient");
  if (g.paramGrad) {
    const KernelCall &paramGrad = *g.paramGrad;
    fb::OpCode param =
        layer ? fb::OpCode::LayerNormParamGrad : fb::OpCode::RmsNormParamGrad;
    if (paramGrad.op != param || paramGrad.rows != inputGrad.rows ||
        paramGrad.cols != inputGrad.cols || paramGrad.floatAttrs.empty() ||
        paramGrad.results.size() != (layer ? 2u : 1u))
      return Status::error(std::string(name) +
                           ": not a norm's parameter and input gradients");
  }
  NormBackward p;
  p.layer = layer;
  if (Status s =
          normBackwardOf(inputGrad, g.add, *g.inputArgs, g.addArgs, name, p);
      !s)
    return s;
  if (g.mask)
    if (Status s = normMaskOf(*g.mask, *g.maskArgs, p.rows * p.cols, name, p);
        !s)
      return s;
  if (!g.paramGrad) {
    if (p.rows == 0 || p.cols == 0)
      return Status::ok();
    // No parameter sums: any chunking gives the same values (each row is
    // the unfused kernel's row function).
    int64_t chunks = std::min<int64_t>(p.rows, 4096);
    p.rowsPerChunk = (p.rows + chunks - 1) / chunks;
    chunks = (p.rows + p.rowsPerChunk - 1) / p.rowsPerChunk;
    TPCRT_LAUNCH(normBackwardKernel, dim3(static_cast<unsigned>(chunks)),
                 dim3(kRowThreads), 0, g.inputArgs->stream, p);
    return launchStatus(name);
  }
  if (p.cols == 0)
    return Status::ok();
  // The unfused parameter gradient's scratch (which the device reserves
  // for it), its partial sums where that kernel keeps them.
  const KernelArgs &paramArgs = *g.paramArgs;
  ParamGradScratch s = paramGradScratch(*g.paramGrad);
  RowChunks chunks = s.chunks;
  p.rowsPerChunk = chunks.rowsPerChunk;
  if (paramArgs.scratchBytes < s.total())
    return Status::error(std::string(name) + ": scratch too small");
  p.partialW = s.partialW(paramArgs.scratch);
  p.partialB = p.partialW + chunks.chunks * p.cols;
  if (Status st = launchWithSharedMemory(
          normBackwardKernel, dim3(static_cast<unsigned>(chunks.chunks)),
          dim3(kRowThreads), normBackwardSharedBytes(p.cols, layer),
          paramArgs.stream, name, name, p);
      !st)
    return st;
  return sumParamPartials(*g.paramGrad, paramArgs, p.partialW, chunks.chunks,
                          name);
}

//===----------------------------------------------------------------------===//
// The family.
//===----------------------------------------------------------------------===//

bool isNormParamGrad(fb::OpCode op) {
  return op == fb::OpCode::LayerNormParamGrad ||
         op == fb::OpCode::RmsNormParamGrad;
}

bool isReductionKernel(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::LayerNorm:
  case fb::OpCode::RmsNorm:
  case fb::OpCode::LayerNormInputGrad:
  case fb::OpCode::RmsNormInputGrad:
  case fb::OpCode::LayerNormParamGrad:
  case fb::OpCode::RmsNormParamGrad:
  case fb::OpCode::Embedding:
  case fb::OpCode::EmbeddingGrad:
  case fb::OpCode::EmbeddingGradAccumulate:
  case fb::OpCode::CrossEntropy:
  case fb::OpCode::CrossEntropyGrad:
    return true;
  default:
    return isOptimizerKernel(op);
  }
}

uint64_t reductionScratchBytes(const KernelCall &call) {
  switch (call.op) {
  case fb::OpCode::LayerNormParamGrad:
  case fb::OpCode::RmsNormParamGrad:
    return call.cols ? paramGradScratch(call).total() : 0;
  case fb::OpCode::EmbeddingGrad:
  case fb::OpCode::EmbeddingGradAccumulate:
    return embeddingGradScratchBytes(call);
  case fb::OpCode::CrossEntropy:
  case fb::OpCode::CrossEntropyGrad:
    // Split: the device's phases' max, sumExp and target per position (the
    // last two adjacent, as the CPU device lays them out). Else the loss's
    // per-position sums.
    if (call.crossEntropyOverBlock())
      return alignScratch(3 * sizeof(float) * call.rows);
    return call.op == fb::OpCode::CrossEntropy
               ? alignScratch(sizeof(double) * call.rows)
               : 0;
  default:
    return isOptimizerKernel(call.op) ? optimizerScratchBytes(call) : 0;
  }
}

Status runReductionKernel(const KernelCall &call, const KernelArgs &args) {
  switch (call.op) {
  case fb::OpCode::LayerNorm:
  case fb::OpCode::RmsNorm:
  case fb::OpCode::LayerNormInputGrad:
  case fb::OpCode::RmsNormInputGrad:
    return runNorm(call, args);
  case fb::OpCode::LayerNormParamGrad:
  case fb::OpCode::RmsNormParamGrad:
    return runNormParamGrad(call, args);
  case fb::OpCode::Embedding:
    return runEmbedding(call, args);
  case fb::OpCode::EmbeddingGrad:
  case fb::OpCode::EmbeddingGradAccumulate:
    return runEmbeddingGrad(call, args);
  case fb::OpCode::CrossEntropy:
  case fb::OpCode::CrossEntropyGrad:
    return runCrossEntropy(call, args);
  default:
    if (isOptimizerKernel(call.op))
      return runOptimizerKernel(call, args);
    return Status::error("not a reduction kernel");
  }
}

} // namespace tpcrt::cuda
