//===- FusedKernels.cu - kernel groups the CUDA device runs as one --------===//
//
// apply_mask + add (FusionPlan.h): z = y + r (or r + y) with y = x * mask *
// scale, in one pass over x, the mask and r, y never stored. The values are
// the unfused pair's bit for bit: the product is rounded to y's storage as
// the apply_mask's store would, the sum keeps the add's operand order, and
// both are written with _rn intrinsics so that nvcc does not contract
// x * scale + r into an FMA (the unfused kernels round in between). A bias
// add before them (add + apply_mask + add, or add + add without the mask):
// x + b[i mod |b|], rounded to the bias add's storage, takes x's place.
//
// Grid-stride, 8 elements a thread at a time (16-byte loads of 16-bit
// storage) when every pointer is 16-byte aligned (and the bias a multiple
// of 8 elements). z may be the very bytes of x or r (the plan refuses any
// other overlap): each thread reads its elements before it writes them.
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
  /// The bias added to x first (a group of three, or a bias add + add):
  /// biasCount elements repeated over x, the sum rounded to biasedType.
  const void *bias = nullptr;
  Storage biasType = Storage::F32, biasedType = Storage::F32;
  int64_t biasCount = 0;
  /// Null for a bias add + add: y is the biased x.
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

  /// PointwiseKernels.cu's Add (the bias), ApplyMask, then its Add, as the
  /// unfused kernels compute them.
  template <bool kBias, bool kMask>
  __device__ __forceinline__ float apply(float xv, float bv, uint8_t m,
                                         float rv) const {
    if (kBias)
      xv = roundTo(__fadd_rn(xv, bv), biasedType);
    float y = xv;
    if (kMask)
      y = roundTo(m != 0 ? __fmul_rn(xv, scale) : 0.0f, yType);
    return maskedLhs ? __fadd_rn(y, rv) : __fadd_rn(rv, y);
  }
};

template <bool kBias, bool kMask>
__global__ void __launch_bounds__(kThreads)
    maskAddKernel(MaskAdd p, bool vectorized) {
  int64_t first = firstThread(), stride = threadStride();
  int64_t vectorEnd = vectorized ? p.count / kVec * kVec : 0;
  for (int64_t base = first * kVec; base < vectorEnd; base += stride * kVec) {
    float x[kVec], r[kVec], b[kVec] = {};
    uint8_t m[kVec] = {};
    loadVec(p.x, p.xType, base, x);
    loadVec(p.r, p.rType, base, r);
    // biasCount is a multiple of kVec here: b's kVec elements are one run.
    if (kBias)
      loadVec(p.bias, p.biasType, modFast(base, p.biasCount), b);
    if (kMask) {
      uint2 raw = *vectorAt<uint2>(p.mask + base);
      memcpy(m, &raw, sizeof(raw));
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      x[k] = p.apply<kBias, kMask>(x[k], b[k], m[k], r[k]);
    storeVec(p.z, p.zType, base, x);
  }
  for (int64_t i = vectorEnd + first; i < p.count; i += stride) {
    float b =
        kBias ? loadFloat(p.bias, p.biasType, modFast(i, p.biasCount)) : 0.0f;
    uint8_t m = kMask ? p.mask[i] : 0;
    storeFloat(p.z, p.zType, i,
               p.apply<kBias, kMask>(loadFloat(p.x, p.xType, i), b, m,
                                     loadFloat(p.r, p.rType, i)));
  }
}

bool isFloatStorage(Storage type) {
  return type == Storage::F32 || type == Storage::BF16 || type == Storage::F16;
}

/// Checks `add` (one result, two operands, one of them `in`, the value the
/// group hands it) and fills p's r, z, count and the side of `in`.
Status addOperands(const char *name, const KernelCall &add, uint32_t in,
                   const KernelArgs &addArgs, MaskAdd &p) {
  if (add.op != fb::OpCode::Add || add.operands.size() != 2 ||
      add.results.size() != 1)
    return Status::error(std::string(name) + ": the last kernel is not an add");
  p.maskedLhs = add.operands[0].buffer == in;
  if (!p.maskedLhs && add.operands[1].buffer != in)
    return Status::error(std::string(name) +
                         ": the add does not read the group's value");
  if (add.rhsCount != add.count)
    return Status::error(std::string(name) + ": the add broadcasts (" +
                         std::to_string(add.rhsCount) + " of " +
                         std::to_string(add.count) + " elements)");
  p.r = addArgs.operands[p.maskedLhs ? 1 : 0];
  p.rType = storageOf(add.operands[p.maskedLhs ? 1 : 0].dtype);
  p.z = addArgs.results[0];
  p.zType = storageOf(add.results[0].dtype);
  p.count = add.count;
  return Status::ok();
}

/// Checks `applyMask` against the add's count and fills p's mask, scale
/// and y's storage.
Status maskOperands(const char *name, const KernelCall &applyMask,
                    const KernelArgs &maskArgs, MaskAdd &p) {
  if (applyMask.op != fb::OpCode::ApplyMask || applyMask.operands.size() != 2 ||
      applyMask.results.size() != 1 || applyMask.floatAttrs.empty() ||
      applyMask.operands[1].dtype != fb::DType::U8)
    return Status::error(std::string(name) + ": not an apply_mask");
  if (applyMask.count != p.count)
    return Status::error(std::string(name) + ": element counts differ (" +
                         "apply_mask " + std::to_string(applyMask.count) +
                         ", add " + std::to_string(p.count) + ")");
  p.mask = static_cast<const uint8_t *>(maskArgs.operands[1]);
  p.yType = storageOf(applyMask.results[0].dtype);
  return applyMaskScale(applyMask, maskArgs, name, p.scale);
}

template <bool kBias, bool kMask>
Status launchMaskAdd(const char *name, const MaskAdd &p, cudaStream_t stream) {
  if (!isFloatStorage(p.xType) || !isFloatStorage(p.rType) ||
      !isFloatStorage(p.zType) || !isFloatStorage(p.yType) ||
      (kBias && (!isFloatStorage(p.biasType) || !isFloatStorage(p.biasedType))))
    return Status::error(std::string(name) + ": unexpected dtypes");
  if (p.count <= 0)
    return Status::ok();
  bool vectorized = aligned16(p.x) && aligned16(p.r) && aligned16(p.z) &&
                    p.count >= kVec && (!kMask || aligned16(p.mask)) &&
                    (!kBias || (aligned16(p.bias) && p.biasCount % kVec == 0));
  int64_t work = vectorized ? (p.count + kVec - 1) / kVec : p.count;
  auto *kernel = &maskAddKernel<kBias, kMask>;
  TPCRT_LAUNCH(kernel, gridFor(work, kThreads), kThreads, 0, stream, p,
               vectorized);
  return launchStatus(name);
}

} // namespace

Status cuda::runApplyMaskAdd(const KernelCall &applyMask, const KernelCall &add,
                             const KernelArgs &maskArgs,
                             const KernelArgs &addArgs) {
  static const char kName[] = "apply_mask + add";
  if (applyMask.results.size() != 1 || applyMask.operands.empty())
    return Status::error(std::string(kName) + ": not an apply_mask");
  MaskAdd p;
  if (Status s =
          addOperands(kName, add, applyMask.results[0].buffer, addArgs, p);
      !s)
    return s;
  if (Status s = maskOperands(kName, applyMask, maskArgs, p); !s)
    return s;
  p.x = maskArgs.operands[0];
  p.xType = storageOf(applyMask.operands[0].dtype);
  return launchMaskAdd<false, true>(kName, p, addArgs.stream);
}

Status cuda::runBiasAdd(const KernelCall &biasAdd, const KernelCall *applyMask,
                        const KernelCall &add, const KernelArgs &biasArgs,
                        const KernelArgs *maskArgs, const KernelArgs &addArgs) {
  const char *name = applyMask ? "add + apply_mask + add" : "add + add";
  if (biasAdd.op != fb::OpCode::Add || biasAdd.operands.size() != 2 ||
      biasAdd.results.size() != 1 || (applyMask && !maskArgs))
    return Status::error(std::string(name) + ": not a bias add");
  uint32_t biased = biasAdd.results[0].buffer;
  if (applyMask && (applyMask->operands.size() != 2 ||
                    applyMask->operands[0].buffer != biased ||
                    applyMask->results.size() != 1))
    return Status::error(
        std::string(name) +
        ": the apply_mask does not read the bias add's result");
  MaskAdd p;
  uint32_t in = applyMask ? applyMask->results[0].buffer : biased;
  if (Status s = addOperands(name, add, in, addArgs, p); !s)
    return s;
  if (biasAdd.count != p.count || biasAdd.rhsCount <= 0 ||
      biasAdd.count % biasAdd.rhsCount != 0)
    return Status::error(std::string(name) + ": the bias of " +
                         std::to_string(biasAdd.rhsCount) +
                         " elements does not tile " +
                         std::to_string(biasAdd.count) + " (the add has " +
                         std::to_string(p.count) + ")");
  if (applyMask)
    if (Status s = maskOperands(name, *applyMask, *maskArgs, p); !s)
      return s;
  p.x = biasArgs.operands[0];
  p.xType = storageOf(biasAdd.operands[0].dtype);
  p.bias = biasArgs.operands[1];
  p.biasType = storageOf(biasAdd.operands[1].dtype);
  p.biasCount = biasAdd.rhsCount;
  p.biasedType = storageOf(biasAdd.results[0].dtype);
  if (applyMask)
    return launchMaskAdd<true, true>(name, p, addArgs.stream);
  p.yType = p.biasedType;
  return launchMaskAdd<true, false>(name, p, addArgs.stream);
}
