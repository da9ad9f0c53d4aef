//===- CudaDevices.cu - CUDA device discovery -----------------------------===//

#include <cuda_runtime.h>

#include <string>

namespace tpcrt::cuda {

int deviceCount(std::string *reason) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (reason)
      *reason = cudaGetErrorString(err);
    return 0;
  }
  if (count == 0 && reason)
    *reason = "no CUDA device";
  return count;
}

} // namespace tpcrt::cuda
