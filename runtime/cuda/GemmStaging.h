//===- GemmStaging.h - casts around the GEMM family's matmuls ---*- C++ -*-===//
//
// The kernels the GEMM family (Gemm.cpp) launches besides cuBLASLt: casts
// that stage an operand or a result through fp32 scratch where cuBLASLt has
// no matmul for the call's mix of types, and the fill of a GEMM with nothing
// to sum (k = 0). GemmStaging.cu.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_GEMMSTAGING_H
#define TPCRT_CUDA_GEMMSTAGING_H

#include "CudaKernels.h"

#include <cstdint>

namespace tpcrt::cuda {

/// out[i] = in[i] for i < count, read in `inType` and stored in `outType`
/// (through fp32, rounding to nearest even: a 16-bit value reaches f32
/// exactly). Enqueued on `stream`.
Status gemmCast(const void *in, Storage inType, void *out, Storage outType,
                int64_t count, cudaStream_t stream);

/// out[i] = bias[i % rows] for i < count, or 0 when `bias` is null: a GEMM
/// whose sum is empty, its bias added to each column of the column-major
/// D [rows, count / rows]. Enqueued on `stream`.
Status gemmFill(const void *bias, Storage biasType, int64_t rows, void *out,
                Storage outType, int64_t count, cudaStream_t stream);

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_GEMMSTAGING_H
