//===- MaskAdd.cuh - the forward's residual add, fused -------*- C++ -*-===//
//
// The value a forward residual add group computes at each element
// (FusionPlan.h): z = y + r (or r + y), y the branch x through the bias add
// (x + b[i mod |b|], rounded to the bias add's storage) and the dropout
// (x * mask * scale, rounded to the apply_mask's storage) where the group
// has them, each step with _rn intrinsics so that nvcc contracts nothing
// into an FMA (the unfused kernels round in between). FusedKernels.cu's
// kernel stores z; ReductionKernels.cu's norm of z (a norm right after the
// add joins the group) stores z and normalizes it in the same pass.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_MASKADD_CUH
#define TPCRT_CUDA_MASKADD_CUH

#include "CudaCommon.cuh"

#include <cstdint>

namespace tpcrt::cuda {

struct MaskAdd {
  const void *x = nullptr;
  Storage xType = Storage::F32;
  /// The bias added to x first (a group of three, or a bias add + add):
  /// biasCount elements repeated over x, the sum rounded to biasedType.
  const void *bias = nullptr;
  Storage biasType = Storage::F32, biasedType = Storage::F32;
  int64_t biasCount = 0;
  /// Null without a dropout: y is x (or the biased x).
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

  /// z's element i before it is rounded to z's storage.
  template <bool kBias, bool kMask>
  __device__ __forceinline__ float at(int64_t i) const {
    float b = kBias ? loadFloat(bias, biasType, modFast(i, biasCount)) : 0.0f;
    uint8_t m = kMask ? mask[i] : 0;
    return apply<kBias, kMask>(loadFloat(x, xType, i), b, m,
                               loadFloat(r, rType, i));
  }
};

/// MaskAdd::at<kBias, kMask> as a functor (a norm kernel's source).
template <bool kBias, bool kMask> struct MaskAddAt {
  MaskAdd p;
  __device__ __forceinline__ float operator()(int64_t i) const {
    return p.at<kBias, kMask>(i);
  }
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_MASKADD_CUH
