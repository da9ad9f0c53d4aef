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
