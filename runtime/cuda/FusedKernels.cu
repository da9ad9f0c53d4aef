//===- FusedKernels.cu - kernel pairs the CUDA device runs as one ---------===//
//
// apply_mask + add (FusionPlan.h): z = y + r (or r + y) with y = x * mask *
// scale, in one pass over x, the mask and r, y never stored. The values are
// the unfused pair's bit for bit: the product is rounded to y's storage as
// the apply_mask's store would, the sum keeps the add's operand order, and
// both are written with _rn intrinsics so that nvcc does not contract
// x * scale + r into an FMA (the unfused kernels round in between).
//
// Grid-stride, 8 elements a thread at a time (16-byte loads of 16-bit
// storage) when every pointer is 16-byte aligned. z may be the very bytes
// of x or r (the plan refuses any other overlap): each thread reads its
// elements before it writes them.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"
#include "FusionPlan.h"

#include <cstring>
#include <string>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

constexpr unsigned kThreads = 256;

struct MaskAdd {
  const void *x = nullptr;
  Storage xType = Storage::F32;
  const uint8_t *mask = nullptr;
  const void *r = nullptr;
  Storage rType = Storage::F32;
  void *z = nullptr;
  Storage zType = Storage::F32;
  /// The apply_mask's result's storage: its rounding is kept.
  Storage yType = Storage::F32;
  float scale = 1.0f;
  /// y is the add's lhs (else its rhs).
  bool maskedLhs = true;
  int64_t count = 0;

  /// PointwiseKernels.cu's ApplyMask, then its Add, as the pair computes
  /// them.
  __device__ __forceinline__ float operator()(float xv, uint8_t m,
                                              float rv) const {
    float y = roundTo(m != 0 ? __fmul_rn(xv, scale) : 0.0f, yType);
    return maskedLhs ? __fadd_rn(y, rv) : __fadd_rn(rv, y);
  }
};

__global__ void __launch_bounds__(kThreads)
    applyMaskAddKernel(MaskAdd p, bool vectorized) {
  int64_t first = firstThread(), stride = threadStride();
  int64_t vectorEnd = vectorized ? p.count / kVec * kVec : 0;
  for (int64_t base = first * kVec; base < vectorEnd; base += stride * kVec) {
    float x[kVec], r[kVec];
    loadVec(p.x, p.xType, base, x);
    loadVec(p.r, p.rType, base, r);
    uint2 raw = *vectorAt<uint2>(p.mask + base);
    uint8_t m[kVec];
    memcpy(m, &raw, sizeof(raw));
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      x[k] = p(x[k], m[k], r[k]);
    storeVec(p.z, p.zType, base, x);
  }
  for (int64_t i = vectorEnd + first; i < p.count; i += stride)
    storeFloat(
        p.z, p.zType, i,
        p(loadFloat(p.x, p.xType, i), p.mask[i], loadFloat(p.r, p.rType, i)));
}

bool isFloatStorage(Storage type) {
  return type == Storage::F32 || type == Storage::BF16 || type == Storage::F16;
}

} // namespace

Status cuda::runApplyMaskAdd(const KernelCall &applyMask, const KernelCall &add,
                             const KernelArgs &maskArgs,
                             const KernelArgs &addArgs) {
  static const char kName[] = "apply_mask + add";
  if (applyMask.op != fb::OpCode::ApplyMask || add.op != fb::OpCode::Add ||
      applyMask.operands.size() != 2 || applyMask.results.size() != 1 ||
      applyMask.floatAttrs.empty() || add.operands.size() != 2 ||
      add.results.size() != 1)
    return Status::error(std::string(kName) + ": not an apply_mask and add");
  uint32_t y = applyMask.results[0].buffer;
  bool maskedLhs = add.operands[0].buffer == y;
  if (!maskedLhs && add.operands[1].buffer != y)
    return Status::error(std::string(kName) +
                         ": the add does not read the mask's result");
  if (add.rhsCount != add.count || add.count != applyMask.count)
    return Status::error(
        std::string(kName) + ": element counts differ (apply_mask " +
        std::to_string(applyMask.count) + ", add " + std::to_string(add.count) +
        " and " + std::to_string(add.rhsCount) + ")");
  // The rate as the apply_mask's run sees it: 0 in evaluation.
  double rate = maskArgs.context && maskArgs.context->evaluation
                    ? 0.0
                    : applyMask.floatAttrs[0];
  if (!(rate >= 0.0 && rate < 1.0))
    return Status::error(std::string(kName) + ": dropout rate " +
                         std::to_string(rate) + " is outside [0, 1)");
  MaskAdd p;
  p.x = maskArgs.operands[0];
  p.xType = storageOf(applyMask.operands[0].dtype);
  p.mask = static_cast<const uint8_t *>(maskArgs.operands[1]);
  p.r = addArgs.operands[maskedLhs ? 1 : 0];
  p.rType = storageOf(add.operands[maskedLhs ? 1 : 0].dtype);
  p.z = addArgs.results[0];
  p.zType = storageOf(add.results[0].dtype);
  p.yType = storageOf(applyMask.results[0].dtype);
  p.scale = dropoutScale(rate);
  p.maskedLhs = maskedLhs;
  p.count = add.count;
  if (!isFloatStorage(p.xType) || !isFloatStorage(p.rType) ||
      !isFloatStorage(p.zType) || !isFloatStorage(p.yType) ||
      applyMask.operands[1].dtype != fb::DType::U8)
    return Status::error(std::string(kName) + ": unexpected dtypes");
  if (p.count <= 0)
    return Status::ok();
  bool vectorized = aligned16(p.x) && aligned16(p.mask) && aligned16(p.r) &&
                    aligned16(p.z) && p.count >= kVec;
  int64_t work = vectorized ? (p.count + kVec - 1) / kVec : p.count;
  TPCRT_LAUNCH(applyMaskAddKernel, gridFor(work, kThreads), kThreads, 0,
               addArgs.stream, p, vectorized);
  return launchStatus(kName);
}
