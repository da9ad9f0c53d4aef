//===- Devices.cpp - backend availability ---------------------------------===//

#include "tpcrt/Devices.h"

#include "tpcrt/CudaBackend.h"
#include "tpcrt/CudaBackendAbi.h"

#include <dlfcn.h>

using namespace tpcrt;

bool tpcrt::hasCudaBackend() {
#ifdef TPCRT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

namespace tpcrt {
/// The library's device count function, or null with the reason (in
/// CudaBackend.cpp).
TpcrtCudaDeviceCountFn cudaBackendDeviceCount(std::string *reason);
} // namespace tpcrt

int tpcrt::cudaDeviceCount(std::string *reason) {
  TpcrtCudaDeviceCountFn count = cudaBackendDeviceCount(reason);
  if (!count)
    return 0;
  char text[512] = {};
  int n = count(text, sizeof(text));
  if (n <= 0 && reason)
    *reason = text[0] ? text : "no CUDA device";
  return n > 0 ? n : 0;
}
