//===- Devices.cpp - backend availability ---------------------------------===//

#include "tpcrt/Devices.h"

#ifdef TPCRT_HAVE_CUDA
namespace tpcrt::cuda {
int deviceCount(std::string *reason);
} // namespace tpcrt::cuda
#endif

bool tpcrt::hasCudaBackend() {
#ifdef TPCRT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int tpcrt::cudaDeviceCount(std::string *reason) {
#ifdef TPCRT_HAVE_CUDA
  return cuda::deviceCount(reason);
#else
  if (reason)
    *reason = "the runtime was built without CUDA";
  return 0;
#endif
}
