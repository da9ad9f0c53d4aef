//===- OptimizerKernels.cu - the training driver and optimizers on the GPU ===//
//
// loss_mean, count_targets, inverse_count, adamw_update, sgd_update(_plain),
// sum_squares, clip_coefficient and lr_schedule, and adamwUpdateMany
// (CudaKernels.h): the reduction family's share that mirrors
// runtime/cpu/CpuOptimizerKernels.cpp (ReductionKernels.cu dispatches here).
//
// As there, the optimizers compute in float with their scalars in double,
// in torch's order of operations; every float operation is written with
// __f*_rn so that nvcc fuses nothing into an FMA the CPU does not have, and
// an element's update is the CPU's bit for bit (bias corrections use the
// device's pow and the schedule its cos: within an ulp of glibc's in
// double). Scalars that live in device memory (lr, step, grad_scale, sums,
// counts) are read on the device.
//
// The CPU kernels return an error for a step below 1, a negative count or
// sum of squares; the GPU cannot report one synchronously: an optimizer
// step below 1 leaves its tensors unchanged, a negative count gives 0, a
// negative (or NaN) sum of squares a NaN norm and coefficient 1, and
// lr_schedule computes its formula for any step.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"
#include "CudaKernels.h"
#include "KernelBatches.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace tpcrt::cuda {

namespace {

constexpr unsigned kThreads = 256;
/// The most blocks of an optimizer launch: each block computes the step's
/// scalars once, then strides over its elements.
constexpr int64_t kMaxUpdateBlocks = 2048;

unsigned updateGrid(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(
      std::min(std::max<int64_t>(blocks, 1), kMaxUpdateBlocks));
}


//===----------------------------------------------------------------------===//
// Training driver scalars.
//===----------------------------------------------------------------------===//

__global__ void lossMeanKernel(const float *sum, const int64_t *count,
                               float *out) {
  int64_t n = *count;
  *out = n <= 0 ? 0.0f
                : static_cast<float>(static_cast<double>(*sum) /
                                     static_cast<double>(n));
}

__global__ void inverseCountKernel(const int64_t *count, float *out) {
  int64_t n = *count;
  *out = n <= 0 ? 0.0f : static_cast<float>(1.0 / static_cast<double>(n));
}

/// Labels that are not ignoreIndex (one block; integer sums are exact).
__global__ void countTargetsKernel(const int64_t *labels, int64_t count,
                                   int64_t ignoreIndex, int64_t *out) {
  TPCRT_SHARED(long long, shared, [32]);
  long long n = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    n += labels[i] != ignoreIndex;
  for (int offset = 16; offset > 0; offset >>= 1)
    n += __shfl_xor_sync(0xffffffffu, n, offset);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    shared[warp] = n;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long total = 0;
    for (int w = 0; w < static_cast<int>((blockDim.x + 31) >> 5); ++w)
      total += shared[w];
    *out = total;
  }
}

//===----------------------------------------------------------------------===//
// Optimizers (cpu::adamwUpdate, cpu::sgdUpdate).
//===----------------------------------------------------------------------===//

/// What the float attributes give, as the CPU rounds them.
struct UpdateConstants {
  // AdamW.
  float beta1, beta2, oneMinusBeta1, oneMinusBeta2, eps;
  double beta1Exact, beta2Exact, weightDecay;
  // SGD.
  float momentum, decay;
  bool hasDecay;
};

UpdateConstants adamwConstants(double beta1, double beta2, double eps,
                               double weightDecay) {
  UpdateConstants k{};
  k.beta1 = static_cast<float>(beta1);
  k.beta2 = static_cast<float>(beta2);
  k.oneMinusBeta1 = static_cast<float>(1.0 - beta1);
  k.oneMinusBeta2 = static_cast<float>(1.0 - beta2);
  k.eps = static_cast<float>(eps);
  k.beta1Exact = beta1;
  k.beta2Exact = beta2;
  k.weightDecay = weightDecay;
  return k;
}

UpdateConstants sgdConstants(double momentum, double weightDecay) {
  UpdateConstants k{};
  k.momentum = static_cast<float>(momentum);
  k.decay = static_cast<float>(weightDecay);
  k.hasDecay = weightDecay != 0.0;
  return k;
}

/// A step's scalars, from lr, step and grad_scale in device memory.
struct StepScalars {
  float decay, negStepSize, biasCorrection2Sqrt, negLr, gradScale;
  bool skip;
};

__device__ StepScalars adamwScalars(const UpdateConstants &k, const float *lr,
                                    const int64_t *step,
                                    const float *gradScale) {
  StepScalars s{};
  s.gradScale = gradScale ? *gradScale : 1.0f;
  s.negLr = -*lr;
  int64_t t = *step;
  s.skip = t < 1;
  double lrValue = *lr;
  s.decay =
      static_cast<float>(__dsub_rn(1.0, __dmul_rn(lrValue, k.weightDecay)));
  auto stepValue = static_cast<double>(t);
  double biasCorrection1 = __dsub_rn(1.0, pow(k.beta1Exact, stepValue));
  double biasCorrection2 = __dsub_rn(1.0, pow(k.beta2Exact, stepValue));
  s.negStepSize = static_cast<float>(-__ddiv_rn(lrValue, biasCorrection1));
  s.biasCorrection2Sqrt = static_cast<float>(__dsqrt_rn(biasCorrection2));
  return s;
}

__device__ StepScalars sgdScalars(const float *lr, const float *gradScale) {
  StepScalars s{};
  s.gradScale = gradScale ? *gradScale : 1.0f;
  s.negLr = -*lr;
  return s;
}

/// One element's AdamW step on values: param, exp_avg and exp_avg_sq
/// updated in place from the gradient.
__device__ __forceinline__ void adamwValues(float &param, float grad,
                                            float &expAvg, float &expAvgSq,
                                            const UpdateConstants &k,
                                            const StepScalars &s) {
  float g = __fmul_rn(grad, s.gradScale);
  float p = __fmul_rn(param, s.decay);
  float m =
      __fadd_rn(__fmul_rn(expAvg, k.beta1), __fmul_rn(k.oneMinusBeta1, g));
  float v = __fadd_rn(__fmul_rn(expAvgSq, k.beta2),
                      __fmul_rn(__fmul_rn(k.oneMinusBeta2, g), g));
  float denom =
      __fadd_rn(__fdiv_rn(__fsqrt_rn(v), s.biasCorrection2Sqrt), k.eps);
  expAvg = m;
  expAvgSq = v;
  param = __fadd_rn(p, __fdiv_rn(__fmul_rn(s.negStepSize, m), denom));
}

__device__ __forceinline__ void
adamwElement(float *param, const float *grad, float *expAvg, float *expAvgSq,
             int64_t i, const UpdateConstants &k, const StepScalars &s) {
  float p = param[i], m = expAvg[i], v = expAvgSq[i];
  adamwValues(p, grad[i], m, v, k, s);
  expAvg[i] = m;
  expAvgSq[i] = v;
  param[i] = p;
}

/// Four consecutive elements' AdamW steps (their gradients g, loaded) from
/// 16-byte loads and stores:
/// four times the bytes in flight of a load per array (the update moves
/// 28 bytes an element and computes little: its speed is the memory's).
__device__ __forceinline__ void adamwQuad(float *param, float4 g, float *expAvg,
                                          float *expAvgSq, int64_t i,
                                          const UpdateConstants &k,
                                          const StepScalars &s) {
  float4 p = *vectorAt<float4>(param + i);
  float4 m = *vectorAt<float4>(expAvg + i);
  float4 v = *vectorAt<float4>(expAvgSq + i);
  adamwValues(p.x, g.x, m.x, v.x, k, s);
  adamwValues(p.y, g.y, m.y, v.y, k, s);
  adamwValues(p.z, g.z, m.z, v.z, k, s);
  adamwValues(p.w, g.w, m.w, v.w, k, s);
  *vectorAt<float4>(expAvg + i) = m;
  *vectorAt<float4>(expAvgSq + i) = v;
  *vectorAt<float4>(param + i) = p;
}

/// The elements of `count` that thread threadIdx.x of block `block` of
/// `blocks` visits, in order: quads of 4 consecutive elements (the last
/// maybe shorter), quad block * blockDim.x + threadIdx.x and then every
/// blocks * blockDim.x quads; body(first, n) for each. squaresPartialsKernel
/// and updateManyKernel sum a gradient's squares in this order, so that
/// their partials are the same bits.
template <typename Body>
__device__ __forceinline__ void forEachQuad(int64_t count, unsigned block,
                                            unsigned blocks, Body body) {
  int64_t quads = (count + 3) / 4;
  int64_t stride = static_cast<int64_t>(blocks) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(block) * blockDim.x + threadIdx.x;
       q < quads; q += stride) {
    int64_t first = 4 * q;
    body(first, static_cast<int>(min(count - first, int64_t(4))));
  }
}

/// buffer null: sgd_update_plain (param -= lr * d).
__device__ __forceinline__ void sgdElement(float *param, const float *grad,
                                           float *buffer, int64_t i,
                                           const UpdateConstants &k,
                                           const StepScalars &s) {
  float d = __fmul_rn(grad[i], s.gradScale);
  if (k.hasDecay)
    d = __fadd_rn(d, __fmul_rn(k.decay, param[i]));
  if (!buffer) {
    param[i] = __fadd_rn(param[i], __fmul_rn(s.negLr, d));
    return;
  }
  float b = __fadd_rn(__fmul_rn(buffer[i], k.momentum), d);
  buffer[i] = b;
  param[i] = __fadd_rn(param[i], __fmul_rn(s.negLr, b));
}

__global__ void adamwKernel(float *param, const float *grad, float *expAvg,
                            float *expAvgSq, int64_t count, UpdateConstants k,
                            const float *lr, const int64_t *step,
                            const float *gradScale) {
  TPCRT_SHARED(StepScalars, shared);
  if (threadIdx.x == 0)
    shared = adamwScalars(k, lr, step, gradScale);
  __syncthreads();
  StepScalars s = shared;
  if (s.skip)
    return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    adamwElement(param, grad, expAvg, expAvgSq, i, k, s);
}

__global__ void sgdKernel(float *param, const float *grad, float *buffer,
                          int64_t count, UpdateConstants k, const float *lr,
                          const float *gradScale) {
  StepScalars s = sgdScalars(lr, gradScale);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    sgdElement(param, grad, buffer, i, k, s);
}

/// `sum` + v², in double, _rn so that the two kernels that sum squares
/// (squaresPartialsKernel, updateManyKernel) round alike.
__device__ __forceinline__ double addSquare(double sum, float v) {
  double d = v;
  return __dadd_rn(sum, __dmul_rn(d, d));
}

/// The sum_squares partials' blocks per operand (their row's length).
constexpr unsigned kSquaresBlocks = kSquaresPartialBlocks;

/// adamwUpdateMany: blockIdx.y strides over the tensors, blockIdx.x over
/// each one's elements. state1 null: SGD (state0 its buffer, or null).
/// With `partials` (gridDim.x is then kSquaresBlocks) each tensor with a
/// squaresOperand j also sums its gradient's squares as
/// squaresPartialsKernel does, into partials[j][blockIdx.x] (a skipped
/// AdamW step too: the norm is reported all the same).
__global__ void updateManyKernel(const OptimizerTensor *tensors, int numTensors,
                                 UpdateConstants k, const float *lr,
                                 const int64_t *step, const float *gradScale,
                                 double *partials) {
  TPCRT_SHARED(StepScalars, shared);
  TPCRT_SHARED(double, sums, [32]);
  if (threadIdx.x == 0)
    shared =
        step ? adamwScalars(k, lr, step, gradScale) : sgdScalars(lr, gradScale);
  __syncthreads();
  StepScalars s = shared;
  for (int t = blockIdx.y; t < numTensors; t += gridDim.y) {
    OptimizerTensor tensor = tensors[t];
    bool adamw = tensor.state1 != nullptr;
    bool updates = !(adamw && (!step || s.skip));
    bool squares = partials && tensor.squaresOperand >= 0;
    if (!updates && !squares)
      continue;
    // AdamW on whole quads of 16-byte aligned arrays: vector accesses.
    bool vectors = adamw && ((reinterpret_cast<uintptr_t>(tensor.param) |
                              reinterpret_cast<uintptr_t>(tensor.grad) |
                              reinterpret_cast<uintptr_t>(tensor.state0) |
                              reinterpret_cast<uintptr_t>(tensor.state1)) %
                                 16 ==
                             0);
    double sum = 0.0;
    forEachQuad(tensor.count, blockIdx.x, gridDim.x, [&](int64_t first, int n) {
      if (updates && vectors && n == 4) {
        float4 g = *vectorAt<float4>(tensor.grad + first);
        if (squares) {
          sum = addSquare(sum, g.x);
          sum = addSquare(sum, g.y);
          sum = addSquare(sum, g.z);
          sum = addSquare(sum, g.w);
        }
        adamwQuad(tensor.param, g, tensor.state0, tensor.state1, first, k, s);
        return;
      }
      if (squares)
        for (int j = 0; j < n; ++j)
          sum = addSquare(sum, tensor.grad[first + j]);
      if (!updates)
        return;
      for (int j = 0; j < n; ++j) {
        if (adamw)
          adamwElement(tensor.param, tensor.grad, tensor.state0, tensor.state1,
                       first + j, k, s);
        else
          sgdElement(tensor.param, tensor.grad, tensor.state0, first + j, k, s);
      }
    });
    if (squares) {
      sum = blockSumOf<double>(sum, sums);
      if (threadIdx.x == 0)
        partials[static_cast<int64_t>(tensor.squaresOperand) * kSquaresBlocks +
                 blockIdx.x] = sum;
    }
  }
}

//===----------------------------------------------------------------------===//
// sum_squares: per operand kSquaresBlocks double partials (a block-stride
// loop, then a block sum), then one block adds each operand's partials and
// the operands' sums in operand order, as the CPU adds its totals.
//===----------------------------------------------------------------------===//

/// Operands per partials launch (their pointers go as kernel parameters).
constexpr int kSquaresBatch = 64;

struct SquaresBatch {
  const void *data[kSquaresBatch];
  int64_t count[kSquaresBatch];
  Storage type[kSquaresBatch];
};

__global__ void squaresPartialsKernel(SquaresBatch batch, double *partials) {
  TPCRT_SHARED(double, shared, [32]);
  int j = blockIdx.y;
  const void *x = batch.data[j];
  Storage type = batch.type[j];
  int64_t count = batch.count[j];
  double sum = 0.0;
  // updateManyKernel's order (forEachQuad).
  forEachQuad(count, blockIdx.x, gridDim.x, [&](int64_t first, int n) {
    for (int j = 0; j < n; ++j)
      sum = addSquare(sum, loadFloat(x, type, first + j));
  });
  sum = blockSumOf<double>(sum, shared);
  if (threadIdx.x == 0)
    partials[static_cast<int64_t>(j) * kSquaresBlocks + blockIdx.x] = sum;
}

/// One block of kSquaresBlocks threads.
__global__ void squaresTotalKernel(const double *partials, int64_t operands,
                                   float *out) {
  TPCRT_SHARED(double, shared, [32]);
  double total = 0.0;
  for (int64_t j = 0; j < operands; ++j)
    total += blockSumOf<double>(partials[j * kSquaresBlocks + threadIdx.x], shared);
  if (threadIdx.x == 0)
    *out = static_cast<float>(total);
}

Status runSumSquares(const KernelCall &call, const KernelArgs &args) {
  const char *name = "sum_squares";
  auto operands = static_cast<int64_t>(call.operands.size());
  if (args.scratchBytes < optimizerScratchBytes(call))
    return Status::error(std::string(name) + ": scratch too small");
  auto *partials = static_cast<double *>(args.scratch);
  for (int64_t first = 0; first < operands; first += kSquaresBatch) {
    int n =
        static_cast<int>(std::min<int64_t>(kSquaresBatch, operands - first));
    SquaresBatch batch{};
    for (int j = 0; j < n; ++j) {
      batch.data[j] = args.operands[first + j];
      batch.count[j] = call.operands[first + j].elements;
      batch.type[j] = storageOf(call.operands[first + j].dtype);
    }
    TPCRT_LAUNCH(squaresPartialsKernel, dim3(kSquaresBlocks, n), kThreads, 0,
                 args.stream, batch, partials + first * kSquaresBlocks);
    if (Status s = launchStatus(name); !s)
      return s;
  }
  return runSumSquaresTotal(call, args);
}

//===----------------------------------------------------------------------===//
// clip_coefficient and lr_schedule: one thread each.
//===----------------------------------------------------------------------===//

__global__ void clipCoefficientKernel(const float *sumSquares, bool clips,
                                      float maxNorm, float *norm,
                                      float *coefficient) {
  float n = __fsqrt_rn(*sumSquares);
  *norm = n;
  float c = 1.0f;
  if (clips) {
    float q = __fdiv_rn(maxNorm, __fadd_rn(n, 1e-6f));
    c = q < 1.0f ? q : 1.0f; // std::min(1.0f, q)
  }
  *coefficient = c;
}

struct LrConstants {
  double lr, minLr;
  int64_t warmup, decay;
  bool cosine;
};

__global__ void lrScheduleKernel(const int64_t *step, LrConstants k,
                                 float *out) {
  constexpr double kPi = 3.14159265358979323846;
  double value = k.lr;
  if (k.cosine) {
    int64_t s = *step;
    auto t = static_cast<double>(s);
    auto warmup = static_cast<double>(k.warmup);
    auto decay = static_cast<double>(k.decay);
    if (s <= k.warmup) {
      value = __ddiv_rn(__dmul_rn(k.lr, t), warmup);
    } else {
      double progress =
          fmin(1.0, __ddiv_rn(__dsub_rn(t, warmup), __dsub_rn(decay, warmup)));
      value = __dadd_rn(
          k.minLr, __dmul_rn(__dmul_rn(__dsub_rn(k.lr, k.minLr), 0.5),
                             __dadd_rn(1.0, cos(__dmul_rn(kPi, progress)))));
    }
  }
  *out = static_cast<float>(value);
}

} // namespace

bool isOptimizerKernel(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::LossMean:
  case fb::OpCode::CountTargets:
  case fb::OpCode::InverseCount:
  case fb::OpCode::AdamWUpdate:
  case fb::OpCode::SgdUpdate:
  case fb::OpCode::SgdUpdatePlain:
  case fb::OpCode::SumSquares:
  case fb::OpCode::ClipCoefficient:
  case fb::OpCode::LrSchedule:
    return true;
  default:
    return false;
  }
}

uint64_t optimizerScratchBytes(const KernelCall &call) {
  if (call.op != fb::OpCode::SumSquares)
    return 0;
  return alignScratch(call.operands.size() * kSquaresBlocks * sizeof(double));
}

Status runOptimizerKernel(const KernelCall &call, const KernelArgs &args) {
  auto operand = [&](size_t j) { return args.operands[j]; };
  auto result = [&](size_t j) { return args.results[j]; };
  auto floats = [](void *p) { return static_cast<float *>(p); };
  auto ints = [](void *p) { return static_cast<int64_t *>(p); };
  // The optional grad_scale operand at `j`.
  auto scale = [&](size_t j) {
    return call.operands.size() > j ? floats(operand(j)) : nullptr;
  };
  const std::vector<double> &fa = call.floatAttrs;
  cudaStream_t stream = args.stream;
  switch (call.op) {
  case fb::OpCode::LossMean:
    TPCRT_LAUNCH(lossMeanKernel, 1, 1, 0, stream, floats(operand(0)),
                 ints(operand(1)), floats(result(0)));
    return launchStatus("loss_mean");
  case fb::OpCode::InverseCount:
    TPCRT_LAUNCH(inverseCountKernel, 1, 1, 0, stream, ints(operand(0)),
                 floats(result(0)));
    return launchStatus("inverse_count");
  case fb::OpCode::CountTargets:
    TPCRT_LAUNCH(countTargetsKernel, 1, 1024, 0, stream, ints(operand(0)),
                 call.count, call.intAttrs[0], ints(result(0)));
    return launchStatus("count_targets");
  case fb::OpCode::AdamWUpdate:
    // The results are the param and state operands themselves.
    TPCRT_LAUNCH(adamwKernel, updateGrid(call.count), kThreads, 0, stream,
                 floats(result(0)), floats(operand(1)), floats(result(1)),
                 floats(result(2)), call.count,
                 adamwConstants(fa[0], fa[1], fa[2], fa[3]), floats(operand(4)),
                 ints(operand(5)), scale(6));
    return launchStatus("adamw_update");
  case fb::OpCode::SgdUpdate:
    TPCRT_LAUNCH(sgdKernel, updateGrid(call.count), kThreads, 0, stream,
                 floats(result(0)), floats(operand(1)), floats(result(1)),
                 call.count, sgdConstants(fa[0], fa[1]), floats(operand(3)),
                 scale(4));
    return launchStatus("sgd_update");
  case fb::OpCode::SgdUpdatePlain:
    TPCRT_LAUNCH(sgdKernel, updateGrid(call.count), kThreads, 0, stream,
                 floats(result(0)), floats(operand(1)), nullptr, call.count,
                 sgdConstants(0.0, fa[0]), floats(operand(2)), scale(3));
    return launchStatus("sgd_update_plain");
  case fb::OpCode::SumSquares:
    return runSumSquares(call, args);
  case fb::OpCode::ClipCoefficient:
    TPCRT_LAUNCH(clipCoefficientKernel, 1, 1, 0, stream, floats(operand(0)),
                 fa[0] > 0.0, static_cast<float>(fa[0]), floats(result(0)),
                 floats(result(1)));
    return launchStatus("clip_coefficient");
  case fb::OpCode::LrSchedule: {
    LrConstants k{fa[0], fa[1], call.intAttrs[0], call.intAttrs[1],
                  (call.flags & 1) != 0};
    TPCRT_LAUNCH(lrScheduleKernel, 1, 1, 0, stream, ints(operand(0)), k,
                 floats(result(0)));
    return launchStatus("lr_schedule");
  }
  default:
    return Status::error("not an optimizer kernel");
  }
}

Status runSumSquaresTotal(const KernelCall &call, const KernelArgs &args) {
  if (args.scratchBytes < optimizerScratchBytes(call))
    return Status::error("sum_squares: scratch too small");
  TPCRT_LAUNCH(squaresTotalKernel, 1, kSquaresBlocks, 0, args.stream,
               static_cast<const double *>(args.scratch),
               static_cast<int64_t>(call.operands.size()),
               static_cast<float *>(args.results[0]));
  return launchStatus("sum_squares");
}

Status adamwUpdateMany(const OptimizerTensor *tensors, int numTensors,
                       int64_t mostElements, const float *lr,
                       const int64_t *step, const float *gradScale,
                       double beta1, double beta2, double eps,
                       double weightDecay, double *squaresPartials,
                       cudaStream_t stream) {
  if (numTensors <= 0 || mostElements <= 0)
    return Status::ok();
  // SGD lists (state1 null) take beta1 as the momentum.
  UpdateConstants k = adamwConstants(beta1, beta2, eps, weightDecay);
  UpdateConstants sgd = sgdConstants(beta1, weightDecay);
  k.momentum = sgd.momentum;
  k.decay = sgd.decay;
  k.hasDecay = sgd.hasDecay;
  auto y = static_cast<unsigned>(std::min(numTensors, 65535));
  // Summing squares, the blocks over a tensor are sum_squares' own.
  int64_t x =
      squaresPartials
          ? int64_t(kSquaresBlocks)
          : std::min<int64_t>(updateGrid(mostElements),
                              std::max<int64_t>(1, (int64_t(1) << 17) / y));
  TPCRT_LAUNCH(updateManyKernel, dim3(static_cast<unsigned>(x), y), kThreads, 0,
               stream, tensors, numTensors, k, lr, step, gradScale,
               squaresPartials);
  return launchStatus("adamw_update (many)");
}

} // namespace tpcrt::cuda
