//===- SiluOps.cuh - SiLU, its gradient and the product -------*- C++ -*-===//
//
// The values of the silu, mul and silu_grad kernels at one element, as the
// CPU kernels write them (CpuKernels.cpp, CpuGradKernels.cpp), each step
// with _rn intrinsics so that nvcc contracts nothing into an FMA: the
// pointwise kernels (PointwiseKernels.cu) and the fused SwiGLU pairs
// (FusedKernels.cu) give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_SILUOPS_CUH
#define TPCRT_CUDA_SILUOPS_CUH

#include "CudaCommon.cuh"

namespace tpcrt::cuda {

__device__ __forceinline__ float sigmoidOf(float x) {
  return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x)));
}

/// x * sigmoid(x).
__device__ __forceinline__ float siluOf(float x) {
  return __fmul_rn(x, sigmoidOf(x));
}

/// dy * (s * (1 + x * (1 - s))), s = sigmoid(x).
__device__ __forceinline__ float siluGradOf(float dy, float x) {
  float s = sigmoidOf(x);
  return __fmul_rn(
      dy, __fmul_rn(s, __fadd_rn(1.0f, __fmul_rn(x, __fsub_rn(1.0f, s)))));
}

__device__ __forceinline__ float mulOf(float a, float b) {
  return __fmul_rn(a, b);
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_SILUOPS_CUH
