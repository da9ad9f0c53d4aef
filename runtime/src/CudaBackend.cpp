//===- CudaBackend.cpp - opening libtpcrt-cuda.so -------------------------===//
//
// dlopen of the CUDA backend library (tpcrt/CudaBackend.h, and
// tpcrt/Devices.h's queries): found at
// $TPCRT_CUDA_BACKEND, beside the program, or on the loader's path; its ABI
// number checked against this build's; its three entry points resolved. The
// outcome is kept: a process opens the library once.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/CudaBackend.h"

#include "tpcrt/CommandLine.h"
#include "tpcrt/CudaBackendAbi.h"
#include "tpcrt/Devices.h"
#include "tpcrt/Watchdog.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

using namespace tpcrt;

namespace {

constexpr char kLibraryName[] = "libtpcrt-cuda.so";

struct Backend {
  Status status = Status::error("not loaded");
  std::string path;
  TpcrtCudaDeviceCountFn deviceCount = nullptr;
  TpcrtCudaCreateDeviceFn createDevice = nullptr;
};

#ifdef TPCRT_HAVE_CUDA
/// The folder of the running program (/proc/self/exe), empty if unknown.
std::string programFolder() {
  std::vector<char> path(PATH_MAX + 1, 0);
  ssize_t n = ::readlink("/proc/self/exe", path.data(), PATH_MAX);
  if (n <= 0)
    return {};
  std::string text(path.data(), static_cast<size_t>(n));
  size_t slash = text.rfind('/');
  return slash == std::string::npos ? std::string() : text.substr(0, slash);
}

/// Where to look, in order: the environment's path alone when set.
std::vector<std::string> candidates() {
  if (const char *explicitPath = std::getenv("TPCRT_CUDA_BACKEND");
      explicitPath && *explicitPath)
    return {explicitPath};
  std::vector<std::string> paths;
  std::string folder = programFolder();
  if (!folder.empty()) {
    paths.push_back(folder + "/../lib/" + kLibraryName);
    paths.push_back(folder + "/" + kLibraryName);
  }
  paths.push_back(kLibraryName); // the dynamic loader's search path
  return paths;
}
#endif

Backend &backend() {
  static Backend b;
  static std::once_flag once;
  std::call_once(once, [] {
#ifndef TPCRT_HAVE_CUDA
    b.status = Status::error(
        "this runtime was built without its CUDA backend (no nvcc at "
        "configure time; see docs/runtime/cuda.md)");
    return;
#else
    // A library that exists but fails to load (a missing dependency, an
    // undefined symbol) is the error; otherwise every place looked at.
    std::string tried, failure;
    void *handle = nullptr;
    for (const std::string &path : candidates()) {
      bool named = path.find('/') != std::string::npos;
      if (named && ::access(path.c_str(), F_OK) != 0) {
        tried += (tried.empty() ? "" : ", ") + path;
        continue;
      }
      // RTLD_LOCAL: the library's own copies of the runtime stay its own.
      handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        b.path = path;
        break;
      }
      const char *why = ::dlerror();
      if (named) {
        b.path = path;
        failure = why ? why : path;
        break;
      }
      tried += (tried.empty() ? "" : ", ") + path;
    }
    if (!handle) {
      if (b.path.empty())
        b.path = candidates().front();
      b.status = Status::error(
          failure.empty()
              ? "cannot find the CUDA backend " + std::string(kLibraryName) +
                    " (looked at " + tried +
                    "; set TPCRT_CUDA_BACKEND to its path)"
              : "cannot open the CUDA backend: " + failure);
      return;
    }
    auto abi = reinterpret_cast<TpcrtCudaAbiFn>(
        ::dlsym(handle, TPCRT_CUDA_ABI_SYMBOL));
    b.deviceCount = reinterpret_cast<TpcrtCudaDeviceCountFn>(
        ::dlsym(handle, TPCRT_CUDA_DEVICE_COUNT_SYMBOL));
    b.createDevice = reinterpret_cast<TpcrtCudaCreateDeviceFn>(
        ::dlsym(handle, TPCRT_CUDA_CREATE_DEVICE_SYMBOL));
    if (!abi || !b.deviceCount || !b.createDevice) {
      b.status = Status::error(b.path + ": not a tpcrt CUDA backend (its "
                                        "entry points are missing)");
      return;
    }
    if (abi() != kCudaBackendAbi) {
      b.status = Status::error(
          b.path + ": a CUDA backend of another build (ABI " +
          std::to_string(abi()) + ", this runtime's is " +
          std::to_string(kCudaBackendAbi) + ")");
      return;
    }
    b.status = Status::ok();
#endif
  });
  return b;
}

void beginWait(const char *operation, const std::string *group) {
  beginWatchdogWait(operation, group);
}
void endWait() { endWatchdogWait(); }

} // namespace

bool tpcrt::hasCudaBackend() {
#ifdef TPCRT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int tpcrt::cudaDeviceCount(std::string *reason) {
  Backend &b = backend();
  if (!b.status) {
    if (reason)
      *reason = b.status.message();
    return 0;
  }
  char text[512] = {};
  int n = b.deviceCount(text, sizeof(text));
  if (n <= 0 && reason)
    *reason = text[0] ? text : "no CUDA device";
  return n > 0 ? n : 0;
}

std::string tpcrt::cudaBackendPath() { return backend().path; }

Status tpcrt::loadCudaBackend() { return backend().status; }

Status tpcrt::selectCudaDevice(int requested, int localRank, int localRanks,
                               int count, int &device) {
  if (count <= 0)
    return Status::error("no CUDA device");
  if (requested >= 0) {
    if (requested >= count)
      return Status::error("CUDA device " + std::to_string(requested) +
                           " does not exist (" + std::to_string(count) +
                           " visible: 0.." + std::to_string(count - 1) + ")");
    device = requested;
    return Status::ok();
  }
  if (localRank < 0 || localRanks < 1 || localRank >= localRanks)
    return Status::error("local rank " + std::to_string(localRank) + " of " +
                         std::to_string(localRanks) + " is not a rank");
  if (localRanks > count)
    return Status::error(
        std::to_string(localRanks) + " ranks on this node but " +
        std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
        " visible: one rank per GPU (two ranks on one GPU would deadlock "
        "NCCL)");
  device = localRank;
  return Status::ok();
}

void tpcrt::localRankFromEnvironment(int &localRank, int &localRanks) {
  localRank = 0;
  localRanks = 1;
  static const char *const kPairs[][2] = {
      {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}, // MPICH / Hydra
      {"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
  };
  for (const auto &pair : kPairs) {
    uint64_t rank = 0, ranks = 0;
    const char *rankText = std::getenv(pair[0]);
    if (!rankText || !parseDecimal(rankText, rank))
      continue;
    const char *ranksText = std::getenv(pair[1]);
    if (!ranksText || !parseDecimal(ranksText, ranks) || ranks == 0)
      ranks = rank + 1; // at least this many
    localRank = static_cast<int>(rank);
    localRanks = static_cast<int>(ranks);
    return;
  }
}

Status tpcrt::createCudaDevice(const CudaDeviceOptions &options,
                               std::unique_ptr<Device> &device) {
  Backend &b = backend();
  if (!b.status)
    return b.status;
  char reason[512] = {};
  int count = b.deviceCount(reason, sizeof(reason));
  if (count <= 0)
    return Status::error(std::string("no CUDA device: ") +
                         (reason[0] ? reason : "none visible"));
  CudaDeviceOptions chosen = options;
  if (Status s = selectCudaDevice(options.device, options.localRank,
                                  options.localRanks, count, chosen.device);
      !s)
    return s;
  static const CudaHostServices host{beginWait, endWait};
  char error[1024] = {};
  Device *created = nullptr;
  if (b.createDevice(&chosen, &host, &created, error, sizeof(error)) != 0 ||
      !created) {
    delete created;
    return Status::error(error[0] ? error : "the CUDA device failed to start");
  }
  device.reset(created);
  return Status::ok();
}
