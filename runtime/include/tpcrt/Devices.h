//===- Devices.h - which device backends this build has ---------*- C++ -*-===//

#ifndef TPCRT_DEVICES_H
#define TPCRT_DEVICES_H

#include "tpcrt/Status.h"

namespace tpcrt {

/// True when the runtime was built with its CUDA backend.
bool hasCudaBackend();

/// The number of CUDA devices usable now. Without the backend, or without a
/// driver or GPU, this is 0 and `reason` (when given) says why.
int cudaDeviceCount(std::string *reason = nullptr);

} // namespace tpcrt

#endif // TPCRT_DEVICES_H
