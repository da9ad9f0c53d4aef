//===- CudaBackend.h - the CUDA device, loaded on demand --------*- C++ -*-===//
//
// The CUDA backend is a shared library of its own, libtpcrt-cuda.so (built
// wherever nvcc is found), that the runtime opens with dlopen when a CUDA
// device is asked for: tpc-run and everything else start on machines
// without a GPU, a driver or the CUDA libraries, and a machine without them
// gets an error that says which is missing. The library is looked for at
// $TPCRT_CUDA_BACKEND, else beside the running program (<bin>/../lib and
// <bin>), else by the dynamic loader's search path. It exports C entry
// points only (tpcrt_cuda_abi, tpcrt_cuda_device_count,
// tpcrt_cuda_create_device); the ABI number refuses a library from another
// build. See docs/runtime/cuda.md.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDABACKEND_H
#define TPCRT_CUDABACKEND_H

#include "tpcrt/Device.h"
#include "tpcrt/Status.h"

#include <memory>
#include <string>

namespace tpcrt {

/// Bumped whenever Device, Program, KernelCall, StepContext or Communicator
/// change layout: the library and its loader must agree.
constexpr int kCudaBackendAbi = 2;

struct CudaDeviceOptions {
  /// The CUDA device (an index among the visible ones); -1: chosen from the
  /// rank's local rank (selectCudaDevice).
  int device = -1;
  /// This rank's index among the ranks on its node, and their number (the
  /// launcher's OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID ...; 0 and 1 for
  /// one process).
  int localRank = 0;
  int localRanks = 1;
  /// TF32 tensor cores for fp32 GEMMs (off: fp32 results equal the CPU's
  /// within float32 rounding).
  bool allowTf32 = false;
  /// The most bytes one message of a transfer between stages carries
  /// (kTransferPieceBytes when 0), as createCpuDevice's.
  uint64_t transferPieceBytes = 0;
};

/// Where the backend library was found (or looked for), for messages.
std::string cudaBackendPath();

/// Opens the backend library once (later calls return the first outcome).
Status loadCudaBackend();

/// The device for `options` on this rank: the library loaded, a device
/// chosen and checked, its streams and libraries (cuBLASLt) set up. An error
/// names what is missing: the library, the driver, a device.
Status createCudaDevice(const CudaDeviceOptions &options,
                        std::unique_ptr<Device> &device);

/// Which device a rank uses: `requested` when >= 0 (it must be below
/// `count`), else its local rank; more local ranks than devices is an error
/// (two ranks on one GPU would deadlock NCCL).
Status selectCudaDevice(int requested, int localRank, int localRanks,
                        int count, int &device);

/// This process's local rank and the number of local ranks, from the
/// launcher's environment (Open MPI, MPICH/Hydra, Slurm, tpc-run --ranks);
/// 0 and 1 when there is none.
void localRankFromEnvironment(int &localRank, int &localRanks);

} // namespace tpcrt

#endif // TPCRT_CUDABACKEND_H
