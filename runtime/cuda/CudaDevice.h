//===- CudaDevice.h - the CUDA device -----------------------------*- C++ -*-===//

#ifndef TPCRT_CUDA_CUDADEVICE_H
#define TPCRT_CUDA_CUDADEVICE_H

#include "tpcrt/CudaBackendAbi.h"
#include "tpcrt/Device.h"

#include <memory>

namespace tpcrt::cuda {

/// The device for `options` (CudaBackend.h), its waits marked through
/// `host`.
Status createDevice(const CudaDeviceOptions &options,
                    const CudaHostServices &host,
                    std::unique_ptr<Device> &device);

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_CUDADEVICE_H
