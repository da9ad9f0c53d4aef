//===- CudaCommon.cuh - what the CUDA kernel families share -----*- C++ -*-===//
//
// Loads and stores in any float storage (computing in fp32, rounding to
// nearest even on store, as the CPU device's casts do), the dropout stream
// of tpcrt/Random.h on the device (the same draws as the CPU device: the
// runtime builds with --expt-relaxed-constexpr, so Random.h's constexpr
// functions run on the device), a split tensor's global index, block
// reductions and launch sizes.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_CUDACOMMON_CUH
#define TPCRT_CUDA_CUDACOMMON_CUH

#include "CudaKernels.h"
#include "tpcrt/Random.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

/// kernel<<<grid, block, sharedBytes, stream>>>(args...), spelled so that
/// the host emulation (runtime/test/emulation) runs the same launch: there
/// the launch runs the kernel's blocks on the CPU before it returns.
#ifdef TPCRT_CUDA_EMULATION
#define TPCRT_LAUNCH(kernel, grid, block, sharedBytes, stream, ...)            \
  ::tpcrt::emu::launchKernel(kernel, grid, block, sharedBytes, stream,         \
                             ##__VA_ARGS__)
#else
#define TPCRT_LAUNCH(kernel, grid, block, sharedBytes, stream, ...)            \
  kernel<<<grid, block, sharedBytes, stream>>>(__VA_ARGS__)
#endif

// A kernel's shared memory, declared so that the host emulation
// (CudaEmulation.h defines both there) can poison it (and check the dynamic
// memory's bounds):
//   TPCRT_SHARED(float, partial, [32]);  a statically sized variable,
//       `__shared__ float partial[32];` here; poisoned at every block's start
//       there, as the dynamic shared memory is (a read of a slot the block
//       never wrote shows);
//   TPCRT_DYNAMIC_SHARED(unsigned char, smem, 128);  the launch's dynamic
//       shared memory as `smem`, aligned to 128 bytes; the block's
//       poisoned, bounds-checked memory there.
#ifndef TPCRT_CUDA_EMULATION
#define TPCRT_SHARED(type, name, ...) __shared__ type name __VA_ARGS__
// clang-format off
#define TPCRT_DYNAMIC_SHARED(type, name, align) \
  extern __shared__ __align__(align) type name[]
// clang-format on
#endif

namespace tpcrt::cuda {

/// `p` as a pointer to the vector type V (uint4, float2, ...): a GPU
/// faults on a V access that is not sizeof(V)-byte aligned ("misaligned
/// address"), which the host emulation checks here.
template <typename V>
__device__ __forceinline__ const V *vectorAt(const void *p) {
#ifdef TPCRT_CUDA_EMULATION
  ::tpcrt::emu::checkAligned(p, sizeof(V));
#endif
  return static_cast<const V *>(p);
}
template <typename V> __device__ __forceinline__ V *vectorAt(void *p) {
#ifdef TPCRT_CUDA_EMULATION
  ::tpcrt::emu::checkAligned(p, sizeof(V));
#endif
  return static_cast<V *>(p);
}

__device__ __forceinline__ float loadFloat(const void *p, Storage type,
                                           int64_t i) {
  switch (type) {
  case Storage::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case Storage::F16:
    return __half2float(static_cast<const __half *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void storeFloat(void *p, Storage type, int64_t i,
                                           float value) {
  switch (type) {
  case Storage::BF16:
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(value);
    break;
  case Storage::F16:
    static_cast<__half *>(p)[i] = __float2half_rn(value);
    break;
  default:
    static_cast<float *>(p)[i] = value;
  }
}

/// `v` as storeFloat would store it in `type`, read back (a fused kernel
/// keeps the rounding of the intermediate it never stores).
__device__ __forceinline__ float roundTo(float v, Storage type) {
  switch (type) {
  case Storage::BF16:
    return __bfloat162float(__float2bfloat16_rn(v));
  case Storage::F16:
    return __half2float(__float2half_rn(v));
  default:
    return v;
  }
}

/// Bytes of one element.
__host__ __device__ __forceinline__ int storageBytes(Storage type) {
  switch (type) {
  case Storage::BF16:
  case Storage::F16:
    return 2;
  case Storage::I64:
    return 8;
  case Storage::U8:
    return 1;
  default:
    return 4;
  }
}

/// The most dimensions a split dropout tensor has (Layout.h's blocks).
constexpr int kMaxBlockRank = 8;

/// Where element i (row-major in a rank's block) of a split tensor lies in
/// the whole tensor (CpuKernels.h's GlobalBlock), by value for a kernel's
/// parameters. rank 0: not split, the index is i.
struct GlobalIndex {
  int rank = 0;
  int64_t shape[kMaxBlockRank] = {};
  int64_t globalShape[kMaxBlockRank] = {};
  int64_t offset[kMaxBlockRank] = {};

  __host__ __device__ int64_t operator()(int64_t i) const {
    if (rank == 0)
      return i;
    int64_t global = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t coordinate = i % shape[d];
      i /= shape[d];
      global += (coordinate + offset[d]) * stride;
      stride *= globalShape[d];
    }
    return global;
  }
};

/// The dropout stream every dropout kernel draws (tpcrt/Random.h, as
/// CpuDevice.cpp's kernels): the element at stream index n is kept iff
/// dropoutKeep(key, n, threshold), and kept elements are multiplied by
/// `scale`. The kernels differ in how an element finds its index:
/// DropoutDraw (an elementwise tensor, GlobalIndex) and attn::Dropout (an
/// attention's probabilities, by row).
struct DropoutStream {
  uint64_t key = 0;
  uint64_t threshold = 0;
  float scale = 1.0f;

  /// The stream of `rate` at (seed, stream, step).
  void setStream(uint64_t seed, uint64_t stream, uint64_t step, double rate) {
    key = dropoutKey(seed, stream, step);
    threshold = dropoutThreshold(rate);
    scale = dropoutScale(rate);
  }
  /// Whether index n is kept: its bit of its pair (the per-element paths:
  /// the fp32 attention kernels, rows that start odd).
  __device__ __forceinline__ bool keepsIndex(uint64_t n) const {
    return (keptPairOf(n) >> (n & 1)) & 1u;
  }
  /// The pair holding index n: 2 (n / 2) (bit 0) and 2 (n / 2) + 1 (bit 1),
  /// two draws of one hash (its half with fields 0, 1 or 2, 3).
  __device__ __forceinline__ unsigned keptPairOf(uint64_t n) const {
    return keptHalf(drawnHalf(n));
  }
  /// The 32 bits of index n's hash that hold its pair's two draws: the
  /// high half (fields 0, 1) or the low (2, 3).
  __device__ __forceinline__ uint32_t drawnHalf(uint64_t n) const {
    const uint64_t z = splitmix64Rounds(counterInput(n));
    return dropoutField(n) & 2u ? lowHalf(z) : highHalf(z);
  }
  /// The hash's high and low 32 bits from z, its rounds' result
  /// (splitmix64Rounds): the hash is z ^ (z >> 31), whose high half is z's
  /// own but for bit 0, and whose low half takes z's bits 31..62.
  static __device__ __forceinline__ uint32_t highHalf(uint64_t z) {
    const auto zHigh = static_cast<uint32_t>(z >> 32);
    return zHigh ^ (zHigh >> 31);
  }
  static __device__ __forceinline__ uint32_t lowHalf(uint64_t z) {
    return static_cast<uint32_t>(z) ^ static_cast<uint32_t>(z >> 31);
  }
  /// Whether the two draws of a half are kept: its high 16 bits (bit 0)
  /// and its low (bit 1). threshold <= 2^16: compared in 32 bits.
  __device__ __forceinline__ unsigned keptHalf(uint32_t half) const {
    const auto limit = static_cast<uint32_t>(threshold);
    return static_cast<unsigned>((half >> 16) >= limit) |
           static_cast<unsigned>((half & 0xFFFFu) >= limit) << 1;
  }
  /// What splitmix64 mixes for the counter that draws index n (the key, the
  /// counter and splitmix64's gamma, Random.h): a caller that walks blocks
  /// of 16 indices steps it by 4 a block and calls keptQuadAt.
  __device__ __forceinline__ uint64_t counterInput(uint64_t n) const {
    return key + kSplitMix64Gamma + dropoutCounter(n);
  }
  /// dropoutKeepQuad (Random.h) of the counter whose splitmix64 input is
  /// `input` (bit f for field f), in the 32-bit halves the GPU has. The
  /// four compares written out, not two keptHalf: composed so, nvcc 13
  /// issued 1361 instructions a forward tile with dropout, not 1224 (d128,
  /// attention-issue-slots.sh).
  __device__ __forceinline__ unsigned keptQuadAt(uint64_t input) const {
    const uint64_t z = splitmix64Rounds(input);
    const uint32_t high = highHalf(z), low = lowHalf(z);
    const auto limit = static_cast<uint32_t>(threshold);
    return static_cast<unsigned>((high >> 16) >= limit) |
           static_cast<unsigned>((high & 0xFFFFu) >= limit) << 1 |
           static_cast<unsigned>((low >> 16) >= limit) << 2 |
           static_cast<unsigned>((low & 0xFFFFu) >= limit) << 3;
  }
};

/// An elementwise kernel's draw: element i is kept iff
/// keepsIndex(firstIndex + index(i)). threshold 0 keeps every element.
struct DropoutDraw : DropoutStream {
  int64_t firstIndex = 0;
  GlobalIndex index;

  __device__ __forceinline__ bool keep(int64_t i) const {
    return threshold == 0 ||
           keepsIndex(static_cast<uint64_t>(firstIndex + index(i)));
  }
  /// Whether block i.. i + 15 is one block of the stream's (its first
  /// index on a block of 16, the elements' indices their own: a whole
  /// tensor), so that keptBlock may draw it.
  bool drawsBlocks() const { return index.rank == 0 && firstIndex % 16 == 0; }
  /// The keep bytes (1 kept, 0 dropped) of elements i.. i + 15, i a
  /// multiple of 16, where drawsBlocks(): the block's four hashes, byte k
  /// in byte k % 4 of word k / 4.
  __device__ __forceinline__ uint4 keptBlock(int64_t i) const {
    const uint64_t input = counterInput(static_cast<uint64_t>(firstIndex + i));
    // Written out, not a `#pragma unroll` loop: the host-compiled tests
    // include this header, and g++ warns at the pragma.
    const unsigned quad[4] = {keptQuadAt(input), keptQuadAt(input + 1),
                              keptQuadAt(input + 2), keptQuadAt(input + 3)};
    // Counter c draws elements 2c, 2c + 1 (fields 0, 1) and 2c + 8, 2c + 9
    // (fields 2, 3): two bits of a quad to two neighbouring bytes.
    auto bytes = [](unsigned bits) { return (bits & 1u) | (bits & 2u) << 7; };
    uint4 kept;
    kept.x = bytes(quad[0]) | bytes(quad[1]) << 16;
    kept.y = bytes(quad[2]) | bytes(quad[3]) << 16;
    kept.z = bytes(quad[0] >> 2) | bytes(quad[1] >> 2) << 16;
    kept.w = bytes(quad[2] >> 2) | bytes(quad[3] >> 2) << 16;
    return kept;
  }
  /// Elements i (bit 0) and i + 1 (bit 1, 0 past `count`): one hash where
  /// their stream indices are one pair (2 p and 2 p + 1: whole tensors,
  /// rows of even length), else one each.
  __device__ __forceinline__ unsigned keepTwo(int64_t i, int64_t count) const {
    if (threshold == 0)
      return 3u;
    const auto first = static_cast<uint64_t>(firstIndex + index(i));
    if (i + 1 >= count)
      return keepsIndex(first) ? 1u : 0u;
    const auto second = static_cast<uint64_t>(firstIndex + index(i + 1));
    if ((first & 1) == 0 && second == first + 1)
      return keptPairOf(first);
    return static_cast<unsigned>(keepsIndex(first)) |
           static_cast<unsigned>(keepsIndex(second)) << 1;
  }
};

/// The sum over a warp, on every lane (float, double or long long).
template <typename T> __device__ __forceinline__ T warpSumOf(T v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warpSum(float v) { return warpSumOf(v); }

__device__ __forceinline__ float warpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// The sum over the block (blockDim.x a multiple of 32, at most 1024), on
/// every thread; `shared` holds 32 values. The order of additions is fixed
/// by the launch shape, so results repeat bit for bit.
template <typename T>
__device__ __forceinline__ T blockSumOf(T v, T *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSumOf(v);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : T(0);
  return warpSumOf(v);
}

/// blockSumOf of two values at once, each added in blockSumOf's order (the
/// same bits), behind one pair of barriers instead of two; `shared` holds
/// 64 values.
template <typename T>
__device__ __forceinline__ void blockSumOfTwo(T &a, T &b, T *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  a = warpSumOf(a);
  b = warpSumOf(b);
  __syncthreads();
  if (lane == 0) {
    shared[warp] = a;
    shared[32 + warp] = b;
  }
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  a = warpSumOf(lane < warps ? shared[lane] : T(0));
  b = warpSumOf(lane < warps ? shared[32 + lane] : T(0));
}

__device__ __forceinline__ float blockSum(float v, float *shared) {
  return blockSumOf(v, shared);
}

__device__ __forceinline__ float blockMax(float v, float *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : -INFINITY;
  return warpMax(v);
}

/// q = a / b, r = a % b for a >= 0, b > 0: 32-bit division when both fit.
__device__ __forceinline__ void divMod(int64_t a, int64_t b, int64_t &q,
                                       int64_t &r) {
  if (((static_cast<uint64_t>(a) | static_cast<uint64_t>(b)) >> 32) == 0) {
    uint32_t q32 = static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
    q = q32;
    r = static_cast<uint32_t>(a) - q32 * static_cast<uint32_t>(b);
  } else {
    q = a / b;
    r = a - q * b;
  }
}

/// a % b for a >= 0, b > 0 (divMod's).
__device__ __forceinline__ int64_t modFast(int64_t a, int64_t b) {
  int64_t q, r;
  divMod(a, b, q, r);
  return r;
}

/// A grid-stride loop's first index and stride.
__device__ __forceinline__ int64_t firstThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t threadStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

/// Elements a vectorized map takes at once (16 bytes of 16-bit storage).
constexpr int kVec = 8;

/// The elementwise kernels' grid-stride loop over [0, count): vectorBody(base)
/// for each run of kVec elements of [0, count / kVec * kVec) where
/// `vectorized` (the caller's pointers 16-byte aligned), then
/// scalarBody(i) for every other element.
template <typename VectorBody, typename ScalarBody>
__device__ __forceinline__ void forEachElement(int64_t count, bool vectorized,
                                               VectorBody &&vectorBody,
                                               ScalarBody &&scalarBody) {
  int64_t first = firstThread(), stride = threadStride();
  int64_t vectorEnd = vectorized ? count / kVec * kVec : 0;
  for (int64_t base = first * kVec; base < vectorEnd; base += stride * kVec)
    vectorBody(base);
  for (int64_t i = vectorEnd + first; i < count; i += stride)
    scalarBody(i);
}

inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Elements [i, i + kVec) (i a multiple of kVec, p 16-byte aligned) as
/// floats; U8 (a mask) reads 0 or the byte's value.
__device__ __forceinline__ void loadVec(const void *p, Storage type, int64_t i,
                                        float (&v)[kVec]) {
  switch (type) {
  case Storage::BF16: {
    uint4 raw = *vectorAt<uint4>(static_cast<const __nv_bfloat16 *>(p) + i);
    __nv_bfloat162 h[4];
    memcpy(h, &raw, sizeof(raw));
    for (int k = 0; k < 4; ++k) {
      float2 f = __bfloat1622float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
    break;
  }
  case Storage::F16: {
    uint4 raw = *vectorAt<uint4>(static_cast<const __half *>(p) + i);
    __half2 h[4];
    memcpy(h, &raw, sizeof(raw));
    for (int k = 0; k < 4; ++k) {
      float2 f = __half22float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
    break;
  }
  case Storage::U8: {
    uint2 raw = *vectorAt<uint2>(static_cast<const uint8_t *>(p) + i);
    uint8_t b[8];
    memcpy(b, &raw, sizeof(raw));
    for (int k = 0; k < kVec; ++k)
      v[k] = static_cast<float>(b[k]);
    break;
  }
  default: {
    const float4 *q = vectorAt<float4>(static_cast<const float *>(p) + i);
    float4 a = q[0], b = q[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  }
  }
}

/// Stores elements [i, i + kVec) in float storage, rounding to nearest even.
__device__ __forceinline__ void storeVec(void *p, Storage type, int64_t i,
                                         const float (&v)[kVec]) {
  switch (type) {
  case Storage::BF16: {
    __nv_bfloat162 h[4];
    for (int k = 0; k < 4; ++k)
      h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
    uint4 raw;
    memcpy(&raw, h, sizeof(raw));
    *vectorAt<uint4>(static_cast<__nv_bfloat16 *>(p) + i) = raw;
    break;
  }
  case Storage::F16: {
    __half2 h[4];
    for (int k = 0; k < 4; ++k)
      h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
    uint4 raw;
    memcpy(&raw, h, sizeof(raw));
    *vectorAt<uint4>(static_cast<__half *>(p) + i) = raw;
    break;
  }
  default: {
    float4 *q = vectorAt<float4>(static_cast<float *>(p) + i);
    q[0] = make_float4(v[0], v[1], v[2], v[3]);
    q[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
  }
}

/// Blocks of `threads` for `count` elements in a grid-stride loop, capped
/// so that a huge tensor does not ask for more blocks than a grid holds.
inline unsigned gridFor(int64_t count, unsigned threads = 256) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  return static_cast<unsigned>(blocks > 65535 * 16 ? 65535 * 16 : blocks);
}

/// Launches `kernel` over `grid` with `bytes` of dynamic shared memory,
/// first allowing it that much (allowSharedMemory, its errors naming
/// `family`); returns launchStatus(name).
template <typename Kernel, typename... Args>
Status launchWithSharedMemory(Kernel *kernel, dim3 grid, dim3 block,
                              size_t bytes, cudaStream_t stream,
                              const char *family, const char *name,
                              const Args &...args) {
  if (Status st = allowSharedMemory(reinterpret_cast<const void *>(kernel),
                                    bytes, family);
      !st)
    return st;
  TPCRT_LAUNCH(kernel, grid, block, bytes, stream, args...);
  return launchStatus(name);
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_CUDACOMMON_CUH
