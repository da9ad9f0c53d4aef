//===- GemmStaging.cu - casts around the GEMM family's matmuls ------------===//

#include "CudaCommon.cuh"
#include "GemmStaging.h"

#include <string>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

__global__ void castKernel(const void *in, Storage inType, void *out,
                           Storage outType, int64_t count) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    storeFloat(out, outType, i, loadFloat(in, inType, i));
}

__global__ void fillKernel(const void *bias, Storage biasType, int64_t rows,
                           void *out, Storage outType, int64_t count) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    storeFloat(out, outType, i,
               bias ? loadFloat(bias, biasType, i % rows) : 0.0f);
}

} // namespace

Status cuda::gemmCast(const void *in, Storage inType, void *out,
                      Storage outType, int64_t count, cudaStream_t stream) {
  if (count <= 0)
    return Status::ok();
  TPCRT_LAUNCH(castKernel, gridFor(count), 256, 0, stream, in, inType, out,
               outType, count);
  return launchStatus("gemm staging cast");
}

Status cuda::gemmFill(const void *bias, Storage biasType, int64_t rows,
                      void *out, Storage outType, int64_t count,
                      cudaStream_t stream) {
  if (count <= 0)
    return Status::ok();
  if (bias && rows <= 0)
    return Status::error("gemm fill: a bias of " + std::to_string(rows) +
                         " rows");
  TPCRT_LAUNCH(fillKernel, gridFor(count), 256, 0, stream, bias, biasType, rows,
               out, outType, count);
  return launchStatus("gemm fill");
}
