//===- cuda_runtime_api.h - the CUDA runtime, emulated on the host --------===//
//
// Stands in for the toolkit's header when the CUDA backend is compiled for
// the host (TPCRT_CUDA_EMULATION, emulation/ ahead on the include path: the
// emulated backend libtpcrt-cuda-emulated.so and the emulation tests; see
// README.md here). Emulated devices whose memory is host memory; kernels
// run through ../CudaEmulation.h. A stream is a queue of operations run in
// order on the calling host thread: each runs as soon as those before it
// on its stream are done, at the call that enqueues it or at any later
// runtime call (progress()). Kernels, copies and memsets are done when
// they run; a wait for an event, and NCCL's operations (NcclEmulation.cpp:
// a receive waits for its peer's send), may have to wait, and the
// operations behind them on their stream wait too, as on a GPU. Events mark
// a stream's position. The calls check what the driver would refuse:
// copies and memsets must lie inside one allocation (or be host memory for
// the host side), freed pointers must be allocations, a kernel fault fails
// every later synchronization. Device memory is mapped inaccessible except
// while an operation runs (DeviceAccess): host code that reads or writes it
// directly, which a GPU's memory would not allow, stops with a message that
// names the allocation (TPCRT_EMULATION_HOST_ACCESS=allow lifts that).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_EMULATION_CUDA_RUNTIME_API_H
#define TPCRT_TEST_EMULATION_CUDA_RUNTIME_API_H

#include "../CudaEmulation.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxPitch = 11,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
};

constexpr unsigned cudaStreamNonBlocking = 0x01;
constexpr unsigned cudaEventDisableTiming = 0x02;

/// One operation of a stream: run() does what it can and says whether it
/// is done (it is called again until it is).
struct CUstreamOp {
  virtual ~CUstreamOp() = default;
  virtual bool run() = 0;
  /// What it is, for the stall dump (TPCRT_EMULATION_STALL_DUMP).
  virtual std::string describe() const { return "work"; }
};
struct CUstream_st {
  unsigned flags = 0;
  std::deque<std::unique_ptr<CUstreamOp>> pending;
  uint64_t enqueued = 0, completed = 0;
};
/// A stream's position: reached when `completed` gets to `target`. A
/// timing event (no cudaEventDisableTiming) also holds when its last
/// record ran on the stream (set then; shared with the op that sets it).
struct CUevent_st {
  unsigned flags = 0;
  CUstream_st *stream = nullptr;
  uint64_t target = 0;
  std::shared_ptr<std::chrono::steady_clock::time_point> recordedAt;
  bool reached() const { return !stream || stream->completed >= target; }
};
typedef CUstream_st *cudaStream_t;
typedef CUevent_st *cudaEvent_t;

/// The fields the backend reads.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
  size_t sharedMemPerBlockOptin;
};

namespace tpcrt::emu {

/// The emulated device's memory: 8 GiB that are promised, host memory
/// allocated as asked.
constexpr size_t kDeviceBytes = size_t(8) << 30;

struct Runtime {
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations; // start -> bytes
  size_t allocated = 0;
  /// DeviceAccess scopes open (the allocations are accessible while > 0).
  int deviceAccess = 0;
  std::string message; // cudaGetErrorString's of a launch failure
  /// Every stream alive, the legacy default stream (null) first.
  std::vector<CUstream_st *> streams;
  CUstream_st legacy;
  bool progressing = false;
  Runtime() { streams.push_back(&legacy); }
};
inline Runtime &runtime() {
  static Runtime r;
  return r;
}

/// A call that makes or releases a resource (device memory, a stream, an
/// event, a kernel attribute, a cuBLASLt handle, descriptor, layout,
/// preference or heuristic query, an NCCL communicator). With
/// TPCRT_EMULATION_RESOURCE_LOG=DIR, one line (the call's name) in
/// DIR/resource-calls-<pid>.txt, a file per process (ranks), so that a test
/// can count them over one step and over several (the device makes them
/// all at prepare: test/gpu/emulated-check.sh's resources stage).
inline void noteResourceCall(const char *call) {
  static FILE *log = [] {
    const char *dir = std::getenv("TPCRT_EMULATION_RESOURCE_LOG");
    if (!dir || !*dir)
      return static_cast<FILE *>(nullptr);
    std::string path = std::string(dir) + "/resource-calls-" +
                       std::to_string(getpid()) + ".txt";
    FILE *f = std::fopen(path.c_str(), "a");
    if (!f)
      std::fprintf(stderr, "emulated CUDA runtime: cannot write %s\n",
                   path.c_str());
    else
      setvbuf(f, nullptr, _IOLBF, 0);
    return f;
  }();
  if (log)
    std::fprintf(log, "%s\n", call);
}

/// Whether device memory is kept from the host outside operations (not
/// with TPCRT_EMULATION_HOST_ACCESS=allow).
inline bool guardsDeviceMemory() {
  static const bool guards = [] {
    const char *v = std::getenv("TPCRT_EMULATION_HOST_ACCESS");
    return !(v && std::strcmp(v, "allow") == 0);
  }();
  return guards;
}
constexpr size_t kHugePage = size_t(2) << 20;
/// An allocation's mapped bytes: whole pages, huge ones from a MiB up, so
/// that opening and closing it to the host (mprotect, every operation)
/// changes a few page-table entries, not thousands.
inline size_t mappedBytes(size_t bytes) {
  const size_t unit = bytes >= kHugePage / 2
                          ? kHugePage
                          : static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + unit - 1) / unit * unit;
}
/// `bytes` of fresh memory at a multiple of its unit (MAP_FAILED: none).
inline void *mapDeviceMemory(size_t bytes) {
  const size_t mapped = mappedBytes(bytes);
  if (mapped % kHugePage != 0)
    return mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // Over-map by a huge page, then trim both ends to a 2 MiB boundary (the
  // head may be empty, the tail never is).
  void *raw = mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return raw;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start)
    munmap(raw, aligned - start);
  munmap(reinterpret_cast<void *>(aligned + mapped),
         start + kHugePage - aligned);
  madvise(reinterpret_cast<void *>(aligned), mapped, MADV_HUGEPAGE);
  return reinterpret_cast<void *>(aligned);
}
/// Makes every allocation accessible or not (r.mutex held).
inline void setAccess(Runtime &r, bool accessible) {
  for (const auto &[start, bytes] : r.allocations)
    mprotect(reinterpret_cast<void *>(start), mappedBytes(bytes),
             accessible ? PROT_READ | PROT_WRITE : PROT_NONE);
}
/// While one lives, operations may touch device memory (the emulated
/// device at work: kernels, copies, cuBLASLt, CUB, NCCL's messages).
struct DeviceAccess {
  DeviceAccess() {
    if (!guardsDeviceMemory())
      return;
    Runtime &r = runtime();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.deviceAccess++ == 0)
      setAccess(r, true);
  }
  ~DeviceAccess() {
    if (!guardsDeviceMemory())
      return;
    Runtime &r = runtime();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (--r.deviceAccess == 0)
      setAccess(r, false);
  }
  DeviceAccess(const DeviceAccess &) = delete;
  DeviceAccess &operator=(const DeviceAccess &) = delete;
};

/// A fault in device memory outside a DeviceAccess: host code touched it.
/// Says which allocation, then lets the fault take its course (the
/// handler before, or the default: the process ends on SIGSEGV).
inline struct sigaction previousSegv;
inline void onSegv(int signal, siginfo_t *info, void *context) {
  const Runtime &r = runtime(); // no lock: the process is failing anyway
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  auto it = r.allocations.upper_bound(address);
  if (it != r.allocations.begin() && r.deviceAccess == 0) {
    --it;
    if (address - it->first < mappedBytes(it->second)) {
      char text[256];
      int n = std::snprintf(
          text, sizeof text,
          "emulated CUDA runtime: the host touched device memory at %p "
          "(byte %zu of a %zu-byte cudaMalloc): a GPU's memory does not "
          "allow that\n",
          info->si_addr, static_cast<size_t>(address - it->first), it->second);
      if (n > 0 && write(2, text, static_cast<size_t>(n)) < 0)
        n = 0;
    }
  }
  sigaction(SIGSEGV, &previousSegv, nullptr);
  if (previousSegv.sa_flags & SA_SIGINFO && previousSegv.sa_sigaction)
    previousSegv.sa_sigaction(signal, info, context);
  // Otherwise the faulting access runs again under the previous handler.
}
inline void installSegvHandler() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_sigaction = onSegv;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previousSegv);
    return true;
  }();
  (void)installed;
}

/// The stream a handle names (null: the legacy default stream).
inline CUstream_st &streamOf(cudaStream_t stream) {
  return stream ? *stream : runtime().legacy;
}

/// Each stream's unfinished operations, the first few described, on stderr
/// once no stream has moved for TPCRT_EMULATION_STALL_DUMP seconds (a
/// deadlock between streams, or between ranks, found by where each waits).
inline void dumpStreamsOnStall(bool moved) {
  static const double after = [] {
    const char *v = std::getenv("TPCRT_EMULATION_STALL_DUMP");
    return v ? std::atof(v) : 0.0;
  }();
  static auto since = std::chrono::steady_clock::now();
  static bool dumped = false;
  if (after <= 0)
    return;
  auto now = std::chrono::steady_clock::now();
  if (moved) {
    since = now;
    dumped = false;
    return;
  }
  if (dumped || std::chrono::duration<double>(now - since).count() < after)
    return;
  dumped = true;
  Runtime &r = runtime();
  for (size_t i = 0; i < r.streams.size(); ++i) {
    const CUstream_st &s = *r.streams[i];
    if (s.pending.empty())
      continue;
    std::string front;
    size_t shown = 0;
    for (const auto &op : s.pending) {
      if (++shown > 4)
        break;
      front += (front.empty() ? "" : "; ") + op->describe();
    }
    std::fprintf(stderr,
                 "emulated CUDA runtime: stalled: stream %zu (%p): %llu done, "
                 "%zu pending: %s%s\n",
                 i, static_cast<const void *>(&s),
                 static_cast<unsigned long long>(s.completed), s.pending.size(),
                 front.c_str(), s.pending.size() > 4 ? "; ..." : "");
  }
}

/// Runs what can run on every stream, in order per stream, until nothing
/// more can. Returns whether anything ran.
inline bool progress() {
  Runtime &r = runtime();
  if (r.progressing) // an operation that calls the runtime
    return false;
  if (std::all_of(r.streams.begin(), r.streams.end(),
                  [](const CUstream_st *s) { return s->pending.empty(); }))
    return false;
  r.progressing = true;
  DeviceAccess access;
  bool any = false;
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < r.streams.size(); ++i) {
      CUstream_st &s = *r.streams[i];
      while (!s.pending.empty() && s.pending.front()->run()) {
        s.pending.pop_front();
        ++s.completed;
        again = any = true;
      }
    }
  }
  r.progressing = false;
  dumpStreamsOnStall(any);
  return any;
}

/// Puts `op` at the end of `stream` and runs what can run.
inline void enqueue(cudaStream_t stream, std::unique_ptr<CUstreamOp> op) {
  CUstream_st &s = streamOf(stream);
  s.pending.push_back(std::move(op));
  ++s.enqueued;
  progress();
}

template <typename F> struct FunctionOp : CUstreamOp {
  F f;
  explicit FunctionOp(F f) : f(std::move(f)) {}
  bool run() override {
    f();
    return true;
  }
};
/// Enqueues work that is done when it runs (a kernel, a copy).
template <typename F> void enqueueWork(cudaStream_t stream, F f) {
  enqueue(stream, std::make_unique<FunctionOp<F>>(std::move(f)));
}

/// Blocks until `done()` (a synchronizing call), running what can run.
template <typename Done> void waitUntil(Done done) {
  while (!done())
    if (!progress())
      std::this_thread::sleep_for(std::chrono::microseconds(50));
}
inline bool allDone() {
  for (CUstream_st *s : runtime().streams)
    if (!s->pending.empty())
      return false;
  return true;
}

inline cudaError_t refuse(cudaError_t err, const std::string &what) {
  std::fprintf(stderr, "emulated CUDA runtime: %s\n", what.c_str());
  return err;
}

/// Whether [p, p + bytes) lies inside one allocation.
inline bool isDeviceRange(const void *p, size_t bytes) {
  Runtime &r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto address = reinterpret_cast<uintptr_t>(p);
  auto it = r.allocations.upper_bound(address);
  if (it == r.allocations.begin())
    return false;
  --it;
  return address >= it->first && address - it->first + bytes <= it->second;
}

/// Copies and memsets check their device side (kind says which sides are
/// device memory; cudaMemcpyDefault: whichever is).
/// dstBytes from dst and srcBytes from src (a 2D copy's rows span more
/// than they copy).
inline cudaError_t checkSides(const void *dst, size_t dstBytes, const void *src,
                              size_t srcBytes, cudaMemcpyKind kind,
                              const char *call) {
  if (kind == cudaMemcpyDefault || dstBytes == 0)
    return cudaSuccess;
  bool dstDevice =
      kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool srcDevice =
      kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (dstDevice && !isDeviceRange(dst, dstBytes))
    return refuse(cudaErrorInvalidValue,
                  std::string(call) + ": destination range of " +
                      std::to_string(dstBytes) +
                      " bytes is not inside one allocation");
  if (srcDevice && !isDeviceRange(src, srcBytes))
    return refuse(cudaErrorInvalidValue,
                  std::string(call) + ": source range of " +
                      std::to_string(srcBytes) +
                      " bytes is not inside one allocation");
  return cudaSuccess;
}

/// What a synchronizing call returns: a kernel fault spoils the context.
inline cudaError_t faultState() {
  return launchErrors().sticky.empty() ? cudaSuccess : cudaErrorLaunchFailure;
}
/// cudaDeviceSynchronize: every stream's work done.
inline cudaError_t synchronized() {
  waitUntil(allDone);
  return faultState();
}

} // namespace tpcrt::emu

inline cudaError_t cudaGetLastError() {
  tpcrt::emu::LaunchErrors &errors = tpcrt::emu::launchErrors();
  if (errors.last.empty())
    return cudaSuccess;
  tpcrt::emu::runtime().message = errors.last;
  errors.last.clear();
  return errors.configuration ? cudaErrorInvalidConfiguration
                              : cudaErrorLaunchFailure;
}
inline cudaError_t cudaPeekAtLastError() {
  tpcrt::emu::LaunchErrors &errors = tpcrt::emu::launchErrors();
  if (errors.last.empty())
    return cudaSuccess;
  return errors.configuration ? cudaErrorInvalidConfiguration
                              : cudaErrorLaunchFailure;
}

inline const char *cudaGetErrorString(cudaError_t err) {
  switch (err) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration: {
    static thread_local std::string text;
    text = "invalid configuration argument (emulated: " +
           tpcrt::emu::runtime().message + ")";
    return text.c_str();
  }
  case cudaErrorInvalidPitchValue:
    return "invalid pitch argument";
  case cudaErrorInvalidDevicePointer:
    return "invalid device pointer";
  case cudaErrorInvalidMemcpyDirection:
    return "invalid copy direction for memcpy";
  case cudaErrorInsufficientDriver:
    return "CUDA driver version is insufficient for CUDA runtime version";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorNotReady:
    return "device not ready";
  case cudaErrorLaunchFailure: {
    static thread_local std::string text;
    const std::string &fault = tpcrt::emu::launchErrors().sticky.empty()
                                   ? tpcrt::emu::runtime().message
                                   : tpcrt::emu::launchErrors().sticky;
    text = "unspecified launch failure (emulated: " + fault + ")";
    return text.c_str();
  }
  }
  return "unknown error";
}

//===- Devices ------------------------------------------------------------===//

/// TPCRT_EMULATED_DEVICES devices (default 8: one per rank of a test's
/// launch on one machine).
inline int emulatedDevices() {
  const char *env = std::getenv("TPCRT_EMULATED_DEVICES");
  int n = env ? std::atoi(env) : 8;
  return n > 0 ? n : 0;
}
/// The emulated runtime is CUDA 13.0; the driver's version is
/// TPCRT_EMULATED_DRIVER_VERSION (default the same; 0: no driver installed),
/// so that a test can see what a machine without a driver, or with an old
/// one, is told.
constexpr int kEmulatedRuntimeVersion = 13000;
inline int emulatedDriverVersion() {
  const char *env = std::getenv("TPCRT_EMULATED_DRIVER_VERSION");
  return env ? std::atoi(env) : kEmulatedRuntimeVersion;
}
inline cudaError_t cudaDriverGetVersion(int *version) {
  *version = emulatedDriverVersion();
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int *version) {
  *version = kEmulatedRuntimeVersion;
  return cudaSuccess;
}
/// As the CUDA runtime: no driver, or one older than the runtime, is
/// cudaErrorInsufficientDriver; no device, cudaErrorNoDevice.
inline cudaError_t cudaGetDeviceCount(int *count) {
  *count = 0;
  if (emulatedDriverVersion() < kEmulatedRuntimeVersion)
    return cudaErrorInsufficientDriver;
  *count = emulatedDevices();
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}
/// The host thread's current device (cudaSetDevice's).
inline int &currentDevice() {
  static thread_local int device = 0;
  return device;
}
inline cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= emulatedDevices())
    return cudaErrorInvalidDevice;
  currentDevice() = device;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int *device) {
  *device = currentDevice();
  return cudaSuccess;
}
/// The attributes the backend asks for: every device is of compute
/// capability 9.0, as cudaGetDeviceProperties says.
inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute,
                                          int device) {
  if (device < 0 || device >= emulatedDevices())
    return cudaErrorInvalidDevice;
  switch (attribute) {
  case cudaDevAttrComputeCapabilityMajor:
    *value = 9;
    return cudaSuccess;
  case cudaDevAttrComputeCapabilityMinor:
    *value = 0;
    return cudaSuccess;
  default:
    return cudaErrorInvalidValue;
  }
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
  if (device < 0 || device >= emulatedDevices())
    return cudaErrorInvalidDevice;
  *prop = {};
  std::snprintf(prop->name, sizeof prop->name, "emulated CUDA device (host)");
  prop->totalGlobalMem = tpcrt::emu::kDeviceBytes;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->sharedMemPerBlockOptin = tpcrt::emu::kMostDynamicShared;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() {
  tpcrt::emu::Internal internal;
  return tpcrt::emu::synchronized();
}

//===- Memory -------------------------------------------------------------===//

inline cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  tpcrt::emu::Runtime &r = tpcrt::emu::runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  *totalBytes = tpcrt::emu::kDeviceBytes;
  *freeBytes = r.allocated < tpcrt::emu::kDeviceBytes
                   ? tpcrt::emu::kDeviceBytes - r.allocated
                   : 0;
  return cudaSuccess;
}

/// 256-byte aligned, as cudaMalloc's; the bytes start as garbage (0xa5),
/// not zeros.
inline cudaError_t cudaMalloc(void **p, size_t bytes) {
  tpcrt::emu::noteResourceCall("cudaMalloc");
  tpcrt::emu::Runtime &r = tpcrt::emu::runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (bytes == 0 || r.allocated + bytes > tpcrt::emu::kDeviceBytes)
    return cudaErrorMemoryAllocation;
  // Whole pages (mappedBytes; so 256-byte aligned), inaccessible to the
  // host outside operations (DeviceAccess).
  const size_t mapped = tpcrt::emu::mappedBytes(bytes);
  void *memory = tpcrt::emu::mapDeviceMemory(bytes);
  if (memory == MAP_FAILED)
    return cudaErrorMemoryAllocation;
  std::memset(memory, 0xa5, mapped);
  if (tpcrt::emu::guardsDeviceMemory()) {
    tpcrt::emu::installSegvHandler();
    if (r.deviceAccess == 0)
      mprotect(memory, mapped, PROT_NONE);
  }
  r.allocations[reinterpret_cast<uintptr_t>(memory)] = bytes;
  r.allocated += bytes;
  *p = memory;
  return cudaSuccess;
}
template <typename T> cudaError_t cudaMalloc(T **p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(p), bytes);
}

inline cudaError_t cudaFree(void *p) {
  if (!p)
    return cudaSuccess;
  tpcrt::emu::noteResourceCall("cudaFree");
  tpcrt::emu::Runtime &r = tpcrt::emu::runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == r.allocations.end())
    return tpcrt::emu::refuse(cudaErrorInvalidDevicePointer,
                              "cudaFree of a pointer it did not allocate");
  r.allocated -= it->second;
  munmap(p, tpcrt::emu::mappedBytes(it->second));
  r.allocations.erase(it);
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                   cudaMemcpyKind kind,
                                   cudaStream_t stream = nullptr) {
  tpcrt::emu::Internal internal;
  if (cudaError_t err =
          tpcrt::emu::checkSides(dst, bytes, src, bytes, kind, "cudaMemcpy"))
    return err;
  if (bytes == 0)
    return cudaSuccess;
  const bool hostSource =
      kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost ||
      (kind == cudaMemcpyDefault && !tpcrt::emu::isDeviceRange(src, bytes));
  if (hostSource) {
    // From pageable host memory the copy is staged at the call: the caller
    // may reuse its buffer as soon as the call returns.
    auto staged = std::make_shared<std::vector<char>>(
        static_cast<const char *>(src), static_cast<const char *>(src) + bytes);
    tpcrt::emu::enqueueWork(stream,
                            [=] { std::memcpy(dst, staged->data(), bytes); });
  } else {
    tpcrt::emu::enqueueWork(stream, [=] { std::memmove(dst, src, bytes); });
  }
  if (kind == cudaMemcpyDeviceToHost) {
    // Into pageable host memory it returns when the bytes are there.
    CUstream_st &s = tpcrt::emu::streamOf(stream);
    tpcrt::emu::waitUntil([&] { return s.pending.empty(); });
  }
  return cudaSuccess;
}
/// On the legacy stream, after everything before it (the device's streams
/// are non-blocking; it synchronizes them itself before such copies).
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                              cudaMemcpyKind kind) {
  tpcrt::emu::Internal internal;
  if (cudaError_t err = tpcrt::emu::synchronized())
    return err;
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind);
  tpcrt::emu::waitUntil(tpcrt::emu::allDone);
  return err;
}

inline cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     cudaMemcpyKind kind,
                                     cudaStream_t stream = nullptr) {
  tpcrt::emu::Internal internal;
  constexpr size_t kMaxPitch = (size_t(1) << 31) - 1;
  if (width > dpitch || width > spitch)
    return tpcrt::emu::refuse(cudaErrorInvalidValue,
                              "cudaMemcpy2D: width above a pitch");
  if (dpitch > kMaxPitch || spitch > kMaxPitch)
    return cudaErrorInvalidPitchValue;
  if (height == 0 || width == 0)
    return cudaSuccess;
  if (cudaError_t err = tpcrt::emu::checkSides(
          dst, dpitch * (height - 1) + width, src,
          spitch * (height - 1) + width, kind, "cudaMemcpy2D"))
    return err;
  tpcrt::emu::enqueueWork(stream, [=] {
    for (size_t r = 0; r < height; ++r)
      std::memmove(static_cast<char *>(dst) + r * dpitch,
                   static_cast<const char *>(src) + r * spitch, width);
  });
  return cudaSuccess;
}

inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes,
                                   cudaStream_t stream = nullptr) {
  tpcrt::emu::Internal internal;
  if (bytes && !tpcrt::emu::isDeviceRange(p, bytes))
    return tpcrt::emu::refuse(cudaErrorInvalidValue,
                              "cudaMemset: range not inside one allocation");
  if (bytes)
    tpcrt::emu::enqueueWork(stream, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  tpcrt::emu::Internal internal;
  if (cudaError_t err = tpcrt::emu::synchronized())
    return err;
  cudaError_t err = cudaMemsetAsync(p, value, bytes);
  tpcrt::emu::waitUntil(tpcrt::emu::allDone);
  return err;
}

//===- Streams and events -------------------------------------------------===//

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream,
                                             unsigned flags) {
  tpcrt::emu::noteResourceCall("cudaStreamCreate");
  *stream = new CUstream_st;
  (*stream)->flags = flags;
  tpcrt::emu::runtime().streams.push_back(*stream);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, 0);
}
/// Its work is done first (CUDA lets it finish after the call).
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  tpcrt::emu::noteResourceCall("cudaStreamDestroy");
  if (!stream)
    return cudaErrorInvalidResourceHandle;
  tpcrt::emu::waitUntil([&] { return stream->pending.empty(); });
  auto &streams = tpcrt::emu::runtime().streams;
  streams.erase(std::remove(streams.begin(), streams.end(), stream),
                streams.end());
  delete stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  CUstream_st &s = tpcrt::emu::streamOf(stream);
  tpcrt::emu::waitUntil([&] { return s.pending.empty(); });
  return tpcrt::emu::faultState();
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event,
                                            unsigned flags) {
  tpcrt::emu::noteResourceCall("cudaEventCreate");
  *event = new CUevent_st;
  (*event)->flags = flags;
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, 0);
}
inline cudaError_t cudaEventDestroy(cudaEvent_t event) {
  tpcrt::emu::noteResourceCall("cudaEventDestroy");
  delete event;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t event,
                                   cudaStream_t stream = nullptr) {
  tpcrt::emu::Internal internal;
  if (!event)
    return cudaErrorInvalidResourceHandle;
  CUstream_st &s = tpcrt::emu::streamOf(stream);
  if (!(event->flags & cudaEventDisableTiming)) {
    // The time the stream gets here: an op that takes it when it runs.
    auto at = std::make_shared<std::chrono::steady_clock::time_point>();
    event->recordedAt = at;
    tpcrt::emu::enqueueWork(stream,
                            [at] { *at = std::chrono::steady_clock::now(); });
  }
  event->stream = &s;
  event->target = s.enqueued;
  return cudaSuccess;
}
/// The milliseconds between two timing events' records, both reached.
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                        cudaEvent_t end) {
  tpcrt::emu::Internal internal;
  if (!ms || !start || !end || !start->recordedAt || !end->recordedAt)
    return cudaErrorInvalidResourceHandle;
  tpcrt::emu::progress();
  if (!start->reached() || !end->reached())
    return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(*end->recordedAt -
                                                 *start->recordedAt)
            .count();
  return cudaSuccess;
}
inline cudaError_t cudaEventQuery(cudaEvent_t event) {
  tpcrt::emu::Internal internal;
  if (!event)
    return cudaErrorInvalidResourceHandle;
  tpcrt::emu::progress();
  if (cudaError_t err = tpcrt::emu::faultState())
    return err;
  return event->reached() ? cudaSuccess : cudaErrorNotReady;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  tpcrt::emu::Internal internal;
  if (!event)
    return cudaErrorInvalidResourceHandle;
  tpcrt::emu::waitUntil([&] { return event->reached(); });
  return tpcrt::emu::faultState();
}

namespace tpcrt::emu {
/// A stream's wait for an event as it was recorded when the wait was
/// enqueued.
struct WaitOp : CUstreamOp {
  CUevent_st mark;
  explicit WaitOp(const CUevent_st &mark) : mark(mark) {}
  bool run() override { return mark.reached(); }
  std::string describe() const override {
    char text[96];
    std::snprintf(text, sizeof text, "wait for stream %p to complete %llu",
                  static_cast<const void *>(mark.stream),
                  static_cast<unsigned long long>(mark.target));
    return text;
  }
};
} // namespace tpcrt::emu

inline cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                       unsigned = 0) {
  tpcrt::emu::Internal internal;
  if (!event)
    return cudaErrorInvalidResourceHandle;
  tpcrt::emu::enqueue(stream, std::make_unique<tpcrt::emu::WaitOp>(*event));
  return cudaSuccess;
}

//===- Kernels ------------------------------------------------------------===//

template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel kernel, cudaFuncAttribute attribute,
                                 int value) {
  tpcrt::emu::noteResourceCall("cudaFuncSetAttribute");
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize)
    return cudaErrorInvalidValue;
  if (value < 0 || size_t(value) > tpcrt::emu::kMostDynamicShared)
    return cudaErrorInvalidValue;
  tpcrt::emu::setSharedLimit(reinterpret_cast<const void *>(kernel),
                             static_cast<size_t>(value));
  return cudaSuccess;
}

//===- Launches -----------------------------------------------------------===//

namespace tpcrt::emu {

/// Why argument `index` (a pointer) could not be read by a kernel on a GPU:
/// it is not null and not inside (or just past) a device allocation. Empty
/// when it could; other arguments (values, structs) are not looked into.
template <typename T>
std::string hostPointerArgument(int index, const T &argument) {
  if constexpr (std::is_pointer_v<T>) {
    if (argument && !isDeviceRange(argument, 0)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "argument %d is %p, not device memory (a host pointer: "
                    "an illegal address on a GPU)",
                    index, static_cast<const void *>(argument));
      return text;
    }
  }
  (void)index;
  (void)argument;
  return {};
}

/// TPCRT_LAUNCH's kernel<<<grid, threads, sharedBytes, stream>>>(args...):
/// checks the configuration as the hardware does, then enqueues the
/// kernel's blocks on the stream (run at once when nothing is before them).
/// A pointer argument that is no device memory makes it fault as it would
/// on a GPU (every later synchronization fails), without running.
template <typename Kernel, typename... Args>
void launchKernel(Kernel kernel, dim3 grid, dim3 threads, size_t sharedBytes,
                  cudaStream_t stream, Args... args) {
  Internal internal;
  const void *key = reinterpret_cast<const void *>(kernel);
  std::string refusal;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535 || grid.x > 0x7fffffffu)
    refusal = "grid (" + std::to_string(grid.x) + ", " +
              std::to_string(grid.y) + ", " + std::to_string(grid.z) + ")";
  else if (int64_t(threads.x) * threads.y * threads.z > kMaxThreads ||
           threads.z > 64)
    refusal = "block (" + std::to_string(threads.x) + ", " +
              std::to_string(threads.y) + ", " + std::to_string(threads.z) +
              ")";
  else if (sharedBytes > sharedLimit(key))
    refusal = std::to_string(sharedBytes) +
              " bytes of dynamic shared memory, the kernel's limit is " +
              std::to_string(sharedLimit(key));
  LaunchErrors &errors = launchErrors();
  if (!refusal.empty()) {
    if (errors.last.empty())
      errors.last = "invalid configuration: " + refusal;
    errors.configuration = true;
    std::fprintf(stderr, "emulated launch refused: %s\n", refusal.c_str());
    return;
  }
  std::string badArgument;
  int index = 0;
  ((badArgument.empty() ? (void)(badArgument = hostPointerArgument(index, args))
                        : (void)0,
    ++index),
   ...);
  enqueueWork(stream, [=] {
    std::string fault = badArgument.empty() ? launch(grid, threads, sharedBytes,
                                                     [&] { kernel(args...); })
                                            : badArgument;
    if (fault.empty())
      return;
    std::fprintf(stderr, "emulated kernel fault: %s\n", fault.c_str());
    LaunchErrors &errors = launchErrors();
    if (errors.last.empty()) {
      errors.last = fault;
      errors.configuration = false;
    }
    if (errors.sticky.empty())
      errors.sticky = fault;
  });
}

} // namespace tpcrt::emu

#endif // TPCRT_TEST_EMULATION_CUDA_RUNTIME_API_H
