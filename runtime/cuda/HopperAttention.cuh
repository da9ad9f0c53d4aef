//===- HopperAttention.cuh - attention on wgmma (sm_90a) --------*- C++ -*-===//
//
// Attention on Hopper's wgmma (sm_90a only: `wgmma.mma_async`, the
// asynchronous warpgroup MMA that reads its B operand, and A unless it is
// in registers, straight from shared memory through descriptors):
//   forwardKernel        attention's forward, or attention_grad's
//                        statistics pass: FlashAttention.cuh's online
//                        softmax (softmaxTile, finishRow: same masks,
//                        dropout stream and statistics) with
//     S = Q K^T   m64n128k16 per 16 of head_dim, A (Q) and B (K) K-major
//                 in shared memory;
//     O += P V    m64nDk16 per 16 keys, A = P from registers (S's
//                 accumulators packed to 16 bits: the layouts match), B = V
//                 MN-major in shared memory (transposed by the
//                 instruction);
//   backwardQueryKernel  dQ: S = Q K^T and dP = dO V^T (m64n64k16, shared
//                        memory), dS from the statistics
//                        (flash::scoreGradients), dq += dS K (dS from
//                        registers, K transposed) one tile late, beside
//                        the next tile's dS.
//   backwardKeyValueKernel  dK, dV: S^T = K Q^T and dP^T = V dO^T
//                        (m64n{32,64}k16), Pd^T and dS^T from the
//                        statistics (flash::keyGradients), dv += Pd^T dO
//                        and dk += dS^T Q (registers times dO, Q
//                        transposed) one step late, beside the next
//                        step's Pd^T and dS^T.
// A block is two warpgroups (256 threads), 64 query rows (keys for dK/dV)
// each; the tiles it loops over (128 keys, 64 for dQ, 32 or 64 queries
// for dK/dV) are copied by cp.async (double buffered) while the previous
// one is computed. Tiles are [D / 64][rows][64] with the 128-byte swizzle that
// wgmma's descriptors name: 16-byte chunk c of a 128-byte row r stored at
// chunk c ^ (r % 8), each [rows][64] part 1024-byte aligned.
//
// Only bf16 / f16 with head_dim == value_dim in {64, 128}, as the mma.sync
// kernels; AttentionKernels.cu runs them on devices of compute capability 9.0
// (HopperAttention.cu is compiled for sm_90a alone). The emulation
// (TPCRT_CUDA_EMULATION, test/CudaEmulation.h's wgmma) runs them on the
// host as the PTX ISA describes the instruction: that, not a GPU, is what
// tests them here.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_HOPPERATTENTION_CUH
#define TPCRT_CUDA_HOPPERATTENTION_CUH

#include "FlashAttention.cuh"

#include <type_traits>

#if defined(__CUDA_ARCH__) && !defined(TPCRT_CUDA_EMULATION) &&                \
    !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "HopperAttention.cuh's kernel needs sm_90a (wgmma)"
#endif

namespace tpcrt::cuda::attn::hopper {

constexpr int kWarpgroups = 2;
constexpr int kThreads = 128 * kWarpgroups;
/// Query rows per block (64 per warpgroup) and keys per tile.
constexpr int kBlockM = 64 * kWarpgroups;
constexpr int kBlockN = 128;

template <int D> struct Config {
  static_assert(D == 64 || D == 128, "head_dim 64 or 128");
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kKeyTileBytes = kBlockN * D * 2;
  /// Q, two stages of K and of V, and up to 1 KiB to align the start.
  static constexpr int kSmemBytes = kQBytes + 4 * kKeyTileBytes + 1024;
};

//===- PTX ----------------------------------------------------------------===//

/// A shared-memory matrix descriptor with the 128-byte swizzle (PTX ISA,
/// "Matrix Descriptor"): start address, leading and stride byte offsets
/// (each >> 4 in 14 bits), swizzle mode 1 in bits 62-63, base offset 0
/// (every [rows][64] part starts 1024-byte aligned).
__device__ __forceinline__ uint64_t descriptor(unsigned address,
                                               unsigned leadingBytes,
                                               unsigned strideBytes) {
  return static_cast<uint64_t>((address & 0x3ffff) >> 4) |
         static_cast<uint64_t>(leadingBytes >> 4) << 16 |
         static_cast<uint64_t>(strideBytes >> 4) << 32 | uint64_t(1) << 62;
}

/// `desc` with its start address `bytes` (a multiple of 16) further on.
/// The address is the low 14 bits in 16-byte units and every tile ends
/// below 256 KiB, so the sum stays in them: one 32-bit add a wgmma operand
/// (a descriptor rebuilt from its address costs six), the upper word
/// (stride, swizzle) kept as it is.
__device__ __forceinline__ uint64_t moved(uint64_t desc, unsigned bytes) {
  const unsigned low = static_cast<unsigned>(desc) + bytes / 16;
  return (desc & 0xffffffff00000000ull) | low;
}

/// This thread's warpgroup, threadIdx.x / 128, as a value the compiler
/// knows every lane of a warp shares (lane 0's, shuffled): the descriptors
/// computed from it then live in uniform registers, where wgmma reads
/// them, rather than being moved there (R2UR) before each.
__device__ __forceinline__ int warpgroupIndex() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
}

__device__ __forceinline__ void fenceProxyAsync() {
#ifdef TPCRT_CUDA_EMULATION
  emu::fenceProxyAsync();
#else
  // cp.async wrote the tiles through the generic proxy; wgmma reads them
  // through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
/// Orders this warpgroup's register accesses before the next wgmma.
__device__ __forceinline__ void wgmmaFence() {
#ifdef TPCRT_CUDA_EMULATION
  emu::wgmmaFence();
#else
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmmaCommit() {
#ifdef TPCRT_CUDA_EMULATION
  emu::wgmmaCommit();
#else
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wgmmaWait() {
#ifdef TPCRT_CUDA_EMULATION
  emu::wgmmaWait(N);
#else
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
/// Keeps the compiler from moving accesses of an accumulator across the
/// volatile wgmma statements around it (the registers change behind its
/// back until wait_group).
template <int N>
__device__ __forceinline__ void
fenceAccumulators([[maybe_unused]] float (&d)[N][4]) {
#ifndef TPCRT_CUDA_EMULATION
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      asm volatile("" : "+f"(d[j][e])::"memory");
#endif
}

#define TPCRT_WGMMA_D4(j)                                                      \
  "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define TPCRT_WGMMA_D16                                                        \
  TPCRT_WGMMA_D4(0), TPCRT_WGMMA_D4(1), TPCRT_WGMMA_D4(2), TPCRT_WGMMA_D4(3)
#define TPCRT_WGMMA_D32                                                        \
  TPCRT_WGMMA_D16, TPCRT_WGMMA_D4(4), TPCRT_WGMMA_D4(5), TPCRT_WGMMA_D4(6),    \
      TPCRT_WGMMA_D4(7)
#define TPCRT_WGMMA_D64                                                        \
  TPCRT_WGMMA_D32, TPCRT_WGMMA_D4(8), TPCRT_WGMMA_D4(9), TPCRT_WGMMA_D4(10),   \
      TPCRT_WGMMA_D4(11), TPCRT_WGMMA_D4(12), TPCRT_WGMMA_D4(13),              \
      TPCRT_WGMMA_D4(14), TPCRT_WGMMA_D4(15)
#define TPCRT_WGMMA_REGS16                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define TPCRT_WGMMA_REGS32                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31}"
#define TPCRT_WGMMA_REGS64                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "     \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, "     \
  "%58, %59, %60, %61, %62, %63}"

/// The products' wgmma forms for one 16-bit type ("bf16" or "f16"):
///   scores: d (64 x N, N = 32, 64 or 128) = A B (+ d when scaleD), A and
///           B K-major in shared memory;
///   values: d (64 x N, N = 64 or 128) += a B, a in registers, B MN-major
///           in shared memory (imm-trans-b 1).
/// (PTX ISA, wgmma.mma_async: scale-d is a predicate, then imm-scale-a,
/// imm-scale-b, imm-trans-a (not with a in registers), imm-trans-b.)
#define TPCRT_WGMMA_TYPE(T, NAME)                                              \
  template <> struct Wgmma<T> {                                                \
    static __device__ __forceinline__ void                                     \
    scores(float (&d)[16][4], uint64_t a, uint64_t b, int scaleD) {            \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                \
                   "wgmma.mma_async.sync.aligned.m64n128k16.f32." NAME         \
                   "." NAME " " TPCRT_WGMMA_REGS64                             \
                   ", %64, %65, p, 1, 1, 0, 0;\n}\n"                           \
                   : TPCRT_WGMMA_D64                                           \
                   : "l"(a), "l"(b), "r"(scaleD));                             \
    }                                                                          \
    static __device__ __forceinline__ void                                     \
    scores(float (&d)[4][4], uint64_t a, uint64_t b, int scaleD) {             \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                \
                   "wgmma.mma_async.sync.aligned.m64n32k16.f32." NAME "." NAME \
                   " " TPCRT_WGMMA_REGS16 ", %16, %17, p, 1, 1, 0, 0;\n}\n"    \
                   : TPCRT_WGMMA_D16                                           \
                   : "l"(a), "l"(b), "r"(scaleD));                             \
    }                                                                          \
    static __device__ __forceinline__ void                                     \
    scores(float (&d)[8][4], uint64_t a, uint64_t b, int scaleD) {             \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                \
                   "wgmma.mma_async.sync.aligned.m64n64k16.f32." NAME "." NAME \
                   " " TPCRT_WGMMA_REGS32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"    \
                   : TPCRT_WGMMA_D32                                           \
                   : "l"(a), "l"(b), "r"(scaleD));                             \
    }                                                                          \
    static __device__ __forceinline__ void                                     \
    values(float (&d)[8][4], const unsigned (&a)[4], uint64_t b) {             \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                \
                   "wgmma.mma_async.sync.aligned.m64n64k16.f32." NAME "." NAME \
                   " " TPCRT_WGMMA_REGS32                                      \
                   ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"             \
                   : TPCRT_WGMMA_D32                                           \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b),       \
                     "r"(1));                                                  \
    }                                                                          \
    static __device__ __forceinline__ void                                     \
    values(float (&d)[16][4], const unsigned (&a)[4], uint64_t b) {            \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                \
                   "wgmma.mma_async.sync.aligned.m64n128k16.f32." NAME         \
                   "." NAME " " TPCRT_WGMMA_REGS64                             \
                   ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"             \
                   : TPCRT_WGMMA_D64                                           \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b),       \
                     "r"(1));                                                  \
    }                                                                          \
  };

template <typename T> struct Wgmma;
#ifdef TPCRT_CUDA_EMULATION
template <typename T> struct Wgmma {
  static constexpr bool kBf16 = std::is_same<T, __nv_bfloat16>::value;
  template <int N>
  static void scores(float (&d)[N][4], uint64_t a, uint64_t b, int scaleD) {
    emu::wgmma(&d[0][0], 8 * N, nullptr, a, b, scaleD != 0, false, kBf16);
  }
  template <int N>
  static void values(float (&d)[N][4], const unsigned (&a)[4], uint64_t b) {
    emu::wgmma(&d[0][0], 8 * N, a, 0, b, true, true, kBf16);
  }
};
#else
TPCRT_WGMMA_TYPE(__nv_bfloat16, "bf16")
TPCRT_WGMMA_TYPE(__half, "f16")
#endif

#undef TPCRT_WGMMA_TYPE
#undef TPCRT_WGMMA_REGS64
#undef TPCRT_WGMMA_REGS32
#undef TPCRT_WGMMA_REGS16
#undef TPCRT_WGMMA_D64
#undef TPCRT_WGMMA_D32
#undef TPCRT_WGMMA_D16
#undef TPCRT_WGMMA_D4

//===- Tiles --------------------------------------------------------------===//

/// Rows [row0, row0 + Rows) of a [rows, D] matrix with row stride ld into a
/// swizzled [D / 64][Rows][64] tile, zeros past `rows`; asynchronous (the
/// caller commits and waits). Thread t copies chunk t % (D / 8) of rows
/// t / (D / 8) + k * kStep; kStep is a multiple of 8, so each of its
/// copies has the same swizzle.
template <typename T, int D, int Rows>
__device__ __forceinline__ void loadTile(unsigned char *tile, const T *src,
                                         int64_t ld, int64_t row0,
                                         int64_t rows) {
  constexpr int kChunks = D / 8;
  constexpr int kStep = kThreads / kChunks;
  static_assert(kStep % 8 == 0 && Rows % kStep == 0, "tile shape");
  const int c = threadIdx.x % kChunks, r = threadIdx.x / kChunks;
  flash::copyTileRows<Rows, kStep>(tile + (c >> 3) * Rows * 128 + r * 128 +
                                       (((c & 7) ^ (r & 7)) << 4),
                                   kStep * 128, src, ld, row0, rows, r, c);
}

/// The descriptor of a K-major operand at `address` (scores' A and B: a
/// k-step's 16 columns of 8-row groups 1024 bytes apart).
__device__ __forceinline__ uint64_t kMajor(unsigned address) {
  return descriptor(address, 16, 1024);
}
/// The descriptor of a MN-major [N / 64][Rows][64] tile at `address` whose
/// rows are k (values' B: 64-column parts Rows * 128 bytes apart).
template <int Rows>
__device__ __forceinline__ uint64_t mnMajor(unsigned address) {
  return descriptor(address, Rows * 128, 1024);
}

/// d += A B with k = 16 KSteps: A from registers (a[kc] for k-step kc),
/// B the MN-major tile `tile` (mnMajor) whose rows are k: k-step kc reads
/// rows 16 kc.. (128 bytes apart). Issued, not committed.
template <typename T, int KSteps, int N>
__device__ __forceinline__ void
accumulateFromRegisters(float (&d)[N][4], const unsigned (&a)[KSteps][4],
                        uint64_t tile) {
#pragma unroll
  for (int kc = 0; kc < KSteps; ++kc)
    Wgmma<T>::values(d, a[kc], moved(tile, kc * 16 * 128));
}

//===- Kernel -------------------------------------------------------------===//

/// Block (bh, y): query rows [q0, q0 + kBlockM) of head bh = b * heads + h,
/// q0 from the last tile down (causal blocks with more keys start first);
/// warpgroup w takes rows q0 + 64 w .., its warp v rows + 16 v ..
/// Invariant after key tile t as in flash::forwardKernel.
template <typename T, int D, bool Drop>
__global__ void __launch_bounds__(kThreads, 1)
    forwardKernel(const ForwardParams p) {
  using Cfg = Config<D>;
  constexpr int BM = kBlockM, BN = kBlockN;
  constexpr int NT = BN / 8, DT = D / 8;
  TPCRT_DYNAMIC_SHARED(unsigned char, smem, 1024);
  // The swizzle works on shared addresses: start the tiles 1024-aligned.
  unsigned char *qs = smem + (1024 - flash::smemAddress(smem) % 1024) % 1024;
  unsigned char *ks = qs + Cfg::kQBytes; // 2 stages
  unsigned char *vs = ks + 2 * Cfg::kKeyTileBytes;

  const Shape &s = p.shape;
  const flash::QueryBlock<T> blk = flash::queryBlock<T, BM, BN>(p);
  if (!blk.valid)
    return; // the grid's last z row is partial
  const int64_t bh = blk.bh, b = blk.b, h = blk.h, q0 = blk.q0;
  const T *qg = blk.q, *kg = blk.k, *vg = blk.v;
  const int tiles = blk.tiles;

  const int group = warpgroupIndex(), warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x & 31, g = lane >> 2, tig = lane & 3;
  const int64_t warpRow0 = q0 + group * 64 + warp * 16;
  const float sl2 = s.scale * flash::kLog2e;
  const uint64_t qDesc = kMajor(flash::smemAddress(qs) + group * 64 * 128),
                 kDesc = kMajor(flash::smemAddress(ks)),
                 vDesc = mnMajor<BN>(flash::smemAddress(vs));

  loadTile<T, D, BM>(qs, qg, s.qRows.ld, q0, s.seqQ);
  loadTile<T, D, BN>(ks, kg, s.kRows.ld, 0, s.seqK);
  flash::cpAsyncCommit();

  float o[DT][4];
  zero(o);
  float mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0.0f, 0.0f};
  // P of the tile before, packed as wgmma's A (its O += P V is issued one
  // tile late, so that it runs while this tile's softmax does).
  unsigned pa[BN / 16][4];
  // O += P V of the tile whose V is in stage `vStage`.
  auto issueValues = [&](int vStage) {
    accumulateFromRegisters<T>(o, pa,
                               moved(vDesc, vStage * Cfg::kKeyTileBytes));
    wgmmaCommit();
  };

  // Tile t: K_t and V_{t-1} in shared memory (stages t % 2 and (t - 1) %
  // 2); S_t = Q K_t^T and then O += P_{t-1} V_{t-1} issued, the softmax of
  // S_t while the latter runs, then O rescaled. One barrier a tile: after
  // it every thread is past tile t - 1, whose wgmmas completed there, so
  // K_{t+1} and V_t may go into the stages K_{t-1} and V_{t-2} held.
  for (int t = 0; t < tiles; ++t) {
    const int stage = t & 1;
    flash::cpAsyncWait<0>(); // K_t, V_{t-1} (and Q) landed
    fenceProxyAsync();
    __syncthreads();
    if (t + 1 < tiles)
      loadTile<T, D, BN>(ks + (stage ^ 1) * Cfg::kKeyTileBytes, kg, s.kRows.ld,
                         static_cast<int64_t>(t + 1) * BN, s.seqK);
    loadTile<T, D, BN>(vs + stage * Cfg::kKeyTileBytes, vg, s.vRows.ld,
                       static_cast<int64_t>(t) * BN, s.seqK);
    flash::cpAsyncCommit();
    const uint64_t kt = moved(kDesc, stage * Cfg::kKeyTileBytes);
    const int64_t j0 = static_cast<int64_t>(t) * BN;

    // S = Q K^T: k-step kk reads columns 16 kk.. of Q's and K's rows, 32
    // bytes into part kk / 4; 8-row groups 1024 bytes apart.
    float sc[NT][4];
    fenceAccumulators(o);
    wgmmaFence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      Wgmma<T>::scores(sc, moved(qDesc, (kk >> 2) * BM * 128 + (kk & 3) * 32),
                       moved(kt, (kk >> 2) * BN * 128 + (kk & 3) * 32), kk > 0);
    wgmmaCommit();
    // The tile's keep bits while S (and P V) run: they need no score, and
    // their hashes are most of what a tile with dropout issues. A copy in
    // each branch: drawn between two branches on t, ptxas serializes the
    // wgmmas (C7514: tried).
    unsigned kept[2] = {0u, 0u};
    auto drawKeeps = [&] {
      if (Drop)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          kept[half] =
              flash::tileKeeps<NT>(p, b, h, warpRow0 + g + 8 * half, j0, tig);
    };
    if (t > 0) {
      issueValues(stage ^ 1);
      drawKeeps();
      wgmmaWait<1>(); // S (the older group) is done
    } else {
      drawKeeps();
      wgmmaWait<0>();
    }
    fenceAccumulators(sc);

    // Masks (keys past s_k; causal), online softmax, dropout.
    const bool mask = j0 + BN > s.seqK ||
                      (s.causal && j0 + BN - 1 > warpRow0 + s.causalOffset);
    float alpha[2];
#pragma unroll
    for (int half = 0; half < 2; ++half)
      alpha[half] = flash::softmaxTile<NT, Drop>(
          p, sc, half, warpRow0 + g + 8 * half, j0, mask, sl2, tig,
          [&] { return kept[half]; }, mx[half], sum[half]);
    wgmmaWait<0>(); // the previous tile's O += P V, and its reads of pa
    fenceAccumulators(o);
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        o[dt][2 * half] *= alpha[half];
        o[dt][2 * half + 1] *= alpha[half];
      }
#pragma unroll
    for (int kc = 0; kc < BN / 16; ++kc)
      flash::packA<T>(pa[kc], sc, kc);
  }
  // The last tile's O += P V.
  flash::cpAsyncWait<0>();
  fenceProxyAsync();
  __syncthreads();
  if (tiles > 0) {
    fenceAccumulators(o);
    wgmmaFence();
    issueValues((tiles - 1) & 1);
    wgmmaWait<0>();
    fenceAccumulators(o);
  }

#pragma unroll
  for (int half = 0; half < 2; ++half)
    flash::finishRow<DT>(p, b, h, bh, warpRow0 + g + 8 * half, half, tig,
                         mx[half], sum[half], o);
}

/// x = A B^T and y = A' B'^T (64 x N each) over k = D, read from shared
/// memory: A, A' this warpgroup's 64 rows of the [D / 64][ARows][64] tiles
/// ax, ay (kMajor, the warpgroup's offset included), B, B' the N rows of
/// the [D / 64][N][64] tiles bx, by (kMajor). k-step kk reads columns 16 kk..,
/// 32 bytes into part kk / 4; 8-row groups 1024 bytes apart. One wgmma group,
/// committed: the caller waits for it.
template <typename T, int D, int ARows, int N>
__device__ __forceinline__ void
twoScores(float (&x)[N / 8][4], float (&y)[N / 8][4], uint64_t ax, uint64_t ay,
          uint64_t bx, uint64_t by) {
  wgmmaFence();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const unsigned a = (kk >> 2) * ARows * 128 + (kk & 3) * 32,
                   b = (kk >> 2) * N * 128 + (kk & 3) * 32;
    Wgmma<T>::scores(x, moved(ax, a), moved(bx, b), kk > 0);
    Wgmma<T>::scores(y, moved(ay, a), moved(by, b), kk > 0);
  }
  wgmmaCommit();
}

//===- dQ -----------------------------------------------------------------===//

/// dQ: key tiles of 64 keys (S, dP and dq's accumulators, 32 + 32 + D / 2
/// registers a thread, leave room for the fragments); K in three stages
/// (the tile whose dq += dS K runs, the current one, the next), V in two.
template <int D> struct QueryGradConfig {
  static_assert(D == 64 || D == 128, "head_dim 64 or 128");
  static constexpr int kBlockN = 64;
  static constexpr int kRowBytes = kBlockM * D * 2; // Q, dO
  static constexpr int kKeyTileBytes = kBlockN * D * 2;
  static constexpr int kKeyStages = 3, kValueStages = 2;
  /// Q, dO, the stages of K and V, and up to 1 KiB to align the start.
  static constexpr int kSmemBytes =
      2 * kRowBytes + (kKeyStages + kValueStages) * kKeyTileBytes + 1024;
};

/// Block (bh, y): query rows [q0, q0 + kBlockM) of head bh as in
/// forwardKernel; per key tile S = Q K^T and dP = dO V^T (wgmma, shared
/// memory operands), dS from the statistics (flash::scoreGradients), then
/// dq += dS K (dS from registers, K transposed by the instruction), issued
/// one tile late so that it runs while the next tile's dS is computed. The
/// invariant and result of flash::backwardQueryKernel.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    backwardQueryKernel(const BackwardParams p) {
  using Cfg = QueryGradConfig<D>;
  constexpr int BM = kBlockM, BN = Cfg::kBlockN;
  constexpr int NT = BN / 8, DT = D / 8;
  TPCRT_DYNAMIC_SHARED(unsigned char, smem, 1024);
  unsigned char *qs = smem + (1024 - flash::smemAddress(smem) % 1024) % 1024;
  unsigned char *dos = qs + Cfg::kRowBytes;
  unsigned char *ks = dos + Cfg::kRowBytes; // kKeyStages
  unsigned char *vs = ks + Cfg::kKeyStages * Cfg::kKeyTileBytes;

  const Shape &s = p.shape;
  const flash::QueryBlock<T> blk = flash::queryBlock<T, BM, BN>(p);
  if (!blk.valid)
    return; // the grid's last z row is partial
  const int64_t bh = blk.bh, b = blk.b, h = blk.h, q0 = blk.q0;
  const int tiles = blk.tiles;

  const int group = warpgroupIndex(), warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x & 31, g = lane >> 2, tig = lane & 3;
  const int64_t groupRow0 = q0 + group * 64, warpRow0 = groupRow0 + warp * 16;
  const float sl2 = s.scale * flash::kLog2e;
  const uint64_t qDesc = kMajor(flash::smemAddress(qs) + group * 64 * 128),
                 doDesc = kMajor(flash::smemAddress(dos) + group * 64 * 128),
                 kDesc = kMajor(flash::smemAddress(ks)),
                 vDesc = kMajor(flash::smemAddress(vs)),
                 kValuesDesc = mnMajor<BN>(flash::smemAddress(ks));

  loadTile<T, D, BM>(qs, blk.q, s.qRows.ld, q0, s.seqQ);
  loadTile<T, D, BM>(dos, static_cast<const T *>(p.dO) + s.oRows.head(b, h),
                     s.oRows.ld, q0, s.seqQ);
  loadTile<T, D, BN>(ks, blk.k, s.kRows.ld, 0, s.seqK);
  loadTile<T, D, BN>(vs, blk.v, s.vRows.ld, 0, s.seqK);
  flash::cpAsyncCommit();

  flash::QueryRow rows[2];
#pragma unroll
  for (int half = 0; half < 2; ++half)
    rows[half] = flash::queryRow(p, bh, b, h, warpRow0 + g + 8 * half);
  float dq[DT][4];
  zero(dq);
  // dS of tile t - 1, packed as wgmma's A, while its dq += dS K is not yet
  // issued; its K is in stage (t - 1) % kKeyStages.
  unsigned a[BN / 16][4];
  // dq += dS K (K's rows are k).
  auto issueQueryGrad = [&](int kStage) {
    accumulateFromRegisters<T>(dq, a,
                               moved(kValuesDesc, kStage * Cfg::kKeyTileBytes));
    wgmmaCommit();
  };

  // One barrier a tile: after it every thread is past tile t - 1, whose
  // wgmmas completed there, so K_{t+1} and V_{t+1} may go into the stages
  // K_{t-2} and V_{t-1} held. Every warpgroup computes every tile of the
  // block, also a causal tile none of its rows sees (masked: dS = 0): a
  // wgmma under a condition that differs between the warpgroups is one
  // ptxas serializes (C7520), which costs more than that tile.
  for (int t = 0; t < tiles; ++t) {
    const int kStage = t % Cfg::kKeyStages, vStage = t % Cfg::kValueStages;
    flash::cpAsyncWait<0>(); // K_t, V_t (and Q, dO) landed
    fenceProxyAsync();
    __syncthreads();
    if (t + 1 < tiles) {
      loadTile<T, D, BN>(ks + (t + 1) % Cfg::kKeyStages * Cfg::kKeyTileBytes,
                         blk.k, s.kRows.ld, static_cast<int64_t>(t + 1) * BN,
                         s.seqK);
      loadTile<T, D, BN>(vs + (t + 1) % Cfg::kValueStages * Cfg::kKeyTileBytes,
                         blk.v, s.vRows.ld, static_cast<int64_t>(t + 1) * BN,
                         s.seqK);
    }
    flash::cpAsyncCommit();
    const int64_t j0 = static_cast<int64_t>(t) * BN;
    float sc[NT][4], dp[NT][4];
    fenceAccumulators(dq);
    wgmmaFence();
    // S = Q K^T, dP = dO V^T
    twoScores<T, D, BM, BN>(sc, dp, qDesc, doDesc,
                            moved(kDesc, kStage * Cfg::kKeyTileBytes),
                            moved(vDesc, vStage * Cfg::kKeyTileBytes));
    // The tile's keep bits while its products run (they need no score;
    // with dropout their hashes are most of what a tile issues). A copy in
    // each branch: drawn between two branches on t ptxas serializes the
    // wgmmas (C7514).
    unsigned kept[2];
    if (t > 0) {
      issueQueryGrad((t - 1) % Cfg::kKeyStages); // the previous tile's
      flash::rowKeeps<NT>(p, rows, j0, tig, kept);
      wgmmaWait<1>(); // S and dP (the older group) are done
    } else {
      flash::rowKeeps<NT>(p, rows, j0, tig, kept);
      wgmmaWait<0>();
    }
    fenceAccumulators(sc);
    fenceAccumulators(dp);
    flash::scoreGradients<NT>(p, sc, dp, rows, kept, j0, tig, sl2);
    wgmmaWait<0>(); // dq += dS K, and its reads of `a`
    fenceAccumulators(dq);
#pragma unroll
    for (int kc = 0; kc < BN / 16; ++kc)
      flash::packA<T>(a[kc], sc, kc);
  }
  // The last tile's dq += dS K (its K stays: nothing was loaded after it).
  if (tiles > 0) {
    fenceAccumulators(dq);
    wgmmaFence();
    issueQueryGrad((tiles - 1) % Cfg::kKeyStages);
    wgmmaWait<0>();
    fenceAccumulators(dq);
  }
  flash::cpAsyncWait<0>();
  flash::storeQueryGradients<DT>(p, b, h, rows, dq, tig);
}

//===- dK, dV -------------------------------------------------------------===//

/// dK/dV: 128 keys a block (64 per warpgroup), kQueries queries a step
/// (S^T, dP^T, dk and dv's accumulators: 2 kQueries / 2 + D registers a
/// thread).
template <int D> struct KeyValueGradConfig {
  static_assert(D == 64 || D == 128, "head_dim 64 or 128");
  static constexpr int kBlockKeys = 128;
  static constexpr int kQueries = D > 64 ? 32 : 64;
  static constexpr int kKeyBytes = kBlockKeys * D * 2;     // K, V
  static constexpr int kStepBytes = kQueries * D * 2;      // Q, dO, per stage
  /// Stages of Q, dO and the statistics: the step whose dv, dk products
  /// run, the current one, the next.
  static constexpr int kStages = 3;
  static constexpr int kStatsBytes = kStages * 3 * kQueries * 4;
  /// K, V, the stages of Q and of dO, the statistics, and up to 1 KiB to
  /// align the start.
  static constexpr int kSmemBytes =
      2 * kKeyBytes + 2 * kStages * kStepBytes + kStatsBytes + 1024;
};

/// Block (b * kvHeads + kvh, y): keys [k0, k0 + 128) of kv head kvh,
/// warpgroup w keys k0 + 64 w ..; the steps, invariant and results of
/// flash::backwardKeyValueKernel, with S^T = K Q^T and dP^T = V dO^T from
/// shared memory, Pd^T and dS^T from the statistics (flash::keyGradients),
/// then dv += Pd^T dO and dk += dS^T Q (Pd^T, dS^T from registers, dO and
/// Q transposed by the instruction), issued one step late so that they run
/// while the next step's Pd^T and dS^T are computed.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    backwardKeyValueKernel(const BackwardParams p) {
  using Cfg = KeyValueGradConfig<D>;
  constexpr int BK = Cfg::kBlockKeys, BQ = Cfg::kQueries;
  constexpr int QT = BQ / 8, DT = D / 8;
  TPCRT_DYNAMIC_SHARED(unsigned char, smem, 1024);
  unsigned char *ks = smem + (1024 - flash::smemAddress(smem) % 1024) % 1024;
  unsigned char *vs = ks + Cfg::kKeyBytes;
  unsigned char *qs = vs + Cfg::kKeyBytes;                  // kStages
  unsigned char *dos = qs + Cfg::kStages * Cfg::kStepBytes; // kStages
  float *rowStats =
      reinterpret_cast<float *>(dos + Cfg::kStages * Cfg::kStepBytes);

  const Shape &s = p.shape;
  const int64_t bkv = gridHead(), b = bkv / s.kvHeads, kvh = bkv % s.kvHeads;
  if (b >= s.batch)
    return; // the grid's last z row is partial
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * BK;
  const int group = warpgroupIndex(), warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x & 31, g = lane >> 2, tig = lane & 3;
  const int64_t groupKey0 = k0 + group * 64, warpKey0 = groupKey0 + warp * 16;
  const float sl2 = s.scale * flash::kLog2e;
  const uint64_t kDesc = kMajor(flash::smemAddress(ks) + group * 64 * 128),
                 vDesc = kMajor(flash::smemAddress(vs) + group * 64 * 128),
                 qDesc = kMajor(flash::smemAddress(qs)),
                 doDesc = kMajor(flash::smemAddress(dos)),
                 qValuesDesc = mnMajor<BQ>(flash::smemAddress(qs)),
                 doValuesDesc = mnMajor<BQ>(flash::smemAddress(dos));

  loadTile<T, D, BK>(ks, static_cast<const T *>(p.k) + s.kRows.head(b, kvh),
                     s.kRows.ld, k0, s.seqK);
  loadTile<T, D, BK>(vs, static_cast<const T *>(p.v) + s.vRows.head(b, kvh),
                     s.vRows.ld, k0, s.seqK);

  const flash::KeySteps<BQ> stepPlan(s, kvh, k0);
  const int64_t steps = stepPlan.count;

  // Loads the Q, dO and statistics of the step at `c` into `stage`.
  auto issue = [&](const typename flash::KeySteps<BQ>::Cursor &c, int stage) {
    const int64_t hq = c.head, i0 = c.query0();
    loadTile<T, D, BQ>(qs + stage * Cfg::kStepBytes,
                       static_cast<const T *>(p.q) + s.qRows.head(b, hq),
                       s.qRows.ld, i0, s.seqQ);
    loadTile<T, D, BQ>(dos + stage * Cfg::kStepBytes,
                       static_cast<const T *>(p.dO) + s.oRows.head(b, hq),
                       s.oRows.ld, i0, s.seqQ);
    flash::loadStepStats<BQ, kThreads>(p, rowStats + stage * 3 * BQ,
                                       b * s.heads + hq, i0);
  };
  typename flash::KeySteps<BQ>::Cursor cursor = stepPlan.first();
  if (steps > 0)
    issue(cursor, 0);
  flash::cpAsyncCommit();

  float dk[DT][4], dv[DT][4];
  zero(dk);
  zero(dv);
  // Pd^T and dS^T of step t - 1, packed as wgmma's A, while their products
  // are not yet issued; its Q and dO are in stage (t - 1) % kStages.
  unsigned ap[BQ / 16][4], ad[BQ / 16][4];
  // dv += Pd^T dO, dk += dS^T Q (dO's and Q's rows are k).
  auto issueKeyValueGrads = [&](int stage) {
    const unsigned offset = stage * Cfg::kStepBytes;
    accumulateFromRegisters<T>(dv, ap, moved(doValuesDesc, offset));
    accumulateFromRegisters<T>(dk, ad, moved(qValuesDesc, offset));
    wgmmaCommit();
  };

  // One barrier a step: after it every thread is past step t - 1, whose
  // wgmmas completed there, so step t + 1 may go into the stage step t - 2
  // held. Both warpgroups compute every step, also a causal step none of
  // whose queries sees the warpgroup's keys (masked: Pd^T = dS^T = 0), as
  // the dQ kernel does its tiles (a warpgroup-dependent wgmma is
  // serialized).
  // Step t's stage, t % kStages, stepped (a 64-bit modulo is a multiply
  // and shifts, three a step).
  int stage = 0, last = Cfg::kStages - 1;
  for (int64_t t = 0; t < steps; ++t) {
    const int next = stage + 1 == Cfg::kStages ? 0 : stage + 1;
    const int64_t hq = cursor.head, i0 = cursor.query0();
    cursor.next();           // step t + 1
    flash::cpAsyncWait<0>(); // step t (and K, V) landed
    fenceProxyAsync();
    __syncthreads();
    if (t + 1 < steps)
      issue(cursor, next);
    flash::cpAsyncCommit();
    const float *st = rowStats + stage * 3 * BQ;
    // S^T = K Q^T, dP^T = V dO^T: rows keys, columns queries.
    float sT[QT][4], dpT[QT][4];
    fenceAccumulators(dv);
    fenceAccumulators(dk);
    wgmmaFence();
    twoScores<T, D, BK, BQ>(sT, dpT, kDesc, vDesc,
                            moved(qDesc, stage * Cfg::kStepBytes),
                            moved(doDesc, stage * Cfg::kStepBytes));
    // The step's keep bits while its products run, a copy in each branch
    // (as in the dQ kernel).
    unsigned kept;
    if (t > 0) {
      issueKeyValueGrads(last);
      kept = flash::stepKeeps<QT>(p, b, hq, i0, warpKey0 + g, tig);
      wgmmaWait<1>(); // S^T and dP^T (the older group) are done
    } else {
      kept = flash::stepKeeps<QT>(p, b, hq, i0, warpKey0 + g, tig);
      wgmmaWait<0>();
    }
    fenceAccumulators(sT);
    fenceAccumulators(dpT);
    flash::keyGradients<QT, BQ>(p, sT, dpT, st, kept, i0, warpKey0 + g, tig,
                                sl2);
    wgmmaWait<0>(); // dv, dk, and their reads of ap, ad
    fenceAccumulators(dv);
    fenceAccumulators(dk);
#pragma unroll
    for (int kc = 0; kc < BQ / 16; ++kc) {
      flash::packA<T>(ap[kc], sT, kc);
      flash::packA<T>(ad[kc], dpT, kc);
    }
    last = stage;
    stage = next;
  }
  // The last step's products (its Q and dO stay: nothing was loaded after).
  if (steps > 0) {
    fenceAccumulators(dv);
    fenceAccumulators(dk);
    wgmmaFence();
    issueKeyValueGrads(last);
    wgmmaWait<0>();
    fenceAccumulators(dv);
    fenceAccumulators(dk);
  }
  flash::cpAsyncWait<0>();
  // Keys no query sees (or no queries at all) get zeros.
  flash::storeKeyValueGradients<DT>(p, b, kvh, warpKey0 + g, dk, dv, tig);
}

} // namespace tpcrt::cuda::attn::hopper

#endif // TPCRT_CUDA_HOPPERATTENTION_CUH
