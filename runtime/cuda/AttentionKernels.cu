//===- AttentionKernels.cu - attention(_grad) and softmax(_grad) ----------===//
//
// The attention family (CudaKernels.h). Semantics are the CPU device's
// (cpu/CpuKernels.cpp attention and softmax, cpu/CpuGradKernels.cpp
// attentionGrad and softmaxGrad, the dropout CpuDevice.cpp builds):
//
//   P = softmax(scale * q k^T [causal: key j > i + (s_k - s_q) masked]),
//   Pd = P * keep * float(1 / (1 - rate)), O = Pd v,
//
// query head h reading kv head h / (heads / kv_heads), probability
// (b, h, i, j) drawing element firstIndex + ((b * H + h) * Q + i) * s_k + j
// of the stream (b, h, i, H, Q global on a split).
//
// attention is flash-style (never the s x s matrix): a block per (head,
// query tile) walks the key tiles with an online softmax; attention_lse
// also writes each row's log-sum-exp, (max + log sum). attention_grad runs
// three kernels:
//   1. per row the max m, 1 / sum and D = rowsum(dO * O), in the call's
//      scratch: given only dO, q, k, v, by the forward again (O = Pd v
//      recomputed in fp32, not stored; D equals the CPU's rowsum(dPd * P));
//      given the forward's O and lse too (attention_lse's), by one read of
//      dO and O: m = lse, 1 / sum = 1 (two s x s x d products fewer);
//   2. dK, dV: a block per (kv head, key tile) loops over the query tiles of
//      every query head of its group: dV += Pd^T dO, dK += dS^T q, with
//      dS = P * (dPd - D) and dPd = (dO v^T) * keep * dropScale;
//   3. dQ: a block per (head, query tile) loops over key tiles: dQ += dS k.
// Every output element is summed by one thread in a fixed order (no
// atomics), so results repeat bit for bit.
//
// Two implementations: q, k, v (and dO) all bf16 or all f16 with head_dim ==
// value_dim in {64, 128} and 16-byte aligned tensors run on tensor cores
// (FlashAttention.cuh: mma.sync, fp32 accumulators, P and dS rounded to the
// 16-bit type for their products, as FlashAttention does); everything else
// (fp32, mixed storage, other dims up to 256) runs the fp32 FMA kernels
// (GenericAttention.cuh). On a device of compute capability 9.0 the
// tensor-core forward, the statistics pass, dK/dV and dQ run on wgmma
// instead (HopperAttention.cuh, built for sm_90a). The kernels are
// instantiated in files of their own (FlashAttention.cu,
// FlashAttentionGrad.cu, GenericAttention.cu, HopperAttention.cu:
// AttentionLaunch.h); this file checks the calls, sets their parameters up
// and picks one.
// TPCRT_CUDA_ATTENTION=generic forces the FMA kernels, =mma the mma.sync
// kernels on Hopper too (AttentionChoice.h).
//
// softmax(_grad): a block per row, fixed-order block reductions.
//
//===----------------------------------------------------------------------===//

#include "AttentionChoice.h"
#include "AttentionLaunch.h"
#include "AttentionTensors.h"
#include "CudaCommon.cuh"
#include "FlashAttention.cuh"
#include "GenericAttention.cuh"
#if TPCRT_HAVE_SM90A
#include "HopperAttention.h"
#endif

#include <atomic>
#include <string>

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;
using namespace tpcrt::cuda::attn::generic;

namespace {

//===- Softmax ------------------------------------------------------------===//

/// Rows of `cols` in blocks of q rows: row r is row r % q of its block and,
/// causal, sees its columns j <= r % q + (cols - q) (CpuKernels.cpp).
__device__ __forceinline__ int64_t validColumns(int64_t row, int64_t q,
                                                int64_t cols, bool causal) {
  return causal ? row % q + (cols - q) + 1 : cols;
}

/// One block per row (grid-stride over rows): max, sum of exp, then
/// exp * (1 / sum) on the valid columns and 0 past them.
__global__ void softmaxKernel(const void *x, Storage xType, void *y,
                              Storage yType, int64_t rows, int64_t q,
                              int64_t cols, bool causal) {
  TPCRT_SHARED(float, shared, [32]);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t valid = validColumns(row, q, cols, causal);
    const int64_t base = row * cols;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < valid; j += blockDim.x)
      mx = fmaxf(mx, loadFloat(x, xType, base + j));
    mx = blockMax(mx, shared);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < valid; j += blockDim.x)
      sum += expf(loadFloat(x, xType, base + j) - mx);
    sum = blockSum(sum, shared);
    const float inv = 1.0f / sum;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      storeFloat(y, yType, base + j,
                 j < valid ? expf(loadFloat(x, xType, base + j) - mx) * inv
                           : 0.0f);
  }
}

/// dX = y * (dY - sum_j dY_j y_j) on the valid columns, 0 past them.
__global__ void softmaxGradKernel(const void *dY, Storage dYType, const void *y,
                                  Storage yType, void *dX, Storage dXType,
                                  int64_t rows, int64_t q, int64_t cols,
                                  bool causal) {
  TPCRT_SHARED(float, shared, [32]);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t valid = validColumns(row, q, cols, causal);
    const int64_t base = row * cols;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < valid; j += blockDim.x)
      dot += loadFloat(dY, dYType, base + j) * loadFloat(y, yType, base + j);
    dot = blockSum(dot, shared);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float out = 0.0f;
      if (j < valid) {
        float pj = loadFloat(y, yType, base + j);
        out = pj * (loadFloat(dY, dYType, base + j) - dot);
      }
      storeFloat(dX, dXType, base + j, out);
    }
  }
}

//===- attention_grad's statistics from attention_lse's results
//------------===//

constexpr int kStatsWarps = 8;

/// Row r = bh * s_q + i of the saved forward: max = lse (times log2 e for
/// the tensor-core kernels, whose scores are log2-scaled), 1 / sum = 1 and
/// D = rowsum(dO * O), a warp per row (lanes over the columns, then a
/// fixed-order butterfly: the same bits every run).
__global__ void savedStatsKernel(const void *dO, Storage dOType, const void *o,
                                 Storage oType, const float *lse,
                                 RowStats stats, Shape s, float lseScale) {
  const int64_t rows = s.batch * s.heads * s.seqQ;
  const int lane = threadIdx.x & 31;
  for (int64_t r =
           static_cast<int64_t>(blockIdx.x) * kStatsWarps + threadIdx.x / 32;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kStatsWarps) {
    const int64_t bh = r / s.seqQ, i = r % s.seqQ;
    const int64_t base = s.oRows.at(bh / s.heads, bh % s.heads, i);
    float dot = 0.0f;
    for (int c = lane; c < s.valueDim; c += 32)
      dot += loadFloat(dO, dOType, base + c) * loadFloat(o, oType, base + c);
#pragma unroll
    for (int width = 16; width > 0; width /= 2)
      dot += __shfl_xor_sync(0xffffffffu, dot, width);
    if (lane == 0) {
      stats.max[r] = lse[r] * lseScale;
      stats.invSum[r] = 1.0f;
      stats.dot[r] = dot;
    }
  }
}

//===- Host side ----------------------------------------------------------===//

constexpr int64_t kMaxDim = 256;
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxGridX = 2147483647;

bool forceGeneric() { return attentionChoice() == AttentionChoice::Generic; }

/// Whether the forward's tensor-core cases run HopperAttention.cu's wgmma
/// kernel: built (sm_90a), the current device of compute capability 9.0
/// (asked once per device) and not TPCRT_CUDA_ATTENTION=mma.
bool useWgmma() {
#if TPCRT_HAVE_SM90A
  if (attentionChoice() == AttentionChoice::Mma)
    return false;
  constexpr int kDevices = 64;
  static std::atomic<int> capability[kDevices]; // major * 10 + minor + 1
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) {
    cudaGetLastError();
    return false;
  }
  int known = device < kDevices ? capability[device].load() : 0;
  if (known == 0) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                               device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                               device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    known = major * 10 + minor + 1;
    if (device < kDevices)
      capability[device].store(known);
  }
  return known == 90 + 1;
#else
  return false;
#endif
}

/// The call's sizes and dropout (CpuDevice.cpp's attentionDropout), and its
/// checks (CpuKernels.cpp's checkAttention, plus the dims this family
/// supports).
Status attentionSetup(const KernelCall &call, const KernelArgs &args,
                      const char *name, Shape &shape, Dropout &dropout) {
  if (call.batch < 0 || call.heads < 0 || call.kvHeads < 0 || call.seqQ < 0 ||
      call.seqK < 0 || call.headDim < 0 || call.valueDim < 0)
    return Status::error(std::string(name) + ": negative size");
  if (call.kvHeads == 0 || call.heads % call.kvHeads != 0)
    return Status::error(std::string(name) + ": " + std::to_string(call.heads) +
                         " heads are not a multiple of " +
                         std::to_string(call.kvHeads) + " kv heads");
  bool causal = call.flags & 1;
  if (causal && call.seqK < call.seqQ)
    return Status::error(std::string(name) + ": causal needs s_k >= s_q");
  if (!causal && call.seqK == 0 && call.seqQ > 0)
    return Status::error(std::string(name) + ": no keys");
  if (call.headDim > kMaxDim || call.valueDim > kMaxDim)
    return Status::error(std::string(name) + ": head_dim " +
                         std::to_string(call.headDim) + " and value_dim " +
                         std::to_string(call.valueDim) + " must be at most " +
                         std::to_string(kMaxDim) + " on CUDA");
  if (call.floatAttrs.size() < 2 || call.intAttrs.empty())
    return Status::error(std::string(name) + ": missing attributes");
  if (call.attentionPackedQkv() &&
      (call.kvHeads != call.heads || call.valueDim != call.headDim ||
       call.seqK != call.seqQ))
    return Status::error(std::string(name) +
                         ": packed q, k and v of different shapes");

  shape.batch = call.batch;
  shape.heads = call.heads;
  shape.kvHeads = call.kvHeads;
  shape.seqQ = call.seqQ;
  shape.seqK = call.seqK;
  shape.headDim = static_cast<int>(call.headDim);
  shape.valueDim = static_cast<int>(call.valueDim);
  shape.group = call.heads / call.kvHeads;
  shape.causal = causal;
  shape.causalOffset = call.seqK - call.seqQ;
  shape.scale = static_cast<float>(call.floatAttrs[0]);
  AttentionLayout layout = call.attentionLayout();
  shape.qRows = headRows(layout, call.heads, call.seqQ, call.headDim);
  shape.kRows = headRows(layout, call.kvHeads, call.seqK, call.headDim);
  shape.vRows = headRows(layout, call.kvHeads, call.seqK, call.valueDim);
  shape.oRows = resultRows(layout, call.heads, call.seqQ, call.valueDim);

  StepContext none;
  const StepContext &context = args.context ? *args.context : none;
  double rate = context.evaluation ? 0.0 : call.floatAttrs[1];
  if (!(rate >= 0.0 && rate < 1.0))
    return Status::error(std::string(name) + ": dropout rate " +
                         std::to_string(rate) + " is outside [0, 1)");
  dropout = Dropout();
  if (rate > 0.0) {
    dropout.enabled = true;
    dropout.setStream(context.seed, static_cast<uint64_t>(call.intAttrs[0]),
                      context.step, rate);
    // int_attrs[1] (where this piece starts) + microbatch * N, modulo 2^64.
    dropout.firstIndex = static_cast<uint64_t>(
                             call.intAttrs.size() == 2 ? call.intAttrs[1] : 0) +
                         static_cast<uint64_t>(context.microbatch) *
                             static_cast<uint64_t>(call.streamElements);
    dropout.globalHeads = call.heads;
    dropout.globalSeqQ = call.seqQ;
    if (!call.splits.empty()) {
      if (call.globalOffset.size() < 3 || call.globalShape.size() < 3)
        return Status::error(std::string(name) + ": split without a block");
      int headsDim = call.attentionHeadsDim();
      int queryDim = call.attentionQueryDim();
      dropout.batchOffset = call.globalOffset[0];
      dropout.headOffset = call.globalOffset[headsDim];
      dropout.queryOffset = call.globalOffset[queryDim];
      dropout.globalHeads = call.globalShape[headsDim];
      dropout.globalSeqQ = call.globalShape[queryDim];
    }
  }
  return Status::ok();
}

/// Whether a call runs on tensor cores: one 16-bit storage for every
/// operand (a saved lse aside), head_dim == value_dim in {64, 128}, every
/// tensor 16-byte aligned (16-byte async copies, paired stores).
bool useTensorCores(const KernelCall &call, const AttentionTensors &t) {
  if (forceGeneric())
    return false;
  if (call.headDim != call.valueDim ||
      (call.headDim != 64 && call.headDim != 128))
    return false;
  Storage type = storageOf(call.operands[0].dtype);
  if (type != Storage::BF16 && type != Storage::F16)
    return false;
  // Every operand but a saved lse (f32 whatever the others are).
  const size_t typed =
      call.operands.size() - (call.attentionReadsLse() ? 1 : 0);
  for (size_t i = 0; i < typed; ++i)
    if (storageOf(call.operands[i].dtype) != type)
      return false;
  return t.aligned16();
}

/// The forward (p.o set) or attention_grad's statistics (p.o null).
Status runForward(const ForwardParams &p, bool tensor, cudaStream_t stream) {
#if TPCRT_HAVE_SM90A
  if (tensor && useWgmma())
    return launchHopperForward(p, stream);
#endif
  const Shape &s = p.shape;
  int64_t rowsPerBlock =
      tensor ? (s.headDim == 64 ? flash::ForwardConfig<64>::kBlockM
                                : flash::ForwardConfig<128>::kBlockM)
             : kRows;
  int64_t tiles = (s.seqQ + rowsPerBlock - 1) / rowsPerBlock;
  if (s.batch * s.heads == 0 || tiles == 0)
    return Status::ok();
  dim3 grid = tileGrid(tiles, s.batch * s.heads);
  return tensor ? launchFlashForward(p, grid, stream)
                : launchGenericForward(p, grid, stream);
}

/// Grid limits (tileGrid): tiles of 32 or more rows in x, heads in y, z.
Status checkGrid(const KernelCall &call, const char *name) {
  if (call.batch * call.heads > kMaxGridY * kMaxGridY ||
      (call.seqQ + kRows - 1) / kRows > kMaxGridX ||
      (call.seqK + kKeys - 1) / kKeys > kMaxGridX)
    return Status::error(std::string(name) +
                         ": too many heads or positions for one launch");
  return Status::ok();
}

Status runAttention(const KernelCall &call, const KernelArgs &args) {
  ForwardParams p;
  if (Status s = attentionSetup(call, args, "attention", p.shape, p.dropout);
      !s)
    return s;
  if (Status s = checkGrid(call, "attention"); !s)
    return s;
  AttentionTensors t = attentionTensors(call, args);
  p.q = t.q.at;
  p.k = t.k.at;
  p.v = t.v.at;
  p.qType = storageOf(t.q.dtype);
  p.kType = storageOf(t.k.dtype);
  p.vType = storageOf(t.v.dtype);
  p.o = t.o.at;
  p.oType = storageOf(t.o.dtype);
  p.lse = static_cast<float *>(t.lse.at);
  // Nothing to write (value_dim 0 still has each row's lse).
  if (call.results[0].elements == 0 && !(p.lse && call.results[1].elements))
    return Status::ok();
  return runForward(p, useTensorCores(call, t), args.stream);
}

/// Scratch of attention_grad: three arrays of b * heads * s_q floats.
uint64_t rowStatsBytes(const KernelCall &call) {
  return alignScratch(
      static_cast<uint64_t>(call.batch * call.heads * call.seqQ) *
      sizeof(float));
}

Status runAttentionGrad(const KernelCall &call, const KernelArgs &args) {
  BackwardParams p;
  if (Status s =
          attentionSetup(call, args, "attention_grad", p.shape, p.dropout);
      !s)
    return s;
  if (Status s = checkGrid(call, "attention_grad"); !s)
    return s;
  const Shape &s = p.shape;
  // No query heads: dk and dv are still written (zeros), as on the CPU.
  if (s.batch * s.kvHeads * s.seqK == 0 && s.batch * s.heads == 0)
    return Status::ok();
  uint64_t statsBytes = rowStatsBytes(call);
  if (args.scratchBytes < 3 * statsBytes || (statsBytes && !args.scratch))
    return Status::error("attention_grad: scratch of " +
                         std::to_string(args.scratchBytes) + " bytes, needs " +
                         std::to_string(3 * statsBytes));
  char *scratch = static_cast<char *>(args.scratch);
  RowStats stats;
  stats.max = reinterpret_cast<float *>(scratch);
  stats.invSum = reinterpret_cast<float *>(scratch + statsBytes);
  stats.dot = reinterpret_cast<float *>(scratch + 2 * statsBytes);

  AttentionTensors t = attentionTensors(call, args);
  p.dO = t.dO.at;
  p.q = t.q.at;
  p.k = t.k.at;
  p.v = t.v.at;
  p.dOType = storageOf(t.dO.dtype);
  p.qType = storageOf(t.q.dtype);
  p.kType = storageOf(t.k.dtype);
  p.vType = storageOf(t.v.dtype);
  p.dq = t.dq.at;
  p.dk = t.dk.at;
  p.dv = t.dv.at;
  p.dqType = storageOf(t.dq.dtype);
  p.dkType = storageOf(t.dk.dtype);
  p.dvType = storageOf(t.dv.dtype);
  p.stats = stats;
  bool tensor = useTensorCores(call, t);

  // 1. Per-row statistics: from the forward's O and lse where given.
  if (t.lse.at) {
    const int64_t rows = s.batch * s.heads * s.seqQ;
    if (rows > 0) {
      const int64_t blocks = (rows + kStatsWarps - 1) / kStatsWarps;
      TPCRT_LAUNCH(savedStatsKernel,
                   static_cast<unsigned>(std::min<int64_t>(blocks, 1 << 20)),
                   32 * kStatsWarps, 0, args.stream, t.dO.at, p.dOType, t.o.at,
                   storageOf(t.o.dtype), static_cast<const float *>(t.lse.at),
                   stats, s, tensor ? flash::kLog2e : 1.0f);
      if (Status st = launchStatus("attention_grad statistics"); !st)
        return st;
    }
  }
  // Else the forward again, keeping max, 1 / sum and D.
  if (!t.lse.at) {
    ForwardParams f;
    f.q = p.q;
    f.k = p.k;
    f.v = p.v;
    f.qType = p.qType;
    f.kType = p.kType;
    f.vType = p.vType;
    f.dO = p.dO;
    f.dOType = p.dOType;
    f.stats = stats;
    f.shape = p.shape;
    f.dropout = p.dropout;
    if (Status st = runForward(f, tensor, args.stream); !st)
      return st.withContext("attention_grad");
  }

  // 2. dK, dV and 3. dQ.
  if (!tensor)
    return launchGenericBackward(p, args.stream);
#if TPCRT_HAVE_SM90A
  if (useWgmma())
    return launchHopperBackward(p, args.stream);
#endif
  return launchFlashBackward(p, args.stream);
}

/// Threads per softmax row: a multiple of 32 (blockSum), about k / 4.
unsigned softmaxThreads(int64_t cols) {
  return cols <= 128 ? 32 : cols <= 512 ? 128 : 256;
}

unsigned softmaxBlocks(int64_t rows) {
  return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
}

Status runSoftmax(const KernelCall &call, const KernelArgs &args) {
  bool causal = call.flags & 1;
  if (causal && call.seqK < call.seqQ)
    return Status::error("softmax: causal needs k >= q, got q " +
                         std::to_string(call.seqQ) + " k " +
                         std::to_string(call.seqK));
  int64_t rows = call.outer * call.seqQ;
  if (rows <= 0 || call.seqK <= 0)
    return Status::ok();
  TPCRT_LAUNCH(softmaxKernel, softmaxBlocks(rows), softmaxThreads(call.seqK), 0,
               args.stream, args.operands[0], storageOf(call.operands[0].dtype),
               args.results[0], storageOf(call.results[0].dtype), rows,
               call.seqQ, call.seqK, causal);
  return launchStatus("softmax");
}

Status runSoftmaxGrad(const KernelCall &call, const KernelArgs &args) {
  bool causal = call.flags & 1;
  if (causal && call.seqK < call.seqQ)
    return Status::error("softmax_grad: causal needs k >= q, got q " +
                         std::to_string(call.seqQ) + " k " +
                         std::to_string(call.seqK));
  int64_t rows = call.outer * call.seqQ;
  if (rows <= 0 || call.seqK <= 0)
    return Status::ok();
  TPCRT_LAUNCH(
      softmaxGradKernel, softmaxBlocks(rows), softmaxThreads(call.seqK), 0,
      args.stream, args.operands[0], storageOf(call.operands[0].dtype),
      args.operands[1], storageOf(call.operands[1].dtype), args.results[0],
      storageOf(call.results[0].dtype), rows, call.seqQ, call.seqK, causal);
  return launchStatus("softmax_grad");
}

} // namespace

bool cuda::isAttentionKernel(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::Attention:
  case fb::OpCode::AttentionGrad:
  case fb::OpCode::AttentionQkv:
  case fb::OpCode::AttentionQkvGrad:
  case fb::OpCode::AttentionLse:
  case fb::OpCode::AttentionQkvLse:
  case fb::OpCode::Softmax:
  case fb::OpCode::SoftmaxGrad:
    return true;
  default:
    return false;
  }
}

uint64_t cuda::attentionScratchBytes(const KernelCall &call) {
  if (!call.attentionBackward())
    return 0;
  return 3 * rowStatsBytes(call);
}

Status cuda::runAttentionKernel(const KernelCall &call,
                                const KernelArgs &args) {
  switch (call.op) {
  case fb::OpCode::Attention:
  case fb::OpCode::AttentionQkv:
  case fb::OpCode::AttentionLse:
  case fb::OpCode::AttentionQkvLse:
    return runAttention(call, args);
  case fb::OpCode::AttentionGrad:
  case fb::OpCode::AttentionQkvGrad:
    return runAttentionGrad(call, args);
  case fb::OpCode::Softmax:
    return runSoftmax(call, args);
  case fb::OpCode::SoftmaxGrad:
    return runSoftmaxGrad(call, args);
  default:
    return Status::error("the attention family does not run this kernel");
  }
}
