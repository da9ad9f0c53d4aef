//===- GenericAttention.cuh - attention in fp32 FMA -------------*- C++ -*-===//
//
// The attention kernels of every call the tensor cores do not take
// (AttentionKernels.cu's useTensorCores): fp32 tensors, mixed storage, head
// dims other than 64 and 128 (up to 256, head_dim != value_dim allowed).
// Same three kernels as FlashAttention.cuh's, on fp32 FMAs:
//   genericForwardKernel   O, or for attention_grad the per-row statistics
//                          (max, 1 / sum, D = rowsum(dO * O)) instead of O;
//   genericKeyValueKernel  dK, dV: a block per key tile, looping over the
//                          query tiles of every query head of its kv group;
//   genericQueryKernel     dQ: a block per query tile, looping over keys.
// No atomics: every output element is summed by one thread in a fixed
// order. AttentionKernels.cu launches them (grids: tileGrid; block:
// kThreadsGeneric; shared memory: the sizes below).
//
// TPCRT_CUDA_EMULATION: compiled for the host, to be tested on the CPU
// (runtime/test/GenericAttentionEmulationTest.cpp); FlashAttention.cuh then
// includes CudaEmulation.h instead of the CUDA headers, and the dynamic
// shared memory is the emulated block's. Without it nothing changes.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_GENERICATTENTION_CUH
#define TPCRT_CUDA_GENERICATTENTION_CUH

// Shape, the parameters, tileGrid, gridHead, min64 and the CUDA (or
// emulated) built-ins.
#include "FlashAttention.cuh"

#include <cstddef>
#include <cstdint>

namespace tpcrt::cuda::attn::generic {

//===- Attention in fp32 FMA ----------------------------------------------===//
//
// A block of 256 threads holds kRows query rows (or, for dK/dV, keys) in
// shared memory, fp32, rows padded to an odd stride (d | 1) so that column
// walks of eight rows hit distinct banks. Thread t owns row t / 8 and the
// columns t % 8 + 8 u (u < Cap / 8) of its accumulators: the 8 threads of a
// row are consecutive lanes of one warp, so its reductions are shuffles and
// its score row in shared memory needs only __syncwarp.

constexpr int kThreadsGeneric = 256;
constexpr int kRows = 32;
constexpr int kKeys = 32;

__device__ __forceinline__ float rowMax8(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
}
__device__ __forceinline__ float rowSum8(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v + __shfl_xor_sync(0xffffffffu, v, 4);
}

/// Rows [row0, row0 + n) of one head's [rows, cols] matrix (element
/// base + row * srcLd + c of src) into `tile` (stride ld), zeros past `rows`.
__device__ __forceinline__ void loadRows(float *tile, int ld, const void *src,
                                         Storage type, int64_t base,
                                         int64_t srcLd, int64_t row0,
                                         int64_t rows, int n, int cols) {
  for (int index = threadIdx.x; index < n * cols; index += kThreadsGeneric) {
    int r = index / cols, c = index % cols;
    int64_t row = row0 + r;
    tile[r * ld + c] =
        row < rows ? loadFloat(src, type, base + row * srcLd + c) : 0.0f;
  }
}

__device__ __forceinline__ float dotRows(const float *a, const float *b,
                                         int n) {
  float acc = 0.0f;
  for (int x = 0; x < n; ++x)
    acc = fmaf(a[x], b[x], acc);
  return acc;
}

/// Key tile j0 (rows j0.. of kv head kvh of batch b) into ks, vs (strides
/// ldq, ldv) once the previous tile's readers are done.
template <typename Params>
__device__ __forceinline__ void
loadKeyRows(float *ks, float *vs, int ldq, int ldv, const Params &p, int64_t b,
            int64_t kvh, int64_t j0, int d, int dv) {
  const Shape &s = p.shape;
  __syncthreads();
  loadRows(ks, ldq, p.k, p.kType, s.kRows.head(b, kvh), s.kRows.ld, j0, s.seqK,
           kKeys, d);
  loadRows(vs, ldv, p.v, p.vType, s.vRows.head(b, kvh), s.vRows.ld, j0, s.seqK,
           kKeys, dv);
  __syncthreads();
}

/// Forward or statistics (p.o null), as flash::forwardKernel, in fp32 and
/// natural units. Invariant after key tile t, per row: mx = max of its
/// scores so far, sum = sum of e^(score - mx), o = sum of e^(score - mx) *
/// keep * dropScale * v_j (columns of this thread).
template <int Cap>
__global__ void __launch_bounds__(kThreadsGeneric, 1)
    genericForwardKernel(const ForwardParams p) {
  TPCRT_DYNAMIC_SHARED(float, shm, 16);
  const Shape &s = p.shape;
  const int d = s.headDim, dv = s.valueDim;
  const int ldq = d | 1, ldv = dv | 1;
  float *qs = shm;              // [kRows][ldq]
  float *ks = qs + kRows * ldq; // [kKeys][ldq]
  float *vs = ks + kKeys * ldq; // [kKeys][ldv]
  float *ps = vs + kKeys * ldv; // [kRows][kKeys + 1]

  const int64_t bh = gridHead(), b = bh / s.heads, h = bh % s.heads;
  if (b >= s.batch)
    return; // the grid's last z row is partial
  const int64_t kvh = h / s.group;
  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows;
  const int64_t keyEnd =
      s.causal ? min64(s.seqK, q0 + kRows + s.causalOffset) : s.seqK;
  const int r = threadIdx.x >> 3, c8 = threadIdx.x & 7;
  const int64_t row = q0 + r;

  loadRows(qs, ldq, p.q, p.qType, s.qRows.head(b, h), s.qRows.ld, q0, s.seqQ,
           kRows, d);
  float o[Cap / 8];
#pragma unroll
  for (int u = 0; u < Cap / 8; ++u)
    o[u] = 0.0f;
  float mx = -INFINITY, sum = 0.0f;
  const uint64_t dropRow =
      p.dropout.enabled ? p.dropout.rowIndex(b, h, row, s.seqK) : 0;

  for (int64_t j0 = 0; j0 < keyEnd; j0 += kKeys) {
    loadKeyRows(ks, vs, ldq, ldv, p, b, kvh, j0, d, dv);
    float sc[4];
    float tileMax = -INFINITY;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int c = c8 + 8 * u;
      const int64_t j = j0 + c;
      const bool valid = j < s.seqK && (!s.causal || j <= row + s.causalOffset);
      sc[u] =
          valid ? s.scale * dotRows(qs + r * ldq, ks + c * ldq, d) : -INFINITY;
      tileMax = fmaxf(tileMax, sc[u]);
    }
    tileMax = rowMax8(tileMax);
    const float newMax = fmaxf(mx, tileMax);
    const float base = newMax == -INFINITY ? 0.0f : newMax;
    const float alpha = expf(mx - base);
    mx = newMax;
    float tileSum = 0.0f;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int c = c8 + 8 * u;
      float e = expf(sc[u] - base);
      tileSum += e;
      if (p.dropout.enabled)
        e = p.dropout.keepsIndex(dropRow + static_cast<uint64_t>(j0 + c))
                ? e * p.dropout.scale
                : 0.0f;
      ps[r * (kKeys + 1) + c] = e;
    }
    sum = sum * alpha + rowSum8(tileSum);
    __syncwarp(); // row r's scores are written by its own 8 lanes
    const int keys = static_cast<int>(min64(kKeys, s.seqK - j0));
#pragma unroll
    for (int u = 0; u < Cap / 8; ++u)
      o[u] *= alpha;
    for (int jj = 0; jj < keys; ++jj) {
      const float pj = ps[r * (kKeys + 1) + jj];
      const float *vRow = vs + jj * ldv;
#pragma unroll
      for (int u = 0; u < Cap / 8; ++u) {
        const int c = c8 + 8 * u;
        if (c < dv)
          o[u] = fmaf(pj, vRow[c], o[u]);
      }
    }
  }

  // Every row sees key 0: sum >= 1.
  const float inv = 1.0f / sum;
  // The result and dO share the output's layout.
  const int64_t outBase = s.oRows.at(b, h, row);
  if (p.o) {
    if (row < s.seqQ)
#pragma unroll
      for (int u = 0; u < Cap / 8; ++u) {
        const int c = c8 + 8 * u;
        if (c < dv)
          storeFloat(p.o, p.oType, outBase + c, o[u] * inv);
      }
    if (p.lse && row < s.seqQ && c8 == 0)
      p.lse[bh * s.seqQ + row] = mx + logf(sum);
    return;
  }
  float dot = 0.0f;
  if (row < s.seqQ)
#pragma unroll
    for (int u = 0; u < Cap / 8; ++u) {
      const int c = c8 + 8 * u;
      if (c < dv)
        dot += o[u] * inv * loadFloat(p.dO, p.dOType, outBase + c);
    }
  dot = rowSum8(dot);
  if (row < s.seqQ && c8 == 0) {
    p.stats.max[bh * s.seqQ + row] = mx;
    p.stats.invSum[bh * s.seqQ + row] = inv;
    p.stats.dot[bh * s.seqQ + row] = dot;
  }
}

/// dK, dV as flash::backwardKeyValueKernel: a block per (b * kvHeads + kvh,
/// key tile), thread row = key. Invariant after a step (a query head of the
/// group and a query tile), per key j: dv = sum of Pd_ij dO_i and dk = sum
/// of dS_ij q_i over the steps so far.
template <int Cap>
__global__ void __launch_bounds__(kThreadsGeneric, 1)
    genericKeyValueKernel(const BackwardParams p) {
  TPCRT_DYNAMIC_SHARED(float, shm, 16);
  const Shape &s = p.shape;
  const int d = s.headDim, dv = s.valueDim;
  const int ldq = d | 1, ldv = dv | 1;
  float *ks = shm;                      // [kKeys][ldq]
  float *vs = ks + kKeys * ldq;         // [kKeys][ldv]
  float *qs = vs + kKeys * ldv;         // [kRows][ldq]
  float *dos = qs + kRows * ldq;        // [kRows][ldv]
  float *pd = dos + kRows * ldv;        // [kKeys][kRows + 1]: Pd^T
  float *ds = pd + kKeys * (kRows + 1); // [kKeys][kRows + 1]: dS^T
  float *st = ds + kKeys * (kRows + 1); // max, invSum, dot of kRows rows

  const int64_t bkv = gridHead(), b = bkv / s.kvHeads, kvh = bkv % s.kvHeads;
  if (b >= s.batch)
    return;
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kKeys;
  const int r = threadIdx.x >> 3, c8 = threadIdx.x & 7;
  const int64_t j = k0 + r;

  loadRows(ks, ldq, p.k, p.kType, s.kRows.head(b, kvh), s.kRows.ld, k0, s.seqK,
           kKeys, d);
  loadRows(vs, ldv, p.v, p.vType, s.vRows.head(b, kvh), s.vRows.ld, k0, s.seqK,
           kKeys, dv);
  float dk[Cap / 8], dvAcc[Cap / 8];
  zero(dk);
  zero(dvAcc);
  // Query i sees key k0 iff i >= k0 - offset (causal).
  const int64_t firstTile =
      (s.causal ? max64(0, k0 - s.causalOffset) : 0) / kRows;
  for (int64_t hg = 0; hg < s.group; ++hg) {
    const int64_t hq = kvh * s.group + hg, bhq = b * s.heads + hq;
    for (int64_t i0 = firstTile * kRows; i0 < s.seqQ; i0 += kRows) {
      __syncthreads(); // the previous step's readers are done
      loadRows(qs, ldq, p.q, p.qType, s.qRows.head(b, hq), s.qRows.ld, i0,
               s.seqQ, kRows, d);
      loadRows(dos, ldv, p.dO, p.dOType, s.oRows.head(b, hq), s.oRows.ld, i0,
               s.seqQ, kRows, dv);
      for (int i = threadIdx.x; i < kRows; i += kThreadsGeneric) {
        bool valid = i0 + i < s.seqQ;
        int64_t at = bhq * s.seqQ + i0 + i;
        st[i] = valid ? p.stats.max[at] : 0.0f;
        st[kRows + i] = valid ? p.stats.invSum[at] : 0.0f;
        st[2 * kRows + i] = valid ? p.stats.dot[at] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = c8 + 8 * u;
        const int64_t i = i0 + c;
        const bool valid =
            i < s.seqQ && j < s.seqK && (!s.causal || j <= i + s.causalOffset);
        float pv = 0.0f, dsv = 0.0f, pdv = 0.0f;
        if (valid) {
          pv = expf(s.scale * dotRows(ks + r * ldq, qs + c * ldq, d) - st[c]) *
               st[kRows + c];
          float dpv = dotRows(vs + r * ldv, dos + c * ldv, dv);
          pdv = pv;
          if (p.dropout.enabled) {
            bool kept =
                p.dropout.keepsIndex(p.dropout.rowIndex(b, hq, i, s.seqK) +
                                     static_cast<uint64_t>(j));
            pdv = kept ? pv * p.dropout.scale : 0.0f;
            dpv = kept ? dpv * p.dropout.scale : 0.0f;
          }
          dsv = pv * (dpv - st[2 * kRows + c]);
        }
        pd[r * (kRows + 1) + c] = pdv;
        ds[r * (kRows + 1) + c] = dsv;
      }
      __syncwarp(); // key r's row is written by its own 8 lanes
      const int queries = static_cast<int>(min64(kRows, s.seqQ - i0));
      for (int ii = 0; ii < queries; ++ii) {
        const float pdv = pd[r * (kRows + 1) + ii];
        const float dsv = ds[r * (kRows + 1) + ii];
        const float *qRow = qs + ii * ldq, *dORow = dos + ii * ldv;
#pragma unroll
        for (int u = 0; u < Cap / 8; ++u) {
          const int c = c8 + 8 * u;
          if (c < dv)
            dvAcc[u] = fmaf(pdv, dORow[c], dvAcc[u]);
          if (c < d)
            dk[u] = fmaf(dsv, qRow[c], dk[u]);
        }
      }
    }
  }

  // Keys no query sees (or no queries at all) get zeros.
  if (j >= s.seqK)
    return;
#pragma unroll
  for (int u = 0; u < Cap / 8; ++u) {
    const int c = c8 + 8 * u;
    if (c < d)
      storeFloat(p.dk, p.dkType, s.kRows.at(b, kvh, j) + c, dk[u] * s.scale);
    if (c < dv)
      storeFloat(p.dv, p.dvType, s.vRows.at(b, kvh, j) + c, dvAcc[u]);
  }
}

/// dQ as flash::backwardQueryKernel: a block per (bh, query tile), from
/// the last tile down. Invariant after key tile t, per row i: dq = sum of
/// dS_ij k_j over the tiles so far.
template <int Cap>
__global__ void __launch_bounds__(kThreadsGeneric, 1)
    genericQueryKernel(const BackwardParams p) {
  TPCRT_DYNAMIC_SHARED(float, shm, 16);
  const Shape &s = p.shape;
  const int d = s.headDim, dv = s.valueDim;
  const int ldq = d | 1, ldv = dv | 1;
  float *qs = shm;               // [kRows][ldq]
  float *dos = qs + kRows * ldq; // [kRows][ldv]
  float *ks = dos + kRows * ldv; // [kKeys][ldq]
  float *vs = ks + kKeys * ldq;  // [kKeys][ldv]
  float *ds = vs + kKeys * ldv;  // [kRows][kKeys + 1]

  const int64_t bh = gridHead(), b = bh / s.heads, h = bh % s.heads;
  if (b >= s.batch)
    return; // the grid's last z row is partial
  const int64_t kvh = h / s.group;
  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows;
  const int64_t keyEnd =
      s.causal ? min64(s.seqK, q0 + kRows + s.causalOffset) : s.seqK;
  const int r = threadIdx.x >> 3, c8 = threadIdx.x & 7;
  const int64_t row = q0 + r;

  loadRows(qs, ldq, p.q, p.qType, s.qRows.head(b, h), s.qRows.ld, q0, s.seqQ,
           kRows, d);
  loadRows(dos, ldv, p.dO, p.dOType, s.oRows.head(b, h), s.oRows.ld, q0, s.seqQ,
           kRows, dv);
  const bool rowValid = row < s.seqQ;
  float rowMax, rowInv, rowDot;
  p.stats.load(bh * s.seqQ + row, rowValid, rowMax, rowInv, rowDot);
  const uint64_t dropRow =
      p.dropout.enabled ? p.dropout.rowIndex(b, h, row, s.seqK) : 0;
  float dq[Cap / 8];
  zero(dq);

  for (int64_t j0 = 0; j0 < keyEnd; j0 += kKeys) {
    loadKeyRows(ks, vs, ldq, ldv, p, b, kvh, j0, d, dv);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int c = c8 + 8 * u;
      const int64_t j = j0 + c;
      const bool valid =
          rowValid && j < s.seqK && (!s.causal || j <= row + s.causalOffset);
      float dsv = 0.0f;
      if (valid) {
        float pv =
            expf(s.scale * dotRows(qs + r * ldq, ks + c * ldq, d) - rowMax) *
            rowInv;
        float dpv = dotRows(dos + r * ldv, vs + c * ldv, dv);
        if (p.dropout.enabled)
          dpv = p.dropout.keepsIndex(dropRow + static_cast<uint64_t>(j))
                    ? dpv * p.dropout.scale
                    : 0.0f;
        dsv = pv * (dpv - rowDot);
      }
      ds[r * (kKeys + 1) + c] = dsv;
    }
    __syncwarp();
    const int keys = static_cast<int>(min64(kKeys, s.seqK - j0));
    for (int jj = 0; jj < keys; ++jj) {
      const float dsv = ds[r * (kKeys + 1) + jj];
      const float *kRow = ks + jj * ldq;
#pragma unroll
      for (int u = 0; u < Cap / 8; ++u) {
        const int c = c8 + 8 * u;
        if (c < d)
          dq[u] = fmaf(dsv, kRow[c], dq[u]);
      }
    }
  }

  if (!rowValid)
    return;
#pragma unroll
  for (int u = 0; u < Cap / 8; ++u) {
    const int c = c8 + 8 * u;
    if (c < d)
      storeFloat(p.dq, p.dqType, s.qRows.at(b, h, row) + c, dq[u] * s.scale);
  }
}

/// The generic kernels' accumulator columns: 64, 128 or 256.
inline int capacityFor(int64_t d, int64_t dv) {
  int64_t most = d > dv ? d : dv;
  return most <= 64 ? 64 : most <= 128 ? 128 : 256;
}

/// The kernels' dynamic shared memory (their tiles, laid out as above).
inline size_t genericForwardSmem(int d, int dv) {
  size_t ldq = d | 1, ldv = dv | 1;
  return sizeof(float) *
         (kRows * ldq + kKeys * ldq + kKeys * ldv + kRows * (kKeys + 1));
}
inline size_t genericKeyValueSmem(int d, int dv) {
  size_t ldq = d | 1, ldv = dv | 1;
  return sizeof(float) * (kKeys * ldq + kKeys * ldv + kRows * ldq +
                          kRows * ldv + 2 * kKeys * (kRows + 1) + 3 * kRows);
}
inline size_t genericQuerySmem(int d, int dv) {
  size_t ldq = d | 1, ldv = dv | 1;
  return sizeof(float) * (kRows * ldq + kRows * ldv + kKeys * ldq +
                          kKeys * ldv + kRows * (kKeys + 1));
}

} // namespace tpcrt::cuda::attn::generic

#endif // TPCRT_CUDA_GENERICATTENTION_CUH
