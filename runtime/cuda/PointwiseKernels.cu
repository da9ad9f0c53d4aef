//===- PointwiseKernels.cu - elementwise maps, dropout, rotary, copies ----===//
//
// The pointwise family (CudaKernels.h): elementwise maps and their grads,
// broadcast add and mul, dropout and its masks, rotary, casts, copies and
// zeros; its layout kernels (transpose, slice, repeat, pad, sum_groups,
// sum_to) are LayoutKernels.cu's. Each matches the CPU device's kernel
// (runtime/cpu) in fp32: add, mul, dropout, masks, casts and copies bit for
// bit, rotary to the rounding of its double angles, the transcendental maps
// within fp32 rounding (CUDA's erff, tanhf, expf where the CPU uses
// FastMath.h); dropout draws the very same stream.
//
// Every map reads any float storage with loadFloat and stores with
// storeFloat, in grid-stride loops, 8 elements at a time (16-byte loads of
// 16-bit storage) when every pointer is 16-byte aligned. A result may be the
// very bytes of an operand (Kernels.def's SameBytes): each thread reads its
// elements before it writes them.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"
#include "SiluOps.cuh"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

constexpr unsigned kThreads = 256;
/// Threads that fill the device: rotary splits its rows to get this many.
constexpr int64_t kFillThreads = int64_t(1) << 18;

Status cudaStatus(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(what) + ": " + cudaGetErrorString(err));
}

//===----------------------------------------------------------------------===//
// Elementwise maps
//===----------------------------------------------------------------------===//

// The functions of the maps, as the CPU kernels (CpuKernels.cpp,
// CpuGradKernels.cpp) write them, with CUDA's full-accuracy erff, tanhf and
// expf in place of FastMath.h's; silu, mul and silu_grad are SiluOps.cuh's
// (the fused SwiGLU pairs compute them the same way).

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;

struct GeluErf {
  __device__ float operator()(float x, int64_t) const {
    return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
  }
};

struct GeluTanh {
  __device__ float operator()(float x, int64_t) const {
    return 0.5f * x *
           (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  }
};

struct Silu {
  __device__ float operator()(float x, int64_t) const { return siluOf(x); }
};

/// Cast: the load and the store do the conversion.
struct Identity {
  __device__ float operator()(float x, int64_t) const { return x; }
};

struct Dropout {
  DropoutDraw draw;
  __device__ float operator()(float x, int64_t i) const {
    return draw.keep(i) ? x * draw.scale : 0.0f;
  }
  /// Elements base.. base + kVec - 1, two to a hash (DropoutDraw::keepTwo).
  __device__ void vec(float (&v)[kVec], int64_t base, int64_t count) const {
#pragma unroll
    for (int k = 0; k < kVec; k += 2) {
      const unsigned kept = draw.keepTwo(base + k, count);
      v[k] = (kept & 1u) ? v[k] * draw.scale : 0.0f;
      v[k + 1] = (kept & 2u) ? v[k + 1] * draw.scale : 0.0f;
    }
  }
};

/// Whether Op also takes kVec elements at once (`op.vec(v, base, count)`).
template <typename Op, typename = void>
struct TakesVectors : std::false_type {};
template <typename Op>
struct TakesVectors<Op, std::void_t<decltype(&Op::vec)>> : std::true_type {};

struct Add {
  __device__ float operator()(float a, float b, int64_t) const { return a + b; }
};

struct Mul {
  __device__ float operator()(float a, float b, int64_t) const {
    return mulOf(a, b);
  }
};

/// (dY, x) -> dX.
struct GeluErfGrad {
  __device__ float operator()(float dy, float x, int64_t) const {
    float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
    float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};

struct GeluTanhGrad {
  __device__ float operator()(float dy, float x, int64_t) const {
    float t = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
  }
};

struct SiluGrad {
  __device__ float operator()(float dy, float x, int64_t) const {
    return siluGradOf(dy, x);
  }
};

/// (input, mask) -> input * mask * scale.
struct ApplyMask {
  float scale;
  __device__ float operator()(float x, float mask, int64_t) const {
    return mask != 0.0f ? x * scale : 0.0f;
  }
};

/// y[i] = op(x[i], i); kVec elements at a time when `vectorized`.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    unaryKernel(const void *x, Storage xType, void *y, Storage yType,
                int64_t count, bool vectorized, Op op) {
  forEachElement(
      count, vectorized,
      [&](int64_t base) {
        float v[kVec];
        loadVec(x, xType, base, v);
        if constexpr (TakesVectors<Op>::value) {
          op.vec(v, base, count);
        } else {
#pragma unroll
          for (int k = 0; k < kVec; ++k)
            v[k] = op(v[k], base + k);
        }
        storeVec(y, yType, base, v);
      },
      [&](int64_t i) {
        storeFloat(y, yType, i, op(loadFloat(x, xType, i), i));
      });
}

/// castMany: blockIdx.y strides over the entries, blockIdx.x over each
/// one's elements, as unaryKernel does over one tensor.
__global__ void __launch_bounds__(kThreads)
    castManyKernel(const CastTensor *tensors, int numTensors) {
  for (int t = blockIdx.y; t < numTensors; t += gridDim.y) {
    CastTensor c = tensors[t];
    forEachElement(
        c.count, c.vectorized,
        [&](int64_t base) {
          float v[kVec] = {};
          if (c.in)
            loadVec(c.in, c.inType, base, v);
          storeVec(c.out, c.outType, base, v);
        },
        [&](int64_t i) {
          storeFloat(c.out, c.outType, i,
                     c.in ? loadFloat(c.in, c.inType, i) : 0.0f);
        });
  }
}

/// y[i] = op(a[i], b[i mod bCount], i): b's shape a suffix of a's.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    binaryKernel(const void *a, Storage aType, const void *b, Storage bType,
                 int64_t bCount, void *y, Storage yType, int64_t count,
                 bool vectorized, Op op) {
  forEachElement(
      count, vectorized,
      [&](int64_t base) {
        // bCount is count or a multiple of kVec: b's kVec elements are one
        // run.
        int64_t j = base < bCount ? base : modFast(base, bCount);
        float va[kVec], vb[kVec];
        loadVec(a, aType, base, va);
        loadVec(b, bType, j, vb);
#pragma unroll
        for (int k = 0; k < kVec; ++k)
          va[k] = op(va[k], vb[k], base + k);
        storeVec(y, yType, base, va);
      },
      [&](int64_t i) {
        int64_t j = i < bCount ? i : modFast(i, bCount);
        float vb = bType == Storage::U8 ? static_cast<const uint8_t *>(b)[j]
                                        : loadFloat(b, bType, j);
        storeFloat(y, yType, i, op(loadFloat(a, aType, i), vb, i));
      });
}

/// add on i64 counts, wrapping.
__global__ void __launch_bounds__(kThreads)
    addInt64Kernel(const int64_t *a, const int64_t *b, int64_t bCount,
                   int64_t *y, int64_t count) {
  for (int64_t i = firstThread(); i < count; i += threadStride()) {
    int64_t j = i < bCount ? i : modFast(i, bCount);
    y[i] = static_cast<int64_t>(static_cast<uint64_t>(a[i]) +
                                static_cast<uint64_t>(b[j]));
  }
}

/// mask[i] = 1 where dropout keeps element i, else 0. With `blocks`
/// (DropoutDraw::drawsBlocks, the mask 16-byte aligned) a thread takes
/// elements 16 t .. 16 t + 15, four hashes and one 16-byte store
/// (keptBlock), and the last count % 16 one each; else elements 2 t and
/// 2 t + 1, one hash for both (DropoutDraw::keepTwo).
__global__ void __launch_bounds__(kThreads)
    dropoutMaskKernel(uint8_t *mask, int64_t count, DropoutDraw draw,
                      bool blocks) {
  if (blocks) {
    const int64_t whole = count / 16;
    for (int64_t t = firstThread(); t < whole; t += threadStride())
      *vectorAt<uint4>(mask + 16 * t) = draw.keptBlock(16 * t);
    for (int64_t i = 16 * whole + firstThread(); i < count; i += threadStride())
      mask[i] = draw.keep(i) ? 1 : 0;
    return;
  }
  const int64_t pairs = count / 2 + count % 2;
  for (int64_t t = firstThread(); t < pairs; t += threadStride()) {
    const int64_t i = 2 * t;
    const unsigned kept = draw.keepTwo(i, count);
    mask[i] = kept & 1u;
    if (i + 1 < count)
      mask[i + 1] = (kept >> 1) & 1u;
  }
}

template <typename Op>
Status launchUnary(const void *x, Storage xType, void *y, Storage yType,
                   int64_t count, Op op, cudaStream_t stream,
                   const char *name) {
  if (count <= 0)
    return Status::ok();
  bool vectorized = aligned16(x) && aligned16(y) && count >= kVec;
  int64_t work = vectorized ? (count + kVec - 1) / kVec : count;
  TPCRT_LAUNCH(unaryKernel<Op>, gridFor(work, kThreads), kThreads, 0, stream, x,
               xType, y, yType, count, vectorized, op);
  return launchStatus(name);
}

template <typename Op>
Status launchBinary(const void *a, Storage aType, const void *b, Storage bType,
                    int64_t bCount, void *y, Storage yType, int64_t count,
                    Op op, cudaStream_t stream, const char *name) {
  if (count <= 0)
    return Status::ok();
  if (bCount <= 0 || count % bCount != 0)
    return Status::error(
        std::string(name) + ": rhs of " + std::to_string(bCount) +
        " elements does not tile lhs of " + std::to_string(count));
  bool vectorized = aligned16(a) && aligned16(b) && aligned16(y) &&
                    count >= kVec && (bCount == count || bCount % kVec == 0);
  int64_t work = vectorized ? (count + kVec - 1) / kVec : count;
  TPCRT_LAUNCH(binaryKernel<Op>, gridFor(work, kThreads), kThreads, 0, stream,
               a, aType, b, bType, bCount, y, yType, count, vectorized, op);
  return launchStatus(name);
}

//===----------------------------------------------------------------------===//
// Rotary
//===----------------------------------------------------------------------===//

/// rotary(_scaled) of x [outer, seq, heads, dim] (CpuKernels.cpp's rotary;
/// heads = 1 head-major). The
/// float arithmetic of the frequencies and of the rotation is written with
/// _rn intrinsics so that nothing is contracted into an FMA: the CPU's
/// scalar code has none, and then both compute the same fp32 values.
struct RotaryParams {
  const void *x = nullptr;
  Storage xType = Storage::F32;
  void *y = nullptr;
  Storage yType = Storage::F32;
  int64_t outer = 0, seq = 0, dim = 0, offset = 0;
  /// The rows of each position in an outer block (sequence-major: heads).
  int64_t heads = 1;
  /// Rows of `outer` each blockIdx.y handles.
  int64_t rowsPerSlice = 1;
  double theta = 0.0;
  bool inverse = false;
  /// 0: none (rotary); 1: linear; 2: llama3 (rotary_scaled).
  int scaling = 0;
  // The scaling's constants as CpuKernels.cpp's scaledInvFreq rounds them.
  float factor = 1.0f, lowWavelen = 0.0f, highWavelen = 0.0f;
  float oldMax = 0.0f, low = 0.0f, highMinusLow = 0.0f, twoPi = 0.0f;
};

/// scaledInvFreq of CpuKernels.cpp, operation for operation.
__device__ float scaledInvFreq(float invFreq, const RotaryParams &p) {
  if (p.scaling == 1)
    return __fdiv_rn(invFreq, p.factor);
  float wavelen = __fmul_rn(__fdiv_rn(1.0f, invFreq), p.twoPi);
  float llama = wavelen > p.lowWavelen ? __fdiv_rn(invFreq, p.factor) : invFreq;
  bool medium = !(wavelen < p.highWavelen) && !(wavelen > p.lowWavelen);
  if (!medium)
    return llama;
  float smooth =
      __fdiv_rn(__fsub_rn(__fmul_rn(__fdiv_rn(1.0f, wavelen), p.oldMax), p.low),
                p.highMinusLow);
  return __fadd_rn(
      __fdiv_rn(__fmul_rn(__fsub_rn(1.0f, smooth), llama), p.factor),
      __fmul_rn(smooth, llama));
}

/// A thread per (position, frequency) pair computes its angle once and
/// rotates that pair in blockIdx.y's rows of `outer`. pow, cos and sin run
/// in double and round to fp32: the CPU's double pow and glibc's cosf and
/// sinf give the same fp32 values but where a value lies within an ulp or
/// two of a rounding boundary (rare: a one-ulp difference).
__global__ void __launch_bounds__(kThreads) rotaryKernel(RotaryParams p) {
  int64_t half = p.dim / 2, pairs = p.seq * half;
  int64_t rowBegin = static_cast<int64_t>(blockIdx.y) * p.rowsPerSlice;
  int64_t rowEnd = min(p.outer, rowBegin + p.rowsPerSlice);
  for (int64_t t = firstThread(); t < pairs; t += threadStride()) {
    int64_t s, i;
    divMod(t, half, s, i);
    double invFreq = pow(p.theta, -2.0 * static_cast<double>(i) /
                                      static_cast<double>(p.dim));
    auto freq = static_cast<float>(invFreq);
    if (p.scaling)
      freq = scaledInvFreq(freq, p);
    float position = static_cast<float>(static_cast<double>(p.offset + s));
    float angle = __fmul_rn(position, freq);
    double sinAngle, cosAngle;
    sincos(static_cast<double>(angle), &sinAngle, &cosAngle);
    auto c = static_cast<float>(cosAngle);
    auto sn = static_cast<float>(sinAngle);
    if (p.inverse)
      sn = -sn;
    for (int64_t r = rowBegin * p.heads; r < rowEnd * p.heads; ++r) {
      int64_t o, h;
      divMod(r, p.heads, o, h);
      int64_t row = ((o * p.seq + s) * p.heads + h) * p.dim;
      float x1 = loadFloat(p.x, p.xType, row + i);
      float x2 = loadFloat(p.x, p.xType, row + i + half);
      storeFloat(p.y, p.yType, row + i,
                 __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, sn)));
      storeFloat(p.y, p.yType, row + i + half,
                 __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, sn)));
    }
  }
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// What a run reads of its call: addresses, storages.
struct Run {
  const KernelCall &call;
  const KernelArgs &args;
  const StepContext &context;

  const void *in(size_t j) const { return args.operands[j]; }
  void *out(size_t j) const { return args.results[j]; }
  Storage inType(size_t j) const { return storageOf(call.operands[j].dtype); }
  Storage outType(size_t j) const { return storageOf(call.results[j].dtype); }
  /// A dropout rate, 0 in evaluation (every element kept).
  double rate(size_t j) const {
    return context.evaluation ? 0.0 : call.floatAttrs[j];
  }
};

Status checkRate(const char *kernel, double rate) {
  if (!(rate >= 0.0 && rate < 1.0))
    return Status::error(std::string(kernel) + ": dropout rate " +
                         std::to_string(rate) + " is outside [0, 1)");
  return Status::ok();
}

} // namespace

Status cuda::applyMaskScale(const KernelCall &applyMask, const KernelArgs &args,
                            const char *kernel, float &scale) {
  if (applyMask.floatAttrs.empty())
    return Status::error(std::string(kernel) + ": the apply_mask has no rate");
  double rate =
      args.context && args.context->evaluation ? 0.0 : applyMask.floatAttrs[0];
  if (Status s = checkRate(kernel, rate); !s)
    return s;
  scale = dropoutScale(rate);
  return Status::ok();
}

namespace {

/// The draw of a dropout kernel as CpuDevice.cpp computes it: key from the
/// seed, the stream (int_attrs[0]) and the step; the first index from
/// int_attrs[1] and the microbatch; a split tensor's elements at their
/// global indices in the first result.
Status dropoutDraw(const Run &r, const char *kernel, double rate,
                   DropoutDraw &draw) {
  const KernelCall &call = r.call;
  const std::vector<int64_t> &ia = call.intAttrs;
  if (Status s = checkRate(kernel, rate); !s)
    return s;
  draw.setStream(r.context.seed, static_cast<uint64_t>(ia[0]), r.context.step,
                 rate);
  draw.firstIndex =
      (ia.size() == 2 ? ia[1] : 0) +
      static_cast<int64_t>(r.context.microbatch) * call.streamElements;
  if (draw.firstIndex < 0)
    return Status::error(std::string(kernel) + ": negative first index " +
                         std::to_string(draw.firstIndex));
  if (call.splits.empty())
    return Status::ok();
  size_t rank = call.globalShape.size();
  const std::vector<int64_t> &shape = call.results[0].shape;
  if (rank > static_cast<size_t>(kMaxBlockRank) || shape.size() != rank ||
      call.globalOffset.size() != rank)
    return Status::error(std::string(kernel) + ": a block of rank " +
                         std::to_string(rank) + " in a result of rank " +
                         std::to_string(shape.size()));
  GlobalIndex &index = draw.index;
  index.rank = static_cast<int>(rank);
  for (size_t d = 0; d < rank; ++d) {
    index.shape[d] = shape[d];
    index.globalShape[d] = call.globalShape[d];
    index.offset[d] = call.globalOffset[d];
  }
  return Status::ok();
}

Status runRotary(const Run &r) {
  const KernelCall &call = r.call;
  RotaryParams p;
  p.x = r.in(0);
  p.xType = r.inType(0);
  p.y = r.out(0);
  p.yType = r.outType(0);
  p.outer = call.outer;
  p.seq = call.seqQ;
  p.heads = call.heads;
  p.dim = call.headDim;
  p.offset = call.intAttrs[0];
  p.theta = call.floatAttrs[0];
  p.inverse = call.flags & 1;
  if (p.dim % 2 != 0)
    return Status::error("rotary: head dimension " + std::to_string(p.dim) +
                         " is odd");
  if (call.op == fb::OpCode::RotaryScaled) {
    const std::vector<double> &fa = call.floatAttrs;
    double low = fa[2], high = fa[3], old = fa[4];
    p.factor = static_cast<float>(fa[1]);
    if (low == 0.0) {
      p.scaling = 1;
    } else {
      p.scaling = 2;
      p.lowWavelen = static_cast<float>(old / low);
      p.highWavelen = static_cast<float>(old / high);
      p.oldMax = static_cast<float>(old);
      p.low = static_cast<float>(low);
      p.highMinusLow = static_cast<float>(high - low);
      p.twoPi = static_cast<float>(6.283185307179586476925);
    }
  }
  int64_t pairs = p.seq * (p.dim / 2);
  if (pairs <= 0 || p.outer <= 0)
    return Status::ok();
  // Enough slices of `outer` to fill the device when the pairs alone do
  // not; each slice recomputes its pairs' angles.
  int64_t slices = std::min<int64_t>(
      p.outer, std::max<int64_t>(1, (kFillThreads + pairs - 1) / pairs));
  slices = std::min<int64_t>(slices, 65535);
  p.rowsPerSlice = (p.outer + slices - 1) / slices;
  slices = (p.outer + p.rowsPerSlice - 1) / p.rowsPerSlice;
  dim3 grid(gridFor(pairs, kThreads), static_cast<unsigned>(slices));
  TPCRT_LAUNCH(rotaryKernel, grid, kThreads, 0, r.args.stream, p);
  return launchStatus("rotary");
}

Status runCopy(const Run &r, const char *name) {
  uint64_t bytes = r.call.operands[0].bytes;
  if (bytes == 0 || r.in(0) == r.out(0))
    return Status::ok();
  return cudaStatus(cudaMemcpyAsync(r.out(0), r.in(0), bytes,
                                    cudaMemcpyDeviceToDevice, r.args.stream),
                    name);
}

Status run(const Run &r) {
  const KernelCall &call = r.call;
  cudaStream_t stream = r.args.stream;
  bool flag0 = call.flags & 1;
  switch (call.op) {
  case fb::OpCode::Gelu:
    if (flag0)
      return launchUnary(r.in(0), r.inType(0), r.out(0), r.outType(0),
                         call.count, GeluTanh{}, stream, "gelu");
    return launchUnary(r.in(0), r.inType(0), r.out(0), r.outType(0), call.count,
                       GeluErf{}, stream, "gelu");
  case fb::OpCode::Silu:
    return launchUnary(r.in(0), r.inType(0), r.out(0), r.outType(0), call.count,
                       Silu{}, stream, "silu");
  case fb::OpCode::Add:
    if (call.operands[0].dtype == fb::DType::I64) {
      if (call.count <= 0)
        return Status::ok();
      if (call.rhsCount <= 0 || call.count % call.rhsCount != 0)
        return Status::error("add: rhs of " + std::to_string(call.rhsCount) +
                             " elements does not tile lhs of " +
                             std::to_string(call.count));
      TPCRT_LAUNCH(addInt64Kernel, gridFor(call.count, kThreads), kThreads, 0,
                   stream, static_cast<const int64_t *>(r.in(0)),
                   static_cast<const int64_t *>(r.in(1)), call.rhsCount,
                   static_cast<int64_t *>(r.out(0)), call.count);
      return launchStatus("add");
    }
    return launchBinary(r.in(0), r.inType(0), r.in(1), r.inType(1),
                        call.rhsCount, r.out(0), r.outType(0), call.count,
                        Add{}, stream, "add");
  case fb::OpCode::Mul:
    return launchBinary(r.in(0), r.inType(0), r.in(1), r.inType(1),
                        call.rhsCount, r.out(0), r.outType(0), call.count,
                        Mul{}, stream, "mul");
  case fb::OpCode::Dropout: {
    Dropout op;
    if (Status s = dropoutDraw(r, "dropout", r.rate(0), op.draw); !s)
      return s;
    return launchUnary(r.in(0), r.inType(0), r.out(0), r.outType(0), call.count,
                       op, stream, "dropout");
  }
  case fb::OpCode::DropoutMask: {
    DropoutDraw draw;
    if (Status s = dropoutDraw(r, "dropout_mask", r.rate(0), draw); !s)
      return s;
    if (call.count <= 0)
      return Status::ok();
    auto *mask = static_cast<uint8_t *>(r.out(0));
    const bool blocks = draw.drawsBlocks() && aligned16(mask);
    const int64_t work =
        blocks ? (call.count + 15) / 16 : call.count / 2 + call.count % 2;
    TPCRT_LAUNCH(dropoutMaskKernel, gridFor(work, kThreads), kThreads, 0,
                 stream, mask, call.count, draw, blocks);
    return launchStatus("dropout_mask");
  }
  case fb::OpCode::ApplyMask: {
    double rate = r.rate(0);
    if (Status s = checkRate("apply_mask", rate); !s)
      return s;
    return launchBinary(r.in(0), r.inType(0), r.in(1), Storage::U8, call.count,
                        r.out(0), r.outType(0), call.count,
                        ApplyMask{dropoutScale(rate)}, stream, "apply_mask");
  }
  case fb::OpCode::Rotary:
  case fb::OpCode::RotaryScaled:
    return runRotary(r);
  case fb::OpCode::GeluGrad:
    if (flag0)
      return launchBinary(r.in(0), r.inType(0), r.in(1), r.inType(1),
                          call.count, r.out(0), r.outType(0), call.count,
                          GeluTanhGrad{}, stream, "gelu_grad");
    return launchBinary(r.in(0), r.inType(0), r.in(1), r.inType(1), call.count,
                        r.out(0), r.outType(0), call.count, GeluErfGrad{},
                        stream, "gelu_grad");
  case fb::OpCode::SiluGrad:
    return launchBinary(r.in(0), r.inType(0), r.in(1), r.inType(1), call.count,
                        r.out(0), r.outType(0), call.count, SiluGrad{}, stream,
                        "silu_grad");
  case fb::OpCode::Copy:
    return runCopy(r, "copy");
  case fb::OpCode::TestCopy:
    return runCopy(r, "test_copy");
  case fb::OpCode::Cast:
    if (call.operands[0].dtype == call.results[0].dtype)
      return runCopy(r, "cast");
    return launchUnary(r.in(0), r.inType(0), r.out(0), r.outType(0), call.count,
                       Identity{}, stream, "cast");
  case fb::OpCode::Zeros:
    if (call.results[0].bytes == 0)
      return Status::ok();
    return cudaStatus(
        cudaMemsetAsync(r.out(0), 0, call.results[0].bytes, stream), "zeros");
  default:
    return Status::error("not a pointwise kernel");
  }
}

} // namespace

Status cuda::castMany(const CastTensor *tensors, int numTensors,
                      int64_t mostElements, cudaStream_t stream) {
  if (numTensors <= 0 || mostElements <= 0)
    return Status::ok();
  auto y = static_cast<unsigned>(std::min(numTensors, 65535));
  // Blocks enough for the largest entry's vector work, within 2^17 in all.
  int64_t work = (mostElements + kVec - 1) / kVec;
  int64_t x = std::min<int64_t>(
      (work + kThreads - 1) / kThreads,
      std::max<int64_t>(1, (int64_t(1) << 17) / static_cast<int64_t>(y)));
  TPCRT_LAUNCH(castManyKernel, dim3(static_cast<unsigned>(x), y), kThreads, 0,
               stream, tensors, numTensors);
  return launchStatus("cast (batch)");
}

bool cuda::isPointwiseKernel(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::Gelu:
  case fb::OpCode::Silu:
  case fb::OpCode::Add:
  case fb::OpCode::Mul:
  case fb::OpCode::Dropout:
  case fb::OpCode::DropoutMask:
  case fb::OpCode::ApplyMask:
  case fb::OpCode::Rotary:
  case fb::OpCode::RotaryScaled:
  case fb::OpCode::GeluGrad:
  case fb::OpCode::SiluGrad:
  case fb::OpCode::Copy:
  case fb::OpCode::TestCopy:
  case fb::OpCode::Cast:
  case fb::OpCode::Zeros:
    return true;
  default:
    return isLayoutKernel(op);
  }
}

uint64_t cuda::pointwiseScratchBytes(const KernelCall &call) {
  return isLayoutKernel(call.op) ? layoutScratchBytes(call) : 0;
}

Status cuda::runPointwiseKernel(const KernelCall &call,
                                const KernelArgs &args) {
  if (isLayoutKernel(call.op))
    return runLayoutKernel(call, args);
  static const StepContext kNoContext;
  Run r{call, args, args.context ? *args.context : kNoContext};
  return run(r);
}
