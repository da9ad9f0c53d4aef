//===- CudaBackendEntry.cpp - libtpcrt-cuda.so's C entry points -----------===//
//
// What the loader (src/CudaBackend.cpp) resolves: the ABI number, the device
// count and the device factory (tpcrt/CudaBackendAbi.h). Everything else in
// the library is hidden.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"

#include "tpcrt/CudaBackendAbi.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

using namespace tpcrt;

namespace {

void copyMessage(const std::string &message, char *out, size_t bytes) {
  if (!out || bytes == 0)
    return;
  size_t n = std::min(message.size(), bytes - 1);
  std::memcpy(out, message.data(), n);
  out[n] = 0;
}

/// A CUDA version number (1000 major + 10 minor) as "major.minor".
std::string cudaVersionText(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

} // namespace

// The runtime says "CUDA driver version is insufficient for CUDA runtime
// version" both where no driver is installed (a machine without a GPU) and
// where the driver is too old; which one, and the versions, is what a user
// can act on.
std::string cuda::deviceCountFailure(int error) {
  auto err = static_cast<cudaError_t>(error);
  std::string text = std::string("CUDA: ") + cudaGetErrorString(err);
  if (err != cudaErrorInsufficientDriver)
    return text;
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess)
    driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
    return text;
  if (driver == 0)
    return text + " (no NVIDIA driver was found: libcuda.so.1; this " +
           "backend's CUDA runtime is " + cudaVersionText(runtime) + ")";
  return text + " (the NVIDIA driver supports CUDA " + cudaVersionText(driver) +
         ", this backend's CUDA runtime is " + cudaVersionText(runtime) + ")";
}

#define TPCRT_EXPORT extern "C" __attribute__((visibility("default")))

TPCRT_EXPORT int tpcrt_cuda_abi() { return kCudaBackendAbi; }

TPCRT_EXPORT int tpcrt_cuda_device_count(char *reason, size_t reasonBytes) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    copyMessage(cuda::deviceCountFailure(err), reason, reasonBytes);
    cudaGetLastError(); // not sticky: clear it
    return 0;
  }
  if (count == 0)
    copyMessage("no CUDA device", reason, reasonBytes);
  return count;
}

TPCRT_EXPORT int tpcrt_cuda_create_device(const CudaDeviceOptions *options,
                                          const CudaHostServices *host,
                                          Device **device, char *error,
                                          size_t errorBytes) {
  *device = nullptr;
  std::unique_ptr<Device> created;
  Status s = cuda::createDevice(*options, *host, created);
  if (!s) {
    copyMessage(s.message(), error, errorBytes);
    return 1;
  }
  *device = created.release();
  return 0;
}
