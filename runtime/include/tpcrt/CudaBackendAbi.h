//===- CudaBackendAbi.h - between libtpcrt-cuda.so and its loader -*- C++ -*-===//
//
// The C entry points the CUDA backend library exports and the loader
// (src/CudaBackend.cpp) resolves with dlsym. The library is a module of its
// own with its own copies of the runtime code it links (hidden): what must be
// one thing for the whole process (the watchdog's record of the wait in
// progress) reaches it as host services.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDABACKENDABI_H
#define TPCRT_CUDABACKENDABI_H

#include "tpcrt/CudaBackend.h"

#include <cstddef>
#include <string>

namespace tpcrt {

/// What the process offers the library.
struct CudaHostServices {
  /// The watchdog's wait marks (Watchdog.h).
  void (*beginWait)(const char *operation, const std::string *group);
  void (*endWait)();
};

} // namespace tpcrt

extern "C" {
/// kCudaBackendAbi of the build the library comes from.
typedef int (*TpcrtCudaAbiFn)();
/// The number of usable CUDA devices; 0 with the reason in `reason`
/// (`reasonBytes` including the terminating 0).
typedef int (*TpcrtCudaDeviceCountFn)(char *reason, size_t reasonBytes);
/// A device for `options`: 0 and *device set (owned by the caller, deleted
/// through Device's virtual destructor), or non-zero with the message in
/// `error`.
typedef int (*TpcrtCudaCreateDeviceFn)(const tpcrt::CudaDeviceOptions *options,
                                       const tpcrt::CudaHostServices *host,
                                       tpcrt::Device **device, char *error,
                                       size_t errorBytes);
}

#define TPCRT_CUDA_ABI_SYMBOL "tpcrt_cuda_abi"
#define TPCRT_CUDA_DEVICE_COUNT_SYMBOL "tpcrt_cuda_device_count"
#define TPCRT_CUDA_CREATE_DEVICE_SYMBOL "tpcrt_cuda_create_device"

#endif // TPCRT_CUDABACKENDABI_H
