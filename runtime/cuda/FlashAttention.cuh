//===- FlashAttention.cuh - attention on tensor cores -----------*- C++ -*-===//
//
// The parameters every attention kernel takes, and FlashAttention-2 on
// mma.sync (m16n8k16, bf16 or f16 operands, fp32 accumulators) for q, k, v
// (and dO) of one 16-bit storage with head_dim == value_dim in {64, 128}:
//   forwardKernel          O, or for attention_grad the per-row statistics
//                          (max, 1 / sum, D = rowsum(dO * O)) instead of O;
//   backwardKeyValueKernel dK, dV: a block per key tile, looping over the
//                          query tiles of every query head of its kv group;
//   backwardQueryKernel    dQ: a block per query tile, looping over keys.
// No float atomics: every output element is summed by one thread in a fixed
// order. Scores live in registers; the s x s matrix is never stored.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .bf16/.f16): lane = 4 g + t;
//   A (16 x 16, row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..),
//                     a3 (g+8, 2t+8..)
//   B (16 x 8, col):  b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   C (16 x 8, f32):  c0 c1 (g, 2t, 2t+1), c2 c3 (g+8, 2t, 2t+1)
// so the C fragments of two adjacent n-tiles are, packed in pairs, the A
// fragment of the next product (P V, dS K, ...) without leaving registers.
// Tiles are [rows][D] in shared memory with each 16-byte chunk c of row r
// stored at chunk c ^ (r & 7): ldmatrix's eight row reads hit distinct banks.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_FLASHATTENTION_CUH
#define TPCRT_CUDA_FLASHATTENTION_CUH

// TPCRT_CUDA_EMULATION: the kernels compiled for the host, to be tested on
// the CPU (runtime/test/FlashEmulationTest.cpp, the emulated backend):
// runtime/test/CudaEmulation.h emulates the CUDA types and built-ins, and
// the PTX wrappers below call its emulation instead of their asm. Without
// it nothing changes.
#include "CudaCommon.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#ifdef TPCRT_CUDA_EMULATION
#include "CudaEmulation.h"
#endif
#include "tpcrt/AttentionRows.h"

#include <cstdint>
#include <type_traits>

namespace tpcrt::cuda::attn {

/// The sizes of one attention(_grad) call.
struct Shape {
  int64_t batch = 0, heads = 0, kvHeads = 1, seqQ = 0, seqK = 0;
  int headDim = 0, valueDim = 0;
  /// heads / kvHeads: query head h reads kv head h / group.
  int64_t group = 1;
  bool causal = false;
  /// seqK - seqQ: with causal, query i sees the keys j <= i + causalOffset
  /// (CpuKernels.cpp's `valid = i + (s_k - s_q) + 1`).
  int64_t causalOffset = 0;
  float scale = 1.0f;
  /// Where the heads lie (tpcrt/AttentionRows.h): q and dq; k and dk; v
  /// and dv; the result and dO.
  HeadRows qRows, kRows, vRows, oRows;
};

/// Dropout on the probabilities (CpuKernels.h's AttentionDropout, as
/// CpuDevice.cpp builds it).
struct Dropout : DropoutStream {
  bool enabled = false;
  uint64_t firstIndex = 0;
  int64_t batchOffset = 0, headOffset = 0, queryOffset = 0;
  int64_t globalHeads = 0, globalSeqQ = 0;

  /// The stream index of probability (b, h, i, 0) of this rank's block:
  /// firstIndex + ((b' * H + h') * Q + i') * s_k with b', h', i' and H, Q
  /// global (CpuKernels.cpp's dropoutRow, modulo 2^64 as there).
  __device__ __forceinline__ uint64_t rowIndex(int64_t b, int64_t h, int64_t i,
                                               int64_t seqK) const {
    int64_t row =
        ((batchOffset + b) * globalHeads + headOffset + h) * globalSeqQ +
        queryOffset + i;
    return firstIndex +
           static_cast<uint64_t>(row) * static_cast<uint64_t>(seqK);
  }
};

/// Per query row (b, h, i) at (b * heads + h) * s_q + i, for
/// attention_grad: the softmax's max (of the scores, in log2 units on the
/// tensor-core path), 1 / its sum, and D = rowsum(dO * O).
struct RowStats {
  float *max = nullptr;
  float *invSum = nullptr;
  float *dot = nullptr;

  /// Row r's statistics; zeros when !valid (a row past s_q).
  __device__ __forceinline__ void load(int64_t r, bool valid, float &m,
                                       float &inv, float &d) const {
    m = valid ? max[r] : 0.0f;
    inv = valid ? invSum[r] : 0.0f;
    d = valid ? dot[r] : 0.0f;
  }
};

struct ForwardParams {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  Storage qType = Storage::F32, kType = Storage::F32, vType = Storage::F32;
  /// The result; null: statistics mode (stats and dO below).
  void *o = nullptr;
  Storage oType = Storage::F32;
  /// With the result: each row's log-sum-exp (natural log, of the scaled
  /// scores before dropout), row i of head bh at lse[bh * s_q + i]; null:
  /// not written (attention_lse's second result).
  float *lse = nullptr;
  const void *dO = nullptr;
  Storage dOType = Storage::F32;
  RowStats stats;
  Shape shape;
  Dropout dropout;
};

struct BackwardParams {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *dO = nullptr;
  Storage qType = Storage::F32, kType = Storage::F32, vType = Storage::F32,
          dOType = Storage::F32;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  Storage dqType = Storage::F32, dkType = Storage::F32, dvType = Storage::F32;
  RowStats stats;
  Shape shape;
  Dropout dropout;
};

__host__ __device__ __forceinline__ int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__host__ __device__ __forceinline__ int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/// The grid of the attention kernels: x a tile of queries or keys (tiles of
/// one head run side by side and share its K, V in L2), (y, z) the head:
/// b * heads + h, or b * kvHeads + kvh for dK/dV (y at most 65535).
inline dim3 tileGrid(int64_t tiles, int64_t heads) {
  int64_t y = heads < 65535 ? heads : 65535;
  return dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(y),
              static_cast<unsigned>((heads + y - 1) / y));
}
__device__ __forceinline__ int64_t gridHead() {
  return static_cast<int64_t>(blockIdx.z) * gridDim.y + blockIdx.y;
}

/// Zeros an accumulator array of any rank (fully unrolled: it stays in
/// registers).
__device__ __forceinline__ void zero(float &a) { a = 0.0f; }
template <typename A, int N> __device__ __forceinline__ void zero(A (&a)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    zero(a[i]);
}

/// Two adjacent elements (index even) in any float storage; the pointer is
/// 16-byte aligned on the tensor-core path, so the pair is aligned.
__device__ __forceinline__ void storePair(void *p, Storage type, int64_t i,
                                          float lo, float hi) {
  switch (type) {
  case Storage::BF16:
    *vectorAt<__nv_bfloat162>(static_cast<__nv_bfloat16 *>(p) + i) =
        __floats2bfloat162_rn(lo, hi);
    break;
  case Storage::F16:
    *vectorAt<__half2>(static_cast<__half *>(p) + i) =
        __floats2half2_rn(lo, hi);
    break;
  default:
    *vectorAt<float2>(static_cast<float *>(p) + i) = make_float2(lo, hi);
  }
}

namespace flash {

/// One instantiation of the tensor-core kernels: 16-bit element type T and
/// head_dim == value_dim D.
template <typename T, int D> struct TensorCoreCase {
  using Type = T;
  static constexpr int kHeadDim = D;
};

/// Calls launch(TensorCoreCase<T, D>{}) for `type` (bf16, else f16) and
/// `headDim` (64, else 128): the cases every tensor-core launcher
/// (mma.sync and wgmma, forward and backward) is instantiated for, which
/// AttentionKernels.cu's useTensorCores() admits.
template <typename Launch>
Status forTensorCoreCase(Storage type, int64_t headDim, Launch &&launch) {
  const bool bf16 = type == Storage::BF16;
  if (headDim == 64)
    return bf16 ? launch(TensorCoreCase<__nv_bfloat16, 64>{})
                : launch(TensorCoreCase<__half, 64>{});
  return bf16 ? launch(TensorCoreCase<__nv_bfloat16, 128>{})
              : launch(TensorCoreCase<__half, 128>{});
}

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr int kThreads = 128;

/// 2^x on the SFU alone (ex2.approx.ftz.f32: subnormal inputs and results
/// are 0). exp2f without -ftz wraps the same instruction in a range check
/// and two multiplies that keep subnormal results: three more instructions
/// a score, in loops whose issue slots bound their time. The scores'
/// exponentials are rounded to 16 bits for the next product, and a term
/// under 2^-126 is nothing beside a row's largest, 1.
__device__ __forceinline__ float exp2Fast(float x) {
#ifdef TPCRT_CUDA_EMULATION
  return emu::exp2Ftz(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

__device__ __forceinline__ unsigned smemAddress(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Bytes (16 or 4) global -> shared, asynchronously; zeros when !valid.
/// 16 bytes go by .cg (past L1), 4 by .ca (.cg takes 16 bytes only).
template <int Bytes>
__device__ __forceinline__ void cpAsync(void *dst, const void *src,
                                        bool valid) {
  static_assert(Bytes == 16 || Bytes == 4, "cp.async's sizes used here");
#ifdef TPCRT_CUDA_EMULATION
  emu::cpAsync(dst, src, valid, Bytes);
#else
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                     smemAddress(dst)),
                 "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(
                     smemAddress(dst)),
                 "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
#endif
}
__device__ __forceinline__ void cpAsyncCommit() {
#ifdef TPCRT_CUDA_EMULATION
  emu::cpAsyncCommit();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most N of this thread's committed groups are in flight.
template <int N> __device__ __forceinline__ void cpAsyncWait() {
#ifdef TPCRT_CUDA_EMULATION
  emu::cpAsyncWait(N);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

__device__ __forceinline__ void ldmatrix(unsigned (&r)[4], unsigned p) {
#ifdef TPCRT_CUDA_EMULATION
  emu::ldmatrix(r, p, false);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, "
               "[%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p));
#endif
}
__device__ __forceinline__ void ldmatrixTrans(unsigned (&r)[4], unsigned p) {
#ifdef TPCRT_CUDA_EMULATION
  emu::ldmatrix(r, p, true);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, "
               "%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p));
#endif
}

/// c += a b on one m16n8k16 tile, and fp32 pairs packed as A fragments.
template <typename T> struct Mma;
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void
  run(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#ifdef TPCRT_CUDA_EMULATION
    emu::mma(c, a, b0, b1, /*bf16=*/true);
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, "
        "%3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
  }
};
template <> struct Mma<__half> {
  static __device__ __forceinline__ void
  run(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#ifdef TPCRT_CUDA_EMULATION
    emu::mma(c, a, b0, b1, /*bf16=*/false);
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, "
        "%3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
  }
};

/// Element offset of (row, col) in a swizzled [rows][D] tile; col a
/// multiple of 8 (a 16-byte chunk).
template <int D> __device__ __forceinline__ int swizzle(int row, int col) {
  return row * D + ((((col >> 3) ^ (row & 7))) << 3);
}

/// One thread's copies of a tile, asynchronous (the caller commits and
/// waits): chunk c (16 bytes, 8 elements) of rows row0 + r + k * Step,
/// k < Rows / Step, of a [rows, *] matrix with row stride ld, the k-th to
/// `to` + k * toStep bytes; zeros past `rows`. A tile whose rows all exist
/// (every tile but a sequence's last) is copied without bounds, one pointer
/// stepped: a tile's copies cost their address arithmetic, in loops bound
/// by their issue slots. Both loadTiles (mma.sync's, wgmma's) copy so.
template <int Rows, int Step, typename T>
__device__ __forceinline__ void
copyTileRows(unsigned char *to, int toStep, const T *src, int64_t ld,
             int64_t row0, int64_t rows, int r, int c) {
  if (row0 + Rows <= rows) {
    const T *from = src + (row0 + r) * ld + c * 8;
#pragma unroll
    for (int k = 0; k < Rows / Step; ++k)
      cpAsync<16>(to + k * toStep, from + k * Step * ld, true);
    return;
  }
  const int64_t left = rows - row0 - r; // rows from this thread's first
  const T *from = src + (left > 0 ? (row0 + r) * ld + c * 8 : 0);
#pragma unroll
  for (int k = 0; k < Rows / Step; ++k) {
    bool valid = k * Step < left;
    cpAsync<16>(to + k * toStep, valid ? from + k * Step * ld : src, valid);
  }
}

/// Rows [row0, row0 + Rows) of a [rows, D] matrix with row stride ld into a
/// tile, zeros past `rows`; asynchronous (the caller commits and waits). Thread
/// t copies chunk t % (D / 8) of rows t / (D / 8) + k * kStep: kStep is a
/// multiple of 8, so every copy has the same swizzle and the addresses
/// advance by a constant stride.
template <typename T, int D, int Rows>
__device__ __forceinline__ void loadTile(T *tile, const T *src, int64_t ld,
                                         int64_t row0, int64_t rows) {
  constexpr int kChunks = D / 8;
  constexpr int kStep = kThreads / kChunks;
  static_assert(kStep % 8 == 0 && Rows % kStep == 0, "tile shape");
  const int c = threadIdx.x % kChunks, r = threadIdx.x / kChunks;
  copyTileRows<Rows, kStep>(
      reinterpret_cast<unsigned char *>(tile + swizzle<D>(r, c * 8)),
      kStep * D * static_cast<int>(sizeof(T)), src, ld, row0, rows, r, c);
}

/// One lane's part of an ldmatrix.x4 on a swizzled [rows][D] tile: it
/// names row `row` (mod 16) and the 8-column half `half` of a 16 x 16
/// block. The block at columns 16 kk.. holds that half in chunk
/// (2 kk + half) ^ (row & 7) = 8 (kk / 4) + 2 ((kk % 4) ^ y) + hb with
/// y = (row & 7) / 2 and hb = half ^ (row & 1): the lane keeps the byte
/// offset of row and hb, and y (times 32 bytes) to flip by kk % 4.
struct Lane {
  unsigned offset;
  unsigned flip;
};
template <int D> __device__ __forceinline__ Lane laneFor(int row, int half) {
  Lane lane;
  lane.offset = 2 * row * D + ((half ^ (row & 1)) << 4);
  lane.flip = ((row & 7) >> 1) << 5;
  return lane;
}
/// The shared address this lane gives ldmatrix for the 16 x 16 block at
/// rows row0.. (a multiple of 8), columns 16 kk.. of the tile at `tile`.
template <int D>
__device__ __forceinline__ unsigned fragment(unsigned tile, int row0, int kk,
                                             const Lane &lane) {
  return tile + lane.offset + 2 * (row0 * D + (kk >> 2) * 64) +
         (((kk & 3) << 5) ^ lane.flip);
}

/// Lanes of A fragments from an [m][k] tile: matrices 0..3 are (rows 0-7,
/// k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15): a0..a3.
template <int D> __device__ __forceinline__ Lane laneA(int lane) {
  return laneFor<D>(lane & 15, lane >> 4);
}
/// Lanes of B fragments of two n-tiles from an [n][k] tile (k contiguous:
/// K for Q K^T): matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7),
/// (n 8-15, k 8-15): b0, b1 of n-tile 0, then of n-tile 1.
template <int D> __device__ __forceinline__ Lane laneB(int lane) {
  int m = lane >> 3;
  return laneFor<D>((lane & 7) + ((m >> 1) << 3), m & 1);
}
/// Lanes of B fragments of two n-tiles from a [k][n] tile (n contiguous:
/// V for P V), transposed by ldmatrix: matrices (k 0-7, n 0-7), (k 8-15,
/// n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b0, b1 of n-tile 0 (n
/// columns 16 kk..+7), then of n-tile 1.
template <int D> __device__ __forceinline__ Lane laneT(int lane) {
  int m = lane >> 3;
  return laneFor<D>((lane & 7) + ((m & 1) << 3), m >> 1);
}

/// The A fragment (16 x 16, k = 16 columns 16 kc..) of the fp32 C tiles
/// c[2 kc] and c[2 kc + 1].
template <typename T, int N>
__device__ __forceinline__ void packA(unsigned (&a)[4], const float (&c)[N][4],
                                      int kc) {
  a[0] = Mma<T>::pack(c[2 * kc][0], c[2 * kc][1]);
  a[1] = Mma<T>::pack(c[2 * kc][2], c[2 * kc][3]);
  a[2] = Mma<T>::pack(c[2 * kc + 1][0], c[2 * kc + 1][1]);
  a[3] = Mma<T>::pack(c[2 * kc + 1][2], c[2 * kc + 1][3]);
}

/// c0 += a b0 and c1 += a b1 with b the B fragments of two n-tiles (b0 its
/// first two registers, b1 its last two).
template <typename T>
__device__ __forceinline__ void mma2(float (&c0)[4], float (&c1)[4],
                                     const unsigned (&a)[4],
                                     const unsigned (&b)[4]) {
  Mma<T>::run(c0, a, b[0], b[1]);
  Mma<T>::run(c1, a, b[2], b[3]);
}

/// x = A Bx^T and y = A' By^T for the warp's 16 rows row0..: A, A' of the
/// [rows][D] tiles at ax, ay, Bx, By the first NT * 8 rows of the [n][D]
/// tiles at bx, by (k = D, contiguous).
template <typename T, int D, int NT>
__device__ __forceinline__ void twoProducts(float (&x)[NT][4],
                                            float (&y)[NT][4], unsigned ax,
                                            unsigned ay, int row0, unsigned bx,
                                            unsigned by, const Lane &la,
                                            const Lane &lb) {
  zero(x);
  zero(y);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    unsigned a[4], a2[4];
    ldmatrix(a, fragment<D>(ax, row0, kk, la));
    ldmatrix(a2, fragment<D>(ay, row0, kk, la));
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      unsigned bb[4];
      ldmatrix(bb, fragment<D>(bx, np * 16, kk, lb));
      mma2<T>(x[2 * np], x[2 * np + 1], a, bb);
      ldmatrix(bb, fragment<D>(by, np * 16, kk, lb));
      mma2<T>(y[2 * np], y[2 * np + 1], a2, bb);
    }
  }
}

/// c[2 dp], c[2 dp + 1] += a B, B the 16 x 16 block at rows 16 kc..,
/// columns 16 dp.. of the [k][D] tile at `tile` (transposed by ldmatrix).
template <typename T, int D, int N>
__device__ __forceinline__ void mmaTrans(float (&c)[N][4],
                                         const unsigned (&a)[4], unsigned tile,
                                         int kc, int dp, const Lane &lt) {
  unsigned bb[4];
  ldmatrixTrans(bb, fragment<D>(tile, kc * 16, dp, lt));
  mma2<T>(c[2 * dp], c[2 * dp + 1], a, bb);
}

/// How many of the keys [j0, j0 + N) query `row` sees: those below s_k
/// and, causal, those <= row + offset; in [0, N].
template <int N>
__device__ __forceinline__ int visibleKeys(const Shape &s, int64_t row,
                                           int64_t j0) {
  int64_t end = s.seqK;
  if (s.causal)
    end = min64(end, row + s.causalOffset + 1);
  return static_cast<int>(max64(0, min64(N, end - j0)));
}

//===- Forward ------------------------------------------------------------===//

/// What block (bh, y) of BM query rows (the forward, dQ) works on: head
/// bh = b * heads + h, its first row q0 (from the last tile down: causal
/// blocks with more keys start first), the rows of its head's q and of its
/// kv head's k and v, and its key tiles of BN keys. Not valid: the grid's
/// partial last z row. Params: ForwardParams or BackwardParams.
template <typename T> struct QueryBlock {
  bool valid = false;
  int64_t bh = 0, b = 0, h = 0, q0 = 0;
  const T *q = nullptr, *k = nullptr, *v = nullptr;
  int tiles = 0;
};
template <typename T, int BM, int BN, typename Params>
__device__ __forceinline__ QueryBlock<T> queryBlock(const Params &p) {
  const Shape &s = p.shape;
  QueryBlock<T> f;
  f.bh = gridHead();
  f.b = f.bh / s.heads;
  f.h = f.bh % s.heads;
  f.valid = f.b < s.batch;
  if (!f.valid)
    return f;
  const int64_t kvh = f.h / s.group;
  f.q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * BM;
  f.q = static_cast<const T *>(p.q) + s.qRows.head(f.b, f.h);
  f.k = static_cast<const T *>(p.k) + s.kRows.head(f.b, kvh);
  f.v = static_cast<const T *>(p.v) + s.vRows.head(f.b, kvh);
  // The block's last row sees keys < q0 + BM + offset.
  const int64_t keyEnd =
      s.causal ? min64(s.seqK, f.q0 + BM + s.causalOffset) : s.seqK;
  f.tiles = static_cast<int>((keyEnd + BN - 1) / BN);
  return f;
}

/// Which of a lane's columns of one query row in a key tile are kept (as
/// softmaxTile lays them out): bit 2 nt + e for the column at stream index
/// first + nt * 8 + e (e < 2). Where the lane's first index is in the
/// first half of a block of 16, even (the row's stream starts on a block, as
/// every row's does where firstIndex and s_k are multiples of 16: most
/// tensors), its four columns of two column tiles are one hash's draws
/// (fields 0, 1, 2, 3: bits 4 m .. 4 m + 3), the counter's input stepped by
/// 4 a pair of tiles, unrolled twice (rolled, the counter and the shifts by
/// a register cost about 4 more instructions a hash; unrolled whole, 2
/// fewer, but the kernels draw in both branches of their first-tile test
/// and their loops grow); else a hash per column pair where the row starts
/// even, rolled; else one per column (a row that starts odd: rare).
template <int NT>
__device__ __forceinline__ unsigned keptColumns(const Dropout &dropout,
                                                uint64_t first) {
  static_assert(2 * NT <= 32 && NT % 2 == 0, "one bit per column, tile pairs");
  unsigned kept = 0;
  if ((first & 9) == 0) {
    uint64_t input = dropout.counterInput(first);
#pragma unroll 2
    for (int m = 0; m < NT / 2; ++m, input += 4)
      kept |= dropout.keptQuadAt(input) << (4 * m);
    return kept;
  }
  if ((first & 1) == 0) {
#pragma unroll 1
    for (int nt = 0; nt < NT; ++nt)
      kept |= dropout.keptPairOf(first + nt * 8) << (2 * nt);
    return kept;
  }
#pragma unroll 1
  for (int nt = 0; nt < NT; ++nt) {
    const uint64_t index = first + nt * 8;
    kept |= (static_cast<unsigned>(dropout.keepsIndex(index)) |
             static_cast<unsigned>(dropout.keepsIndex(index + 1)) << 1)
            << (2 * nt);
  }
  return kept;
}

/// The keep bits of a lane's columns of query row `row` in key tile j0..
/// (keptColumns), softmaxTile's `kept`. They need no score: a kernel draws
/// them while the tile's products run (the hashing is most of what a tile
/// with dropout issues).
template <int NT>
__device__ __forceinline__ unsigned tileKeeps(const ForwardParams &p, int64_t b,
                                              int64_t h, int64_t row,
                                              int64_t j0, int tig) {
  return keptColumns<NT>(
      p.dropout, p.dropout.rowIndex(b, h, row, p.shape.seqK) + j0 + tig * 2);
}

/// One query row's part of key tile j0.. in the online softmax. The four
/// lanes of a quad hold the row (row g + 8 half of an m16 tile): lane tig
/// its columns nt * 8 + 2 tig + e (e < 2) in sc[nt][2 half + e], which
/// come in as q . k and leave as 2^(score - max), times keep with dropout
/// (keeps() gives the row's tileKeeps, called after the exponentials: the
/// wgmma kernel draws them before and returns them, the mma.sync one, short
/// of registers, draws them there; dropScale is finishRow's, once a row: 64
/// multiplies a tile fewer);
/// scores are scaled by sl2 (log2 units) and, where `mask`,
/// keys the row does not see are -inf. Updates the row's max and sum (of
/// the undropped 2^(score - max)) and returns the factor by which its
/// output so far shrinks.
template <int NT, bool Drop, typename Keeps>
__device__ __forceinline__ float
softmaxTile(const ForwardParams &p, float (&sc)[NT][4], int half, int64_t row,
            int64_t j0, bool mask, float sl2, int tig, Keeps &&keeps, float &mx,
            float &sum) {
  const Shape &s = p.shape;
  // Most tiles hide no key: the masking is a branch of its own, not a
  // select on every score.
  if (mask) {
    // The row sees the tile's columns < keys.
    const int keys = visibleKeys<NT * 8>(s, row, j0);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (nt * 8 + tig * 2 + e >= keys)
          sc[nt][2 * half + e] = -INFINITY;
  }
  // The max of the unscaled scores: scaling by sl2 > 0 keeps their order
  // and rounds monotonically, so max * sl2 is the max of the scaled ones.
  float tileMax = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
      tileMax = fmaxf(tileMax, sc[nt][2 * half + e]);
  // The four lanes of a quad hold one row.
  tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, 1));
  tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, 2));
  const float newMax = fmaxf(mx, tileMax * sl2);
  const float base = newMax == -INFINITY ? 0.0f : newMax;
  const float alpha = exp2Fast(mx - base);
  mx = newMax;
  float tileSum = 0.0f;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      // score * sl2 - max in one rounding (FlashAttention's form).
      float pv = exp2Fast(fmaf(sc[nt][2 * half + e], sl2, -base));
      tileSum += pv;
      sc[nt][2 * half + e] = pv;
    }
  sum = sum * alpha + tileSum;
  // (A template flag: the dropout's registers would make the kernel
  // without it spill.)
  if (Drop) {
    const unsigned kept = keeps();
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        sc[nt][2 * half + e] =
            (kept >> (2 * nt + e)) & 1 ? sc[nt][2 * half + e] : 0.0f;
  }
  return alpha;
}

/// The end of one query row (laid out as in softmaxTile, o[dt][2 half + e]
/// its output columns dt * 8 + 2 tig + e): O = o * dropScale / sum (o sums
/// the kept P times v; dropScale 1 without dropout), or in statistics mode
/// (p.o null) the row's max, 1 / sum and D = rowsum(dO * O). Every lane of
/// the quad takes part (shuffles), rows past s_q store nothing.
template <int DT>
__device__ __forceinline__ void
finishRow(const ForwardParams &p, int64_t b, int64_t h, int64_t bh, int64_t row,
          int half, int tig, float mx, float sum, const float (&o)[DT][4]) {
  const Shape &s = p.shape;
  float l = sum;
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  // Every row sees key 0 (causal or not): l >= 1.
  const float inv = 1.0f / l;
  const float oScale = p.dropout.enabled ? inv * p.dropout.scale : inv;
  // The result and dO share the output's layout.
  const int64_t base = s.oRows.at(b, h, row);
  if (p.o) {
    if (row < s.seqQ)
#pragma unroll
      for (int dt = 0; dt < DT; ++dt)
        storePair(p.o, p.oType, base + dt * 8 + tig * 2,
                  o[dt][2 * half] * oScale, o[dt][2 * half + 1] * oScale);
    // mx and l are of log2-scaled scores: lse = (mx + log2 l) ln 2.
    if (p.lse && row < s.seqQ && tig == 0)
      p.lse[bh * s.seqQ + row] = (mx + log2f(l)) * kLn2;
    return;
  }
  float dot = 0.0f;
  if (row < s.seqQ)
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      int64_t i = base + dt * 8 + tig * 2;
      dot += o[dt][2 * half] * oScale * loadFloat(p.dO, p.dOType, i);
      dot += o[dt][2 * half + 1] * oScale * loadFloat(p.dO, p.dOType, i + 1);
    }
  dot += __shfl_xor_sync(0xffffffffu, dot, 1);
  dot += __shfl_xor_sync(0xffffffffu, dot, 2);
  if (row < s.seqQ && tig == 0) {
    int64_t r = bh * s.seqQ + row;
    p.stats.max[r] = mx;
    p.stats.invSum[r] = inv;
    p.stats.dot[r] = dot;
  }
}

/// 4 warps of kRowTiles x 16 query rows; key tiles of kBlockN keys, double
/// buffered (cp.async) while the previous one is computed.
template <int D> struct ForwardConfig {
  static constexpr int kRowTiles = 2;
  static constexpr int kBlockM = 4 * 16 * kRowTiles;
  static constexpr int kBlockN = 64;
  static constexpr int kSmemBytes = (kBlockM + 4 * kBlockN) * D * 2;
};

/// Block (bh, y): query rows [q0, q0 + kBlockM) of head bh = b * heads + h,
/// q0 from the last tile down (causal blocks with more keys start first);
/// Drop: p.dropout.enabled.
/// Invariant after key tile t, per row: mx = max of its (log2-scaled)
/// scores so far, sum = sum of 2^(score - mx) (before dropout), and o =
/// sum of 2^(score - mx) * keep * v_j; the result is o * dropScale / sum.
template <typename T, int D, bool Drop>
__global__ void __launch_bounds__(kThreads, 1)
    forwardKernel(const ForwardParams p) {
  using Cfg = ForwardConfig<D>;
  constexpr int MT = Cfg::kRowTiles, BM = Cfg::kBlockM, BN = Cfg::kBlockN;
  constexpr int NT = BN / 8, DT = D / 8;
  TPCRT_DYNAMIC_SHARED(unsigned char, smem, 128);
  T *qs = reinterpret_cast<T *>(smem);
  T *ks = qs + BM * D; // 2 stages of [BN][D]
  T *vs = ks + 2 * BN * D;

  const Shape &s = p.shape;
  const QueryBlock<T> blk = queryBlock<T, BM, BN>(p);
  if (!blk.valid)
    return; // the grid's last z row is partial
  const int64_t bh = blk.bh, b = blk.b, h = blk.h, q0 = blk.q0;
  const T *qg = blk.q, *kg = blk.k, *vg = blk.v;
  const int tiles = blk.tiles;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;
  const Lane la = laneA<D>(lane), lb = laneB<D>(lane), lt = laneT<D>(lane);
  const unsigned qsAddr = smemAddress(qs), ksAddr = smemAddress(ks),
                 vsAddr = smemAddress(vs);
  const int64_t warpRow0 = q0 + warp * 16 * MT;
  const float sl2 = s.scale * kLog2e;

  loadTile<T, D, BM>(qs, qg, s.qRows.ld, q0, s.seqQ);
  loadTile<T, D, BN>(ks, kg, s.kRows.ld, 0, s.seqK);
  loadTile<T, D, BN>(vs, vg, s.vRows.ld, 0, s.seqK);
  cpAsyncCommit();

  float o[MT][DT][4];
  float mx[MT][2], sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[mt][dt][e] = 0.0f;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      mx[mt][half] = -INFINITY;
      sum[mt][half] = 0.0f;
    }
  }

  for (int t = 0; t < tiles; ++t) {
    const int stage = t & 1;
    // Stage ^ 1 was last read in tile t - 1, which ended with a barrier.
    if (t + 1 < tiles) {
      loadTile<T, D, BN>(ks + (stage ^ 1) * BN * D, kg, s.kRows.ld,
                         static_cast<int64_t>(t + 1) * BN, s.seqK);
      loadTile<T, D, BN>(vs + (stage ^ 1) * BN * D, vg, s.vRows.ld,
                         static_cast<int64_t>(t + 1) * BN, s.seqK);
    }
    cpAsyncCommit();
    cpAsyncWait<1>(); // tile t (and Q) landed
    __syncthreads();
    const unsigned ktAddr = ksAddr + stage * BN * D * 2,
                   vtAddr = vsAddr + stage * BN * D * 2;
    const int64_t j0 = static_cast<int64_t>(t) * BN;
    // S = Q K^T, in every warp, even one whose rows see no key of the tile
    // (causal): the block waits for its slowest warp at each tile anyway,
    // and skipping costs registers.
    float sc[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          sc[mt][nt][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        ldmatrix(a[mt], fragment<D>(qsAddr, warp * 16 * MT + mt * 16, kk, la));
#pragma unroll
      for (int np = 0; np < BN / 16; ++np) {
        unsigned bb[4];
        ldmatrix(bb, fragment<D>(ktAddr, np * 16, kk, lb));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          Mma<T>::run(sc[mt][2 * np], a[mt], bb[0], bb[1]);
          Mma<T>::run(sc[mt][2 * np + 1], a[mt], bb[2], bb[3]);
        }
      }
    }
    // Masks (keys past s_k; causal), online softmax, dropout.
    const bool mask = j0 + BN > s.seqK ||
                      (s.causal && j0 + BN - 1 > warpRow0 + s.causalOffset);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int64_t row = warpRow0 + mt * 16 + g + 8 * half;
        const float alpha = softmaxTile<NT, Drop>(
            p, sc[mt], half, row, j0, mask, sl2, tig,
            [&] { return tileKeeps<NT>(p, b, h, row, j0, tig); }, mx[mt][half],
            sum[mt][half]);
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          o[mt][dt][2 * half] *= alpha;
          o[mt][dt][2 * half + 1] *= alpha;
        }
      }
    }
    // O += P V.
#pragma unroll
    for (int kc = 0; kc < BN / 16; ++kc) {
      unsigned a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        packA<T>(a[mt], sc[mt], kc);
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        unsigned bb[4];
        ldmatrixTrans(bb, fragment<D>(vtAddr, kc * 16, dp, lt));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          Mma<T>::run(o[mt][2 * dp], a[mt], bb[0], bb[1]);
          Mma<T>::run(o[mt][2 * dp + 1], a[mt], bb[2], bb[3]);
        }
      }
    }
    __syncthreads(); // everyone is done with this stage
  }
  cpAsyncWait<0>();

#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      finishRow<DT>(p, b, h, bh, warpRow0 + mt * 16 + g + 8 * half, half, tig,
                    mx[mt][half], sum[mt][half], o[mt]);
}

//===- Backward -----------------------------------------------------------===//

/// dK/dV: kKeys keys per block (16 per warp), kQueries queries per step;
/// dQ: kRows queries per block (16 per warp), kKeyStep keys per step.
template <int D> struct BackwardConfig {
  static constexpr int kKeys = 64;
  static constexpr int kQueries = D > 64 ? 32 : 64;
  static constexpr int kKeyValueSmemBytes =
      (2 * kKeys + 4 * kQueries) * D * 2 + 2 * 3 * kQueries * 4;
  static constexpr int kRows = 64;
  static constexpr int kKeyStep = 64;
  static constexpr int kQuerySmemBytes = (2 * kRows + 4 * kKeyStep) * D * 2;
};

/// The steps of a dK/dV block of keys k0..: every query head of kv head
/// kvh's group in turn, each over its tiles of BQ queries from the first
/// that sees key k0 (causal: queries i >= k0 - offset) to s_q.
template <int BQ> struct KeySteps {
  int64_t firstTile = 0, perHead = 0, count = 0, firstHead = 0;

  __device__ __forceinline__ KeySteps(const Shape &s, int64_t kvh, int64_t k0) {
    const int64_t firstQuery = s.causal ? max64(0, k0 - s.causalOffset) : 0;
    firstTile = firstQuery / BQ;
    perHead = max64(0, (s.seqQ + BQ - 1) / BQ - firstTile);
    count = perHead * s.group;
    firstHead = kvh * s.group;
  }
  /// A step's query head and first query, advanced a step at a time: the
  /// loops divide by nothing (a 64-bit division is a call, each step).
  struct Cursor {
    int64_t head = 0, tile = 0, firstTile = 0, endTile = 0;
    __device__ __forceinline__ int64_t query0() const { return tile * BQ; }
    __device__ __forceinline__ void next() {
      if (++tile == endTile) {
        tile = firstTile;
        ++head;
      }
    }
  };
  /// Step 0's.
  __device__ __forceinline__ Cursor first() const {
    Cursor c;
    c.head = firstHead;
    c.tile = c.firstTile = firstTile;
    c.endTile = firstTile + perHead;
    return c;
  }
};

/// A dK/dV step's per-query statistics (max, 1 / sum, D of queries
/// i0 .. i0 + BQ of head bhq, zeros past s_q) into st[0, 3 BQ) by cp.async
/// (the caller commits them with the step's tiles): thread t copies
/// elements t, t + Threads, .. below 3 BQ, so the copies are an instruction
/// or two in each of 3 BQ / 32 warps, and no thread waits for a load
/// before its step's products.
template <int BQ, int Threads>
__device__ __forceinline__ void
loadStepStats(const BackwardParams &p, float *st, int64_t bhq, int64_t i0) {
  const Shape &s = p.shape;
#pragma unroll
  for (int k = 0; k < (3 * BQ + Threads - 1) / Threads; ++k) {
    const int t = static_cast<int>(threadIdx.x) + k * Threads;
    if (t >= 3 * BQ)
      break;
    const int i = t % BQ;
    const float *from = t < BQ       ? p.stats.max
                        : t < 2 * BQ ? p.stats.invSum
                                     : p.stats.dot;
    const bool valid = i0 + i < s.seqQ;
    cpAsync<4>(st + t, valid ? from + bhq * s.seqQ + i0 + i : from, valid);
  }
}

/// Which of a lane's elements of the transposed tiles keyGradients takes
/// are kept: bit 4 nt + e for key key0 + 8 (e >> 1) and query i0 + nt * 8 +
/// 2 tig + (e & 1) of query head hq. Lanes g and g ^ 1 (lane ^ 4) hold keys
/// key0 and key0 ^ 1, a pair of the stream where every row's stream starts
/// even (firstIndex and s_k even), for the same queries (the warp's first
/// key is a multiple of 16): each lane hashes the draws of one of its two
/// queries and hands the other lane its half, so a draw is hashed once.
/// Where every row starts on a block of 16 (firstIndex and s_k multiples of
/// 16), the two lanes' four keys of a query are one hash's four draws
/// (fields [key half][key in the pair]), so a lane hashes once a query
/// tile; else a hash a pair, or, in a row that starts odd, one an element.
/// Every lane of the warp calls this (shuffles).
template <int QT>
__device__ __forceinline__ unsigned
keptKeys(const Dropout &dropout, int64_t b, int64_t hq, int64_t i0,
         int64_t key0, int tig, int64_t seqK) {
  static_assert(4 * QT <= 32, "one bit per element");
  // Element (nt, e)'s stream index, from the lane's first query row's.
  const uint64_t first = dropout.rowIndex(b, hq, i0 + tig * 2, seqK);
  auto index = [&](int nt, int e) {
    return first +
           static_cast<uint64_t>(nt * 8 + (e & 1)) *
               static_cast<uint64_t>(seqK) +
           static_cast<uint64_t>(key0 + 8 * (e >> 1));
  };
  const uint64_t rowStarts = dropout.firstIndex | static_cast<uint64_t>(seqK);
  if ((rowStarts & 1) != 0) {
    unsigned kept = 0;
#pragma unroll 1
    for (int k = 0; k < 4 * QT; ++k)
      kept |= static_cast<unsigned>(dropout.keepsIndex(index(k >> 2, k & 3)))
              << k;
    return kept;
  }
  // This lane's key is its pair's second (odd) or first; it draws for its
  // query 2 tig + odd, bits [key half][key in the pair], and swaps.
  const int odd = static_cast<int>(key0 & 1);
  auto share = [&](unsigned mine, int nt, unsigned &kept) {
    const unsigned other = __shfl_xor_sync(0xffffffffu, mine, 4);
    for (int e = 0; e < 4; ++e) {
      const unsigned from = (e & 1) == odd ? mine : other;
      kept |= ((from >> (2 * (e >> 1) + odd)) & 1u) << (4 * nt + e);
    }
  };
  unsigned kept = 0;
  if ((rowStarts & 15) == 0) {
    // The counter's input steps by 2 s_k a query tile (8 rows of s_k / 16
    // blocks of 4 counters); unrolled twice, as keptColumns' quads.
    uint64_t input = dropout.counterInput(index(0, odd));
    const uint64_t tileStep = 2 * static_cast<uint64_t>(seqK);
#pragma unroll 2
    for (int nt = 0; nt < QT; ++nt, input += tileStep)
      share(dropout.keptQuadAt(input), nt, kept);
    return kept;
  }
#pragma unroll 1
  for (int nt = 0; nt < QT; ++nt) {
    const uint64_t n = index(nt, odd);
    share(dropout.keptPairOf(n) | dropout.keptPairOf(n + 8) << 2, nt, kept);
  }
  return kept;
}

/// keyGradients' keep bits for a step (keptKeys; 0 without dropout). They
/// need no score: the kernels draw them while the step's products run.
/// Every lane of the warp calls this (shuffles).
template <int QT>
__device__ __forceinline__ unsigned stepKeeps(const BackwardParams &p,
                                              int64_t b, int64_t hq, int64_t i0,
                                              int64_t key0, int tig) {
  return p.dropout.enabled
             ? keptKeys<QT>(p.dropout, b, hq, i0, key0, tig, p.shape.seqK)
             : 0u;
}

/// sT <- Pd^T and dpT <- dS^T for the two keys key0, key0 + 8 of a quad
/// (rows of the transposed tiles: sT[nt][2 half + e] holds key key0 + 8
/// half and query i0 + nt * 8 + 2 tig + e of query head hq) from sT = k .
/// q and dpT = v . dO, the step's statistics st (loadStepStats) and the
/// dropout stream: Pd = P * keep (dropScale is storeKeyValueGradients',
/// once a key: dv is linear in Pd), dS = P * (dP * keep * dropScale - D);
/// zeros where the query does not see the key. `kept`: stepKeeps.
template <int QT, int BQ>
__device__ __forceinline__ void
keyGradients(const BackwardParams &p, float (&sT)[QT][4], float (&dpT)[QT][4],
             const float *st, unsigned kept, int64_t i0, int64_t key0, int tig,
             float sl2) {
  const Shape &s = p.shape;
  // Checked: some query of the step does not see one of the two keys (past
  // s_q or s_k, or the causal mask); most steps have none, and skip the
  // comparisons (64-bit, three a score) in a loop of their own.
  auto step = [&](auto checked) {
#pragma unroll
    for (int nt = 0; nt < QT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qi = nt * 8 + tig * 2 + (e & 1);
        bool valid = true;
        if constexpr (decltype(checked)::value) {
          const int64_t i = i0 + qi;
          const int64_t j = key0 + 8 * (e >> 1);
          valid = i < s.seqQ && j < s.seqK &&
                  (!s.causal || j <= i + s.causalOffset);
        }
        float pv = valid ? exp2Fast(fmaf(sT[nt][e], sl2, -st[qi])) * st[BQ + qi]
                         : 0.0f;
        float dpv = dpT[nt][e];
        float pd = pv;
        if (p.dropout.enabled) {
          const bool keep = (kept >> (4 * nt + e)) & 1u;
          pd = keep ? pv : 0.0f;
          dpv = keep ? dpv * p.dropout.scale : 0.0f;
        }
        sT[nt][e] = pd;
        dpT[nt][e] = valid ? pv * (dpv - st[2 * BQ + qi]) : 0.0f;
      }
    }
  };
  const bool whole = i0 + QT * 8 <= s.seqQ && key0 + 8 < s.seqK &&
                     (!s.causal || key0 + 8 <= i0 + s.causalOffset);
  if (whole)
    step(std::false_type{});
  else
    step(std::true_type{});
}

/// dK = scale * dk and dV = dropScale * dv (dv sums P * keep * dO:
/// keyGradients) for a quad's keys key0 and key0 + 8 of kv head kvh
/// (dk[dt][2 half + e]: column dt * 8 + 2 tig + e of key key0 + 8 half);
/// nothing past s_k.
template <int DT>
__device__ __forceinline__ void
storeKeyValueGradients(const BackwardParams &p, int64_t b, int64_t kvh,
                       int64_t key0, const float (&dk)[DT][4],
                       const float (&dv)[DT][4], int tig) {
  const Shape &s = p.shape;
  const float vScale = p.dropout.enabled ? p.dropout.scale : 1.0f;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int64_t j = key0 + 8 * half;
    if (j >= s.seqK)
      continue;
    const int64_t kBase = s.kRows.at(b, kvh, j), vBase = s.vRows.at(b, kvh, j);
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      storePair(p.dk, p.dkType, kBase + dt * 8 + tig * 2,
                dk[dt][2 * half] * s.scale, dk[dt][2 * half + 1] * s.scale);
      storePair(p.dv, p.dvType, vBase + dt * 8 + tig * 2,
                dv[dt][2 * half] * vScale, dv[dt][2 * half + 1] * vScale);
    }
  }
}

/// Block (b * kvHeads + kvh, y): keys [k0, k0 + kKeys) of kv head kvh. Its
/// steps run over every query head of the group, then every query tile
/// that sees one of its keys, in that fixed order. Invariant after a step,
/// per key j: dv = sum over the steps' (h, i) of Pd_ij dO_i and dk = sum of
/// dS_ij q_i, where P = 2^(score - max_i) / sum_i (the statistics),
/// Pd = P * keep (dV = dropScale * dv), dP = (dO_i . v_j) * keep * dropScale
/// and dS = P * (dP - D_i) (CpuGradKernels.cpp's formulas); dK = scale * dk.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    backwardKeyValueKernel(const BackwardParams p) {
  using Cfg = BackwardConfig<D>;
  constexpr int BK = Cfg::kKeys, BQ = Cfg::kQueries;
  constexpr int QT = BQ / 8, DT = D / 8;
  TPCRT_DYNAMIC_SHARED(unsigned char, smem, 128);
  T *ks = reinterpret_cast<T *>(smem);
  T *vs = ks + BK * D;
  T *qs = vs + BK * D;      // 2 stages of [BQ][D]
  T *dos = qs + 2 * BQ * D; // 2 stages of [BQ][D]
  float *rowStats = reinterpret_cast<float *>(dos + 2 * BQ * D); // 2 x 3 x BQ

  const Shape &s = p.shape;
  const int64_t bkv = gridHead(), b = bkv / s.kvHeads, kvh = bkv % s.kvHeads;
  if (b >= s.batch)
    return;
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * BK;
  const T *qg = static_cast<const T *>(p.q);
  const T *dOg = static_cast<const T *>(p.dO);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;
  const Lane la = laneA<D>(lane), lb = laneB<D>(lane), lt = laneT<D>(lane);
  const unsigned ksAddr = smemAddress(ks), vsAddr = smemAddress(vs);
  const float sl2 = s.scale * kLog2e;

  loadTile<T, D, BK>(ks, static_cast<const T *>(p.k) + s.kRows.head(b, kvh),
                     s.kRows.ld, k0, s.seqK);
  loadTile<T, D, BK>(vs, static_cast<const T *>(p.v) + s.vRows.head(b, kvh),
                     s.vRows.ld, k0, s.seqK);

  const KeySteps<BQ> stepPlan(s, kvh, k0);
  const int64_t steps = stepPlan.count;

  // Loads the Q, dO and statistics of the step at `c` into `stage`.
  auto issue = [&](const typename KeySteps<BQ>::Cursor &c, int stage) {
    const int64_t hq = c.head, i0 = c.query0();
    int64_t bhq = b * s.heads + hq;
    loadTile<T, D, BQ>(qs + stage * BQ * D, qg + s.qRows.head(b, hq),
                       s.qRows.ld, i0, s.seqQ);
    loadTile<T, D, BQ>(dos + stage * BQ * D, dOg + s.oRows.head(b, hq),
                       s.oRows.ld, i0, s.seqQ);
    loadStepStats<BQ, kThreads>(p, rowStats + stage * 3 * BQ, bhq, i0);
  };

  typename KeySteps<BQ>::Cursor cursor = stepPlan.first();
  if (steps > 0)
    issue(cursor, 0);
  cpAsyncCommit();

  float dk[DT][4], dv[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      dk[dt][e] = 0.0f;
      dv[dt][e] = 0.0f;
    }

  const int64_t warpKey0 = k0 + warp * 16;
  for (int64_t t = 0; t < steps; ++t) {
    const int stage = static_cast<int>(t & 1);
    const int64_t hq = cursor.head, i0 = cursor.query0();
    cursor.next(); // step t + 1
    // Stage ^ 1 was last read in step t - 1, which ended with a barrier.
    if (t + 1 < steps)
      issue(cursor, stage ^ 1);
    cpAsyncCommit();
    cpAsyncWait<1>();
    __syncthreads();
    const unsigned qtAddr = smemAddress(qs) + stage * BQ * D * 2,
                   dotAddr = smemAddress(dos) + stage * BQ * D * 2;
    const float *st = rowStats + stage * 3 * BQ;
    // Some query of the step sees the warp's first key.
    bool active = !s.causal || warpKey0 <= i0 + BQ - 1 + s.causalOffset;
    if (active) {
      // S^T = K Q^T and dP^T = V dO^T: rows keys, columns queries.
      float sT[QT][4], dpT[QT][4];
      twoProducts<T, D>(sT, dpT, ksAddr, vsAddr, warp * 16, qtAddr, dotAddr,
                        la, lb);
      keyGradients<QT, BQ>(p, sT, dpT, st,
                           stepKeeps<QT>(p, b, hq, i0, warpKey0 + g, tig), i0,
                           warpKey0 + g, tig, sl2);
      // dV += Pd^T dO, dK += dS^T Q (k = queries).
#pragma unroll
      for (int kc = 0; kc < BQ / 16; ++kc) {
        unsigned ap[4], ad[4];
        packA<T>(ap, sT, kc);
        packA<T>(ad, dpT, kc);
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          mmaTrans<T, D>(dv, ap, dotAddr, kc, dp, lt);
          mmaTrans<T, D>(dk, ad, qtAddr, kc, dp, lt);
        }
      }
    }
    __syncthreads();
  }
  cpAsyncWait<0>();

  // Keys no query sees (or no queries at all) get zeros.
  storeKeyValueGradients<DT>(p, b, kvh, warpKey0 + g, dk, dv, tig);
}

/// What the backward knows of one query row: its index, its statistics
/// (the forward's max in log2 units, 1 / sum, D) and where its dropout
/// stream starts; zeros past s_q.
struct QueryRow {
  int64_t row = 0;
  float max = 0.0f, inv = 0.0f, dot = 0.0f;
  uint64_t drop = 0;
};
__device__ __forceinline__ QueryRow queryRow(const BackwardParams &p,
                                             int64_t bh, int64_t b, int64_t h,
                                             int64_t row) {
  const Shape &s = p.shape;
  QueryRow q;
  q.row = row;
  p.stats.load(bh * s.seqQ + row, row < s.seqQ, q.max, q.inv, q.dot);
  q.drop = p.dropout.enabled ? p.dropout.rowIndex(b, h, row, s.seqK) : 0;
  return q;
}

/// scoreGradients' keep bits for key tile j0.. of a quad's two rows
/// (keptColumns; zeros without dropout). They need no score: the kernels
/// draw them while the tile's products run.
template <int NT>
__device__ __forceinline__ void rowKeeps(const BackwardParams &p,
                                         const QueryRow (&rows)[2], int64_t j0,
                                         int tig, unsigned (&kept)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half)
    kept[half] =
        p.dropout.enabled
            ? keptColumns<NT>(p.dropout, rows[half].drop + j0 + tig * 2)
            : 0u;
}

/// sc <- dS = P * (dPd - D) for key tile j0.. of a quad's two rows (as
/// softmaxTile lays them out: rows[half] in sc[nt][2 half + e], column
/// j0 + nt * 8 + 2 tig + e): sc comes in as q . k, dp as dO . v; P =
/// 2^(score - max) / sum from the statistics, dPd = dp * keep * dropScale;
/// zero where the row does not see the key. `kept`: rowKeeps.
template <int NT>
__device__ __forceinline__ void
scoreGradients(const BackwardParams &p, float (&sc)[NT][4],
               const float (&dp)[NT][4], const QueryRow (&rows)[2],
               const unsigned (&kept)[2], int64_t j0, int tig, float sl2) {
  const Shape &s = p.shape;
  // Checked: one of the two rows does not see some key of the tile (past
  // s_q or s_k, or the causal mask); most tiles have none, and skip the
  // comparisons (64-bit, three a score) in a loop of their own.
  auto tile = [&](auto checked) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const QueryRow &r = rows[e >> 1];
        bool valid = true;
        if constexpr (decltype(checked)::value) {
          const int64_t j = j0 + nt * 8 + tig * 2 + (e & 1);
          valid = r.row < s.seqQ && j < s.seqK &&
                  (!s.causal || j <= r.row + s.causalOffset);
        }
        float pv =
            valid ? exp2Fast(fmaf(sc[nt][e], sl2, -r.max)) * r.inv : 0.0f;
        float dpv = dp[nt][e];
        if (p.dropout.enabled)
          dpv = (kept[e >> 1] >> (2 * nt + (e & 1))) & 1u
                    ? dpv * p.dropout.scale
                    : 0.0f;
        sc[nt][e] = valid ? pv * (dpv - r.dot) : 0.0f;
      }
    }
  };
  const int64_t firstRow = min64(rows[0].row, rows[1].row),
                lastRow = max64(rows[0].row, rows[1].row);
  const int64_t lastKey = j0 + NT * 8 - 1;
  const bool whole = lastRow < s.seqQ && lastKey < s.seqK &&
                     (!s.causal || lastKey <= firstRow + s.causalOffset);
  if (whole)
    tile(std::false_type{});
  else
    tile(std::true_type{});
}

/// dQ = scale * dq for a quad's two rows (dq[dt][2 half + e]: column
/// dt * 8 + 2 tig + e of rows[half]); nothing past s_q.
template <int DT>
__device__ __forceinline__ void
storeQueryGradients(const BackwardParams &p, int64_t b, int64_t h,
                    const QueryRow (&rows)[2], const float (&dq)[DT][4],
                    int tig) {
  const Shape &s = p.shape;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    if (rows[half].row >= s.seqQ)
      continue;
    const int64_t base = s.qRows.at(b, h, rows[half].row);
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
      storePair(p.dq, p.dqType, base + dt * 8 + tig * 2,
                dq[dt][2 * half] * s.scale, dq[dt][2 * half + 1] * s.scale);
  }
}

/// Block (bh, y): query rows [q0, q0 + kRows) of head bh, from the last
/// tile down. Invariant after key tile t, per row i: dq = sum over the
/// tiles' keys j of dS_ij k_j (dS as in backwardKeyValueKernel); dQ =
/// scale * dq.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    backwardQueryKernel(const BackwardParams p) {
  using Cfg = BackwardConfig<D>;
  constexpr int BM = Cfg::kRows, BN = Cfg::kKeyStep;
  constexpr int NT = BN / 8, DT = D / 8;
  TPCRT_DYNAMIC_SHARED(unsigned char, smem, 128);
  T *qs = reinterpret_cast<T *>(smem);
  T *dos = qs + BM * D;
  T *ks = dos + BM * D; // 2 stages of [BN][D]
  T *vs = ks + 2 * BN * D;

  const Shape &s = p.shape;
  const QueryBlock<T> blk = queryBlock<T, BM, BN>(p);
  if (!blk.valid)
    return; // the grid's last z row is partial
  const int64_t bh = blk.bh, b = blk.b, h = blk.h, q0 = blk.q0;
  const T *kg = blk.k, *vg = blk.v;
  const int tiles = blk.tiles;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;
  const Lane la = laneA<D>(lane), lb = laneB<D>(lane), lt = laneT<D>(lane);
  const unsigned qsAddr = smemAddress(qs), dosAddr = smemAddress(dos),
                 ksAddr = smemAddress(ks), vsAddr = smemAddress(vs);
  const int64_t warpRow0 = q0 + warp * 16;
  const float sl2 = s.scale * kLog2e;

  loadTile<T, D, BM>(qs, blk.q, s.qRows.ld, q0, s.seqQ);
  loadTile<T, D, BM>(dos, static_cast<const T *>(p.dO) + s.oRows.head(b, h),
                     s.oRows.ld, q0, s.seqQ);
  loadTile<T, D, BN>(ks, kg, s.kRows.ld, 0, s.seqK);
  loadTile<T, D, BN>(vs, vg, s.vRows.ld, 0, s.seqK);
  cpAsyncCommit();

  QueryRow rows[2];
#pragma unroll
  for (int half = 0; half < 2; ++half)
    rows[half] = queryRow(p, bh, b, h, warpRow0 + g + 8 * half);

  float dq[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dq[dt][e] = 0.0f;

  for (int t = 0; t < tiles; ++t) {
    const int stage = t & 1;
    if (t + 1 < tiles) {
      loadTile<T, D, BN>(ks + (stage ^ 1) * BN * D, kg, s.kRows.ld,
                         static_cast<int64_t>(t + 1) * BN, s.seqK);
      loadTile<T, D, BN>(vs + (stage ^ 1) * BN * D, vg, s.vRows.ld,
                         static_cast<int64_t>(t + 1) * BN, s.seqK);
    }
    cpAsyncCommit();
    cpAsyncWait<1>();
    __syncthreads();
    const unsigned ktAddr = ksAddr + stage * BN * D * 2,
                   vtAddr = vsAddr + stage * BN * D * 2;
    const int64_t j0 = static_cast<int64_t>(t) * BN;
    bool active = !s.causal || j0 <= warpRow0 + 15 + s.causalOffset;
    if (active) {
      // S = Q K^T, dP = dO V^T.
      float sc[NT][4], dp[NT][4];
      twoProducts<T, D>(sc, dp, qsAddr, dosAddr, warp * 16, ktAddr, vtAddr, la,
                        lb);
      unsigned kept[2];
      rowKeeps<NT>(p, rows, j0, tig, kept);
      scoreGradients<NT>(p, sc, dp, rows, kept, j0, tig, sl2);
      // dq += dS K (k = keys).
#pragma unroll
      for (int kc = 0; kc < BN / 16; ++kc) {
        unsigned a[4];
        packA<T>(a, sc, kc);
#pragma unroll
        for (int dt2 = 0; dt2 < D / 16; ++dt2)
          mmaTrans<T, D>(dq, a, ktAddr, kc, dt2, lt);
      }
    }
    __syncthreads();
  }
  cpAsyncWait<0>();

  storeQueryGradients<DT>(p, b, h, rows, dq, tig);
}

} // namespace flash
} // namespace tpcrt::cuda::attn

#endif // TPCRT_CUDA_FLASHATTENTION_CUH
