//===- CudaKernels.cu - what the kernel families share --------------------===//

#include "CudaKernels.h"

#include <cuda_runtime.h>

#include <string>

using namespace tpcrt;

Status cuda::launchStatus(const char *kernel) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(kernel) +
                       ": CUDA launch failed: " + cudaGetErrorString(err));
}

Status cuda::allowSharedMemory(const void *kernel, size_t bytes,
                               const char *name) {
  if (bytes <= 48 * 1024)
    return Status::ok();
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes));
  if (err == cudaSuccess)
    return Status::ok();
  cudaGetLastError(); // not sticky: clear it for the next launch's check
  return Status::error(std::string(name) + ": " + std::to_string(bytes) +
                       " bytes of shared memory: " + cudaGetErrorString(err));
}
