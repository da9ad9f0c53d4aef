//===- Nccl.h - NCCL, opened at run time, for the CUDA device ---*- C++ -*-===//
//
// NCCL is not linked: on the GPU machines it exists only inside Python
// wheels (nvidia-nccl-cu*), so the CUDA device opens libnccl.so.2 with
// dlopen from a path found at run time ($TPCRT_NCCL_LIBRARY; the dynamic
// loader's path; the CUDA toolkit; the nvidia/nccl/lib folder of the Python
// installations' site-packages) and resolves the functions it calls. A
// missing library is an error only for an executable that communicates.
//
// An NcclGroup is one communicator per group of ranks (a mesh axis group),
// bootstrapped over the interpreter's communicator of that group (MPI): its
// rank 0 makes the unique id, a broadcast gives it to the others. Operations
// enqueue on the stream they are given, in stream order; waitEvent polls a
// completion event together with every group's asynchronous error and, on
// an error, aborts the groups (ncclCommAbort) and returns the error, so a
// failed peer is an error, never a hang; a stalled one is ended by the
// watchdog (WaitGuard) as on the CPU device.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_NCCL_H
#define TPCRT_CUDA_NCCL_H

#include "CudaKernels.h"

#include <cstddef>
#include <memory>
#include <string>

namespace tpcrt {
class Communicator;
} // namespace tpcrt

namespace tpcrt::cuda {

/// Opens NCCL once (later calls return the first outcome); `path` (when
/// given) is where it was found or what was tried.
Status loadNccl(std::string *path = nullptr);

class NcclGroup {
public:
  /// Collective over `bootstrap`'s ranks: one NCCL communicator for them on
  /// CUDA device `device`. `label` names the group in messages ("[tp]").
  static Status create(Communicator &bootstrap, int device,
                       const std::string &label,
                       std::unique_ptr<NcclGroup> &group);
  ~NcclGroup();
  NcclGroup(const NcclGroup &) = delete;
  NcclGroup &operator=(const NcclGroup &) = delete;

  int rank() const;
  int size() const;
  const std::string &label() const;

  /// recv[i] = sum (max) over ranks of send[i]; f32, bf16, f16 or i64.
  Status allReduce(const void *send, void *recv, size_t count, Storage type,
                   bool max, cudaStream_t stream);
  /// recv = the ranks' sendBytes-byte buffers in rank order.
  Status allGather(const void *send, void *recv, size_t sendBytes,
                   cudaStream_t stream);
  /// send holds size() chunks of recvCount elements; recv = the sum of
  /// chunk rank() over the ranks.
  Status reduceScatter(const void *send, void *recv, size_t recvCount,
                       Storage type, cudaStream_t stream);
  /// send holds size() chunks of bytesPerPeer bytes, chunk j for rank j;
  /// recv chunk i is what rank i sent here (grouped sends and receives).
  Status allToAll(const void *send, void *recv, size_t bytesPerPeer,
                  cudaStream_t stream);
  /// Point-to-point, bytes to or from `peer`; between groupStart and
  /// groupEnd they go out together (a pipeline's sends and receives that
  /// must progress together).
  Status send(const void *data, size_t bytes, int peer, cudaStream_t stream);
  Status recv(void *data, size_t bytes, int peer, cudaStream_t stream);
  static Status groupStart();
  static Status groupEnd();
  /// `ops()` (NCCL calls, returning a Status) between groupStart and
  /// groupEnd: the group is ended whatever happened inside it (NCCL
  /// requires it); the first error is returned.
  template <typename Ops> static Status grouped(Ops &&ops) {
    if (Status s = groupStart(); !s)
      return s;
    Status result = ops();
    Status ended = groupEnd();
    return result ? ended : result;
  }

  /// ncclCommGetAsyncError as a Status.
  Status asyncError();
  /// ncclCommAbort: every operation of the group in flight ends.
  void abort();

private:
  NcclGroup();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Returns once `event` has completed on the device. Polls it with every
/// one of `groups`' asynchronous errors (an error aborts all of them and is
/// returned) under a WaitGuard named `operation` / `label` (a stall is the
/// watchdog's).
Status waitEvent(cudaEvent_t event, NcclGroup *const *groups, size_t count,
                 const char *operation, const std::string *label);

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_NCCL_H
