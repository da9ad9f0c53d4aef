//===- LayoutKernels.cu - transpose, slice, repeat, pad, sums -------------===//
//
// The layout kernels of the pointwise family (PointwiseKernels.cu hands
// them their calls): transpose, slice, repeat, pad, sum_groups and sum_to,
// as CpuKernels.cpp and CpuGradKernels.cpp compute them. Moves are exact and
// sum_groups adds in fp32 in the CPU's order, so both are bit for bit the
// CPU's; sum_to sums in double, in the CPU's order when one chunk of rows
// covers the input (else partial sums in a fixed order). Float tensors are
// read with loadFloat and stored with storeFloat (operand and result may
// differ in storage); slice moves bytes of any dtype.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"

#include "tpcrt/ExecutableDType.h"
#include "tpcrt/Shape.h"

#include <algorithm>
#include <string>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

constexpr unsigned kThreads = 256;
/// The most dimensions of a layout kernel's tensors (Shape.h's kMaxRank).
constexpr int kMaxLayoutRank = 8;
/// Threads that fill the device: sum_to aims for this many.
constexpr int64_t kFillThreads = int64_t(1) << 18;

/// Bytes of one element of any dtype.
int64_t elementBytes(fb::DType dtype) {
  return static_cast<int64_t>(executableDTypeSize(dtype));
}


//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// The output walked in row-major order: per output dimension its extent
/// and the input stride of the dimension it reads.
struct TransposeIndex {
  int rank = 0;
  int64_t outShape[kMaxLayoutRank] = {};
  int64_t srcStride[kMaxLayoutRank] = {};
};

__global__ void __launch_bounds__(kThreads)
    transposeKernel(const void *x, Storage xType, void *y, Storage yType,
                    int64_t count, TransposeIndex t) {
  for (int64_t e = firstThread(); e < count; e += threadStride()) {
    int64_t rest = e, src = 0;
    for (int d = t.rank - 1; d >= 0; --d) {
      int64_t q, c;
      divMod(rest, t.outShape[d], q, c);
      src += c * t.srcStride[d];
      rest = q;
    }
    storeFloat(y, yType, e, loadFloat(x, xType, src));
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;
constexpr int kTileThreads = kTile * kTileRows;

/// A transpose whose last input dimension moves: 32 x 32 tiles of (input
/// dimension `a`, which is the output's last, x the input's last) through
/// shared memory, so that reads and writes are both contiguous. The other
/// dimensions (`rest`) select the tile's plane.
struct TiledTranspose {
  int restRank = 0;
  int64_t restShape[kMaxLayoutRank] = {};
  int64_t restIn[kMaxLayoutRank] = {};
  int64_t restOut[kMaxLayoutRank] = {};
  int64_t rows = 0;         // extent of input dimension a
  int64_t cols = 0;         // extent of the input's last dimension
  int64_t inRowStride = 0;  // input stride of dimension a
  int64_t outColStride = 0; // output stride of the input's last dimension
  int64_t planes = 0;       // product of restShape
};

__global__ void __launch_bounds__(kTileThreads)
    transposeTiledKernel(const void *x, Storage xType, void *y, Storage yType,
                         TiledTranspose t) {
  TPCRT_SHARED(float, tile, [kTile][kTile + 1]);
  int64_t colTiles = (t.cols + kTile - 1) / kTile;
  int64_t rowTiles = (t.rows + kTile - 1) / kTile;
  int64_t tiles = colTiles * rowTiles * t.planes;
  int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {
    int64_t q, colTile, rowTile, plane;
    divMod(b, colTiles, q, colTile);
    divMod(q, rowTiles, plane, rowTile);
    int64_t inBase = 0, outBase = 0;
    for (int d = t.restRank - 1; d >= 0; --d) {
      int64_t c;
      divMod(plane, t.restShape[d], q, c);
      inBase += c * t.restIn[d];
      outBase += c * t.restOut[d];
      plane = q;
    }
    int64_t row0 = rowTile * kTile, col0 = colTile * kTile;
    for (int k = ty; k < kTile; k += kTileRows) {
      int64_t row = row0 + k, col = col0 + tx;
      if (row < t.rows && col < t.cols)
        tile[k][tx] = loadFloat(x, xType, inBase + row * t.inRowStride + col);
    }
    __syncthreads();
    for (int k = ty; k < kTile; k += kTileRows) {
      int64_t row = row0 + tx, col = col0 + k;
      if (row < t.rows && col < t.cols)
        storeFloat(y, yType, outBase + col * t.outColStride + row, tile[tx][k]);
    }
    __syncthreads();
  }
}

/// Rows of units (1 to 16 bytes, whatever divides every size and address)
/// copied between strided places: units [xOffset, xOffset + rowUnits) of x's
/// row a (rows xPitch units apart) to units [yOffset, ...) of y's row a.
/// A slice reads part of each row; a concat's piece writes part of each.
template <typename Unit>
__global__ void __launch_bounds__(kThreads)
    copyRowsKernel(const Unit *x, Unit *y, int64_t rows, int64_t rowUnits,
                   int64_t xPitch, int64_t xOffset, int64_t yPitch,
                   int64_t yOffset) {
  int64_t count = rows * rowUnits;
  for (int64_t c = firstThread(); c < count; c += threadStride()) {
    int64_t a, k;
    divMod(c, rowUnits, a, k);
    y[a * yPitch + yOffset + k] = x[a * xPitch + xOffset + k];
  }
}

/// repeat_interleave: out [outer, extent * repeats, inner] reads x [outer,
/// extent, inner] at index / repeats along the dimension.
__global__ void __launch_bounds__(kThreads)
    repeatKernel(const void *x, Storage xType, void *y, Storage yType,
                 int64_t count, int64_t extent, int64_t repeats,
                 int64_t inner) {
  int64_t outExtent = extent * repeats;
  for (int64_t e = firstThread(); e < count; e += threadStride()) {
    int64_t q, k, a, j, i, r;
    divMod(e, inner, q, k);
    divMod(q, outExtent, a, j);
    divMod(j, repeats, i, r);
    int64_t src = (a * extent + i) * inner + k;
    storeFloat(y, yType, e, loadFloat(x, xType, src));
  }
}

/// pad: out [outer, extent, inner] holds x [outer, size, inner] at
/// [offset, offset + size) along the dimension, zeros elsewhere.
__global__ void __launch_bounds__(kThreads)
    padKernel(const void *x, Storage xType, void *y, Storage yType,
              int64_t count, int64_t extent, int64_t offset, int64_t size,
              int64_t inner) {
  for (int64_t e = firstThread(); e < count; e += threadStride()) {
    int64_t q, k, a, j;
    divMod(e, inner, q, k);
    divMod(q, extent, a, j);
    float v = 0.0f;
    if (j >= offset && j - offset < size)
      v = loadFloat(x, xType, (a * size + j - offset) * inner + k);
    storeFloat(y, yType, e, v);
  }
}

/// sum_groups: out [outer, groups, inner] sums x [outer, groups * repeats,
/// inner] over each group of `repeats` consecutive entries, in fp32 and in
/// order, as CpuGradKernels.cpp's sumGroups.
__global__ void __launch_bounds__(kThreads)
    sumGroupsKernel(const void *x, Storage xType, void *y, Storage yType,
                    int64_t count, int64_t groups, int64_t repeats,
                    int64_t inner) {
  for (int64_t e = firstThread(); e < count; e += threadStride()) {
    int64_t q, k, a, g;
    divMod(e, inner, q, k);
    divMod(q, groups, a, g);
    int64_t src = (a * groups * repeats + g * repeats) * inner + k;
    float sum = loadFloat(x, xType, src);
    for (int64_t r = 1; r < repeats; ++r)
      sum += loadFloat(x, xType, src + r * inner);
    storeFloat(y, yType, e, sum);
  }
}

/// sum_to's first pass: thread (chunk, column) sums rows [chunk *
/// rowsPerChunk, ...) of its column in double, in row order; with one chunk
/// that is the CPU's sum, stored as the result, else a partial sum.
__global__ void __launch_bounds__(kThreads)
    sumToRowsKernel(const void *x, Storage xType, int64_t rows, int64_t cols,
                    int64_t chunks, int64_t rowsPerChunk, double *partial,
                    void *y, Storage yType) {
  int64_t count = chunks * cols;
  for (int64_t t = firstThread(); t < count; t += threadStride()) {
    int64_t chunk, col;
    divMod(t, cols, chunk, col);
    int64_t begin = chunk * rowsPerChunk;
    int64_t end = min(rows, begin + rowsPerChunk);
    double sum = 0.0;
    for (int64_t r = begin; r < end; ++r)
      sum += loadFloat(x, xType, r * cols + col);
    if (partial)
      partial[t] = sum;
    else
      storeFloat(y, yType, col, static_cast<float>(sum));
  }
}

/// sum_to's second pass: each column's partial sums in chunk order.
__global__ void __launch_bounds__(kThreads)
    sumToChunksKernel(const double *partial, int64_t chunks, int64_t cols,
                      void *y, Storage yType) {
  for (int64_t col = firstThread(); col < cols; col += threadStride()) {
    double sum = 0.0;
    for (int64_t c = 0; c < chunks; ++c)
      sum += partial[c * cols + col];
    storeFloat(y, yType, col, static_cast<float>(sum));
  }
}

/// sum_to's chunks of rows: enough (column, chunk) threads to fill the
/// device, each summing at least kSumToMinRows rows. A function of the
/// call's sizes alone, so that the order of the sums is fixed.
constexpr int64_t kSumToMinRows = 16;

int64_t sumToChunks(const KernelCall &call) {
  int64_t cols = call.rhsCount;
  if (cols <= 0 || call.count <= 0)
    return 1;
  int64_t rows = call.count / cols;
  int64_t chunks = std::min((kFillThreads + cols - 1) / cols,
                            (rows + kSumToMinRows - 1) / kSumToMinRows);
  return std::max<int64_t>(chunks, 1);
}

uint64_t sumToScratchBytes(const KernelCall &call) {
  int64_t chunks = sumToChunks(call);
  return chunks > 1
             ? static_cast<uint64_t>(chunks * call.rhsCount) * sizeof(double)
             : 0;
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// A call's addresses and storages for one run.
struct Run {
  const KernelCall &call;
  const KernelArgs &args;

  const void *in(size_t j) const { return args.operands[j]; }
  void *out(size_t j) const { return args.results[j]; }
  Storage inType(size_t j) const { return storageOf(call.operands[j].dtype); }
  Storage outType(size_t j) const { return storageOf(call.results[j].dtype); }
};

Status runTranspose(const Run &r) {
  const KernelCall &call = r.call;
  const std::vector<int64_t> &shape = call.operands[0].shape;
  const std::vector<int64_t> &perm = call.intAttrs;
  int rank = static_cast<int>(shape.size());
  if (rank > kMaxLayoutRank || perm.size() != shape.size())
    return Status::error("transpose: rank " + std::to_string(rank) +
                         " with a permutation of " +
                         std::to_string(perm.size()));
  int64_t count = call.operands[0].elements;
  if (count <= 0)
    return Status::ok();
  int64_t inStride[kMaxLayoutRank], outStride[kMaxLayoutRank];
  for (int d = rank - 1; d >= 0; --d) {
    inStride[d] = d == rank - 1 ? 1 : inStride[d + 1] * shape[d + 1];
    outStride[d] = d == rank - 1 ? 1 : outStride[d + 1] * shape[perm[d + 1]];
  }
  // Tiles where the last dimension moves (and neither of the tile's two
  // is 1, which the index walk does as well).
  if (rank >= 2 && perm[rank - 1] != rank - 1 && shape[perm[rank - 1]] > 1 &&
      shape[rank - 1] > 1) {
    TiledTranspose t;
    int a = static_cast<int>(perm[rank - 1]);
    t.rows = shape[a];
    t.cols = shape[rank - 1];
    t.inRowStride = inStride[a];
    t.planes = 1;
    for (int p = 0; p < rank; ++p) {
      int d = static_cast<int>(perm[p]);
      if (d == rank - 1)
        t.outColStride = outStride[p];
      if (d == a || d == rank - 1)
        continue;
      t.restShape[t.restRank] = shape[d];
      t.restIn[t.restRank] = inStride[d];
      t.restOut[t.restRank] = outStride[p];
      t.planes *= shape[d];
      ++t.restRank;
    }
    int64_t tiles = (t.rows + kTile - 1) / kTile *
                    ((t.cols + kTile - 1) / kTile) * t.planes;
    auto blocks =
        static_cast<unsigned>(std::min<int64_t>(tiles, int64_t(65535) * 16));
    TPCRT_LAUNCH(transposeTiledKernel, blocks, dim3(kTile, kTileRows), 0,
                 r.args.stream, r.in(0), r.inType(0), r.out(0), r.outType(0),
                 t);
    return launchStatus("transpose");
  }
  TransposeIndex t;
  t.rank = rank;
  for (int d = 0; d < rank; ++d) {
    t.outShape[d] = shape[perm[d]];
    t.srcStride[d] = inStride[perm[d]];
  }
  TPCRT_LAUNCH(transposeKernel, gridFor(count, kThreads), kThreads, 0,
               r.args.stream, r.in(0), r.inType(0), r.out(0), r.outType(0),
               count, t);
  return launchStatus("transpose");
}

/// Where a row copy reads and writes, in bytes.
struct RowCopy {
  const void *x;
  void *y;
  int64_t rows, rowBytes, xPitch, xOffset, yPitch, yOffset;
};

template <typename Unit>
Status launchRowCopy(const RowCopy &c, cudaStream_t stream, const char *name) {
  auto unit = static_cast<int64_t>(sizeof(Unit));
  int64_t rowUnits = c.rowBytes / unit;
  TPCRT_LAUNCH(copyRowsKernel<Unit>, gridFor(c.rows * rowUnits, kThreads),
               kThreads, 0, stream, static_cast<const Unit *>(c.x),
               static_cast<Unit *>(c.y), c.rows, rowUnits, c.xPitch / unit,
               c.xOffset / unit, c.yPitch / unit, c.yOffset / unit);
  return launchStatus(name);
}

/// Launches `c` in the widest unit dividing every size and both addresses.
Status runRowCopy(const RowCopy &c, cudaStream_t stream, const char *name) {
  if (c.rowBytes <= 0 || c.rows <= 0)
    return Status::ok();
  uint64_t bits = static_cast<uint64_t>(c.rowBytes) |
                  static_cast<uint64_t>(c.xPitch) |
                  static_cast<uint64_t>(c.xOffset) |
                  static_cast<uint64_t>(c.yPitch) |
                  static_cast<uint64_t>(c.yOffset) |
                  reinterpret_cast<uintptr_t>(c.x) |
                  reinterpret_cast<uintptr_t>(c.y);
  if (bits % 16 == 0)
    return launchRowCopy<uint4>(c, stream, name);
  if (bits % 8 == 0)
    return launchRowCopy<uint2>(c, stream, name);
  if (bits % 4 == 0)
    return launchRowCopy<uint32_t>(c, stream, name);
  if (bits % 2 == 0)
    return launchRowCopy<uint16_t>(c, stream, name);
  return launchRowCopy<uint8_t>(c, stream, name);
}

Status runSlice(const Run &r) {
  const KernelCall &call = r.call;
  const std::vector<int64_t> &ia = call.intAttrs;
  AroundDim v = aroundDim(call.operands[0].shape, ia[0]);
  int64_t es = elementBytes(call.operands[0].dtype);
  int64_t rowBytes = ia[2] * v.inner * es;
  return runRowCopy({r.in(0), r.out(0), v.outer, rowBytes,
                     v.extent * v.inner * es, ia[1] * v.inner * es, rowBytes,
                     0},
                    r.args.stream, "slice");
}

/// concat: each input's rows into their place in the result's rows.
Status runConcat(const Run &r) {
  const KernelCall &call = r.call;
  int64_t dim = call.intAttrs[0];
  int64_t es = elementBytes(call.results[0].dtype);
  AroundDim v = aroundDim(call.results[0].shape, dim);
  int64_t pitch = v.extent * v.inner * es, offset = 0;
  for (size_t j = 0; j < call.operands.size(); ++j) {
    int64_t rowBytes =
        call.operands[j].shape[static_cast<size_t>(dim)] * v.inner * es;
    if (Status s = runRowCopy({r.in(j), r.out(0), v.outer, rowBytes, rowBytes,
                               0, pitch, offset},
                              r.args.stream, "concat");
        !s)
      return s;
    offset += rowBytes;
  }
  return Status::ok();
}

Status runSumTo(const Run &r) {
  const KernelCall &call = r.call;
  int64_t cols = call.rhsCount;
  if (cols <= 0)
    return Status::ok();
  if (call.count % cols != 0)
    return Status::error("sum_to: " + std::to_string(cols) +
                         " elements do not tile " + std::to_string(call.count));
  int64_t rows = call.count / cols;
  int64_t chunks = sumToChunks(call);
  int64_t rowsPerChunk = (rows + chunks - 1) / chunks;
  double *partial = nullptr;
  if (chunks > 1) {
    if (!r.args.scratch || r.args.scratchBytes < sumToScratchBytes(call))
      return Status::error("sum_to: " + std::to_string(r.args.scratchBytes) +
                           " bytes of scratch, needs " +
                           std::to_string(sumToScratchBytes(call)));
    partial = static_cast<double *>(r.args.scratch);
  }
  TPCRT_LAUNCH(sumToRowsKernel, gridFor(chunks * cols, kThreads), kThreads, 0,
               r.args.stream, r.in(0), r.inType(0), rows, cols, chunks,
               rowsPerChunk, partial, r.out(0), r.outType(0));
  if (Status s = launchStatus("sum_to"); !s || !partial)
    return s;
  TPCRT_LAUNCH(sumToChunksKernel, gridFor(cols, kThreads), kThreads, 0,
               r.args.stream, partial, chunks, cols, r.out(0), r.outType(0));
  return launchStatus("sum_to");
}

} // namespace

bool cuda::isLayoutKernel(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::Transpose:
  case fb::OpCode::Slice:
  case fb::OpCode::Concat:
  case fb::OpCode::Repeat:
  case fb::OpCode::Pad:
  case fb::OpCode::SumGroups:
  case fb::OpCode::SumTo:
    return true;
  default:
    return false;
  }
}

uint64_t cuda::layoutScratchBytes(const KernelCall &call) {
  return call.op == fb::OpCode::SumTo ? sumToScratchBytes(call) : 0;
}

Status cuda::runLayoutKernel(const KernelCall &call, const KernelArgs &args) {
  Run r{call, args};
  const std::vector<int64_t> &ia = call.intAttrs;
  cudaStream_t stream = args.stream;
  switch (call.op) {
  case fb::OpCode::Transpose:
    return runTranspose(r);
  case fb::OpCode::Slice:
    return runSlice(r);
  case fb::OpCode::Concat:
    return runConcat(r);
  case fb::OpCode::Repeat: {
    AroundDim v = aroundDim(call.operands[0].shape, ia[0]);
    int64_t count = call.results[0].elements;
    if (count <= 0)
      return Status::ok();
    TPCRT_LAUNCH(repeatKernel, gridFor(count, kThreads), kThreads, 0, stream,
                 r.in(0), r.inType(0), r.out(0), r.outType(0), count, v.extent,
                 ia[1], v.inner);
    return launchStatus("repeat");
  }
  case fb::OpCode::Pad: {
    AroundDim v = aroundDim(call.operands[0].shape, ia[0]);
    int64_t extent = call.results[0].shape[static_cast<size_t>(ia[0])];
    int64_t count = call.results[0].elements;
    if (count <= 0)
      return Status::ok();
    TPCRT_LAUNCH(padKernel, gridFor(count, kThreads), kThreads, 0, stream,
                 r.in(0), r.inType(0), r.out(0), r.outType(0), count, extent,
                 ia[1], v.extent, v.inner);
    return launchStatus("pad");
  }
  case fb::OpCode::SumGroups: {
    AroundDim v = aroundDim(call.operands[0].shape, ia[0]);
    int64_t repeats = ia[1];
    if (repeats < 1 || v.extent % repeats != 0)
      return Status::error("sum_groups: dimension of " +
                           std::to_string(v.extent) +
                           " is not a positive multiple of " +
                           std::to_string(repeats) + " repeats");
    int64_t count = call.results[0].elements;
    if (count <= 0)
      return Status::ok();
    TPCRT_LAUNCH(sumGroupsKernel, gridFor(count, kThreads), kThreads, 0, stream,
                 r.in(0), r.inType(0), r.out(0), r.outType(0), count,
                 v.extent / repeats, repeats, v.inner);
    return launchStatus("sum_groups");
  }
  case fb::OpCode::SumTo:
    return runSumTo(r);
  default:
    return Status::error("not a layout kernel");
  }
}
