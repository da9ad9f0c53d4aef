//===- HostServices.h - what the process lends the CUDA backend -*- C++ -*-===//
//
// The backend library has its own (hidden) copies of the runtime code it
// links; what must be one for the whole process — the watchdog's mark of the
// wait in progress — is reached through the services the loader hands to
// tpcrt_cuda_create_device (CudaBackendAbi.h).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_HOSTSERVICES_H
#define TPCRT_CUDA_HOSTSERVICES_H

#include "tpcrt/CudaBackendAbi.h"

#include <string>

namespace tpcrt::cuda {

/// Kept for the process (the first device's services).
void setHostServices(const CudaHostServices &host);

/// The watchdog's marks (no-ops before setHostServices).
void hostBeginWait(const char *operation, const std::string *group);
void hostEndWait();

/// hostBeginWait for a scope.
class HostWait {
public:
  HostWait(const char *operation, const std::string *group) {
    hostBeginWait(operation, group);
  }
  ~HostWait() { hostEndWait(); }
  HostWait(const HostWait &) = delete;
  HostWait &operator=(const HostWait &) = delete;
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_HOSTSERVICES_H
