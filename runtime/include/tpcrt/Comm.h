//===- Comm.h - communicators between ranks ---------------------*- C++ -*-===//
//
// A Communicator is a group of ranks that run collectives together. Every
// call returns a Status: a failed transfer, a bad argument or a peer that went
// away is an error value, never an abort. Buffers are host memory (device
// memory for NCCL); counts are elements (reductions) or bytes (data movement,
// which is type-blind).
//
// Backends: "local" (one rank, no library); where the runtime was built with
// it (TPCRT_HAVE_MPI), MPI; where it was built with CUDA and NCCL
// (TPCRT_HAVE_NCCL), NCCL on device buffers. Sub-groups (one per mesh axis)
// come from split(), so a mesh's data- and tensor-parallel groups are
// Communicators too.
// See docs/runtime/comm.md.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_COMM_H
#define TPCRT_COMM_H

#include "tpcrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tpcrt {

class Communicator {
public:
  virtual ~Communicator();

  /// This rank's index in the group, in [0, size()).
  virtual int rank() const = 0;
  /// The number of ranks in the group.
  virtual int size() const = 0;
  /// The backend's name ("local", "mpi"), for messages.
  virtual std::string backendName() const = 0;

  /// data[i] = sum over ranks of data[i], on every rank.
  virtual Status allReduceSum(float *data, std::size_t count) = 0;
  /// The same for i64 (e.g. a count of targets).
  virtual Status allReduceSum(int64_t *data, std::size_t count) = 0;
  /// data[i] = max over ranks of data[i], on every rank.
  virtual Status allReduceMax(float *data, std::size_t count) = 0;
  /// recv = the ranks' `bytes`-byte send buffers concatenated in rank order
  /// (recv holds bytes * size()).
  virtual Status allGather(const void *send, void *recv, std::size_t bytes) = 0;
  /// send holds size() chunks of `count` floats; this rank receives the sum
  /// over ranks of chunk rank() in recv.
  virtual Status reduceScatterSum(const float *send, float *recv,
                                  std::size_t count) = 0;
  /// send holds size() chunks of `bytes` bytes; chunk j goes to rank j, and
  /// recv (size() chunks) holds in chunk i what rank i sent to this rank.
  virtual Status allToAll(const void *send, void *recv, std::size_t bytes) = 0;
  /// data on every rank = data on `root`.
  virtual Status broadcast(void *data, std::size_t bytes, int root) = 0;
  /// Blocking point-to-point transfer of `bytes` bytes; `tag` >= 0 pairs a
  /// send with its recv.
  virtual Status send(const void *data, std::size_t bytes, int peer,
                      int tag) = 0;
  virtual Status recv(void *data, std::size_t bytes, int peer, int tag) = 0;
  /// Returns once every rank has entered it.
  virtual Status barrier() = 0;

  /// Ends every rank of the job now with exit status `code`, after flushing
  /// stdout and stderr: for a rank that failed while others may wait for it
  /// in a collective. MPI: MPI_Abort; by default (one rank) the process
  /// exits.
  [[noreturn]] virtual void abort(int code);

  /// Collective: ranks with the same `color` form a new group, ordered by
  /// `key` (ties by rank). This is how a mesh axis gets its own group.
  virtual Status split(int color, int key,
                       std::unique_ptr<Communicator> &result) = 0;

protected:
  /// Argument checks shared by the backends; `what` names the call.
  Status checkPeer(const char *what, int peer) const;
  Status checkTag(const char *what, int tag) const;
};

/// A group of one rank: collectives are copies, point-to-point is an error
/// (there is no peer).
std::unique_ptr<Communicator> createLocalCommunicator();

/// True when the runtime was built with the MPI backend.
bool hasMpiBackend();

/// The MPI world communicator. Initializes MPI unless the program did, and
/// sets MPI_ERRORS_RETURN on every communicator it makes. When it initialized
/// MPI, the last communicator derived from it (world or split) finalizes MPI
/// on destruction; MPI cannot start again in that process. An error without
/// the backend.
Status createMpiWorldCommunicator(std::unique_ptr<Communicator> &result);

/// True when the runtime was built with the NCCL backend (library
/// tpcrt_nccl, which defines this and createNcclCommunicator).
bool hasNcclBackend();

/// Collective over `bootstrap`: an NCCL communicator of the same ranks, in
/// the same order, on CUDA device `device` of this rank. Rank 0 makes the
/// NCCL unique id and broadcasts it over `bootstrap` (the MPI world, or the
/// local communicator for one rank). Its buffers are device memory of
/// `device`, and every call returns once its result is there. `bootstrap`
/// must outlive it and the groups split from it: abort() ends the job through
/// it. An error on every rank when any rank's device is unusable, and
/// without the backend.
Status createNcclCommunicator(Communicator &bootstrap, int device,
                              std::unique_ptr<Communicator> &result);

} // namespace tpcrt

#endif // TPCRT_COMM_H
