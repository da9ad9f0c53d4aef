//===- CudaDevice.h - the CUDA device -----------------------------*- C++ -*-===//

#ifndef TPCRT_CUDA_CUDADEVICE_H
#define TPCRT_CUDA_CUDADEVICE_H

#include "tpcrt/CudaBackendAbi.h"
#include "tpcrt/Device.h"

#include <memory>
#include <string>

namespace tpcrt::cuda {

/// Why cudaGetDeviceCount failed with `error` (a cudaError_t), for the
/// user: "CUDA: " and the runtime's text, and where that says the driver is
/// insufficient, whether there is none or which versions differ.
std::string deviceCountFailure(int error);

/// The device for `options` (CudaBackend.h), its waits marked through
/// `host`.
Status createDevice(const CudaDeviceOptions &options,
                    const CudaHostServices &host,
                    std::unique_ptr<Device> &device);

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_CUDADEVICE_H
