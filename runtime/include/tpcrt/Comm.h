//===- Comm.h - communicators between ranks ---------------------*- C++ -*-===//
//
// A Communicator is a group of ranks that run collectives together. Every
// call returns a Status: a failed transfer, a bad argument or a peer that went
// away is an error value, never an abort. Buffers are host memory (device
// memory for NCCL); counts are elements (reductions) or bytes (data movement,
// which is type-blind).
//
// Point-to-point: blocking send/recv, and for pipelines (where both
// neighbours send at once) sendRecv and started transfers (startSend,
// startRecv, then wait on their Request), which cannot deadlock that way.
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
#include <utility>

namespace tpcrt {

/// A point-to-point transfer in flight, from Communicator::startSend or
/// startRecv, until Communicator::wait (or waitAll) completes it. Movable, not
/// copyable. A default-constructed Request has nothing in flight, and waiting
/// on it returns ok at once; so does a Request already waited for, and one
/// whose start returned an error.
///
/// A Request keeps its backend's state after the wait, and the next start on
/// it reuses that state: a Request reused for transfer after transfer (or
/// prepared once by Communicator::prepareRequest) allocates nothing per
/// transfer, as a runtime step must not.
///
/// A Request that is destroyed, or assigned to, while its transfer is in
/// flight first waits for the transfer (as wait() would, dropping its
/// Status), so the transfer's buffer is never used after the Request is gone;
/// that blocks like a blocking call would while the peer has not posted its
/// side. Call wait() to see a transfer's error. A Request may outlive the
/// Communicator that started it: it keeps what its transfer needs alive.
class Request {
public:
  /// A backend's transfer (for backends; users never see one), in flight
  /// from its start to its wait, then idle until the next start on it.
  class State {
  public:
    /// Waits for a transfer in flight (see Request).
    virtual ~State();
    /// Returns once the transfer is complete (or failed), with its outcome.
    /// Called once per start.
    virtual Status wait() = 0;
  };

  Request() = default;
  /// A transfer in flight with `state`.
  explicit Request(std::unique_ptr<State> state)
      : state_(std::move(state)), inFlight_(state_ != nullptr) {}
  Request(Request &&other) noexcept
      : state_(std::move(other.state_)),
        inFlight_(std::exchange(other.inFlight_, false)) {}
  Request &operator=(Request &&other) noexcept {
    if (this != &other) {
      state_ = std::move(other.state_);
      inFlight_ = std::exchange(other.inFlight_, false);
    }
    return *this;
  }
  Request(const Request &) = delete;
  Request &operator=(const Request &) = delete;
  ~Request() = default;

  /// True between a successful start and the wait for it.
  bool inFlight() const { return inFlight_; }

private:
  friend class Communicator;
  std::unique_ptr<State> state_;
  bool inFlight_ = false;
};

class Communicator {
public:
  virtual ~Communicator();

  /// This rank's index in the group, in [0, size()).
  virtual int rank() const = 0;
  /// The number of ranks in the group.
  virtual int size() const = 0;
  /// The backend's name ("local", "mpi"), for messages.
  virtual std::string backendName() const = 0;
  /// What the group is, for messages (the interpreter names a mesh group by
  /// its axes: "[tp]"); empty by default.
  const std::string &label() const { return label_; }
  void setLabel(std::string label) { label_ = std::move(label); }

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
  /// send with its recv. `peer` is another rank of the group.
  virtual Status send(const void *data, std::size_t bytes, int peer,
                      int tag) = 0;
  virtual Status recv(void *data, std::size_t bytes, int peer, int tag) = 0;

  /// Sends `sendBytes` bytes to `sendPeer` and receives `recvBytes` bytes from
  /// `recvPeer`, both with `tag` (>= 0), posted together: it cannot deadlock
  /// against a peer that sends to this rank at the same time (a ring, or the
  /// two neighbours of a pipeline exchanging). Returns once both are done.
  /// The two buffers must not overlap. When both peers are this rank the call
  /// copies sendData to recvData (the sizes must agree); only one of them
  /// being this rank is an error. A received message of another length than
  /// `recvBytes` is an error where the backend can tell (not NCCL). A backend
  /// without it returns an error.
  virtual Status sendRecv(const void *sendData, std::size_t sendBytes,
                          int sendPeer, void *recvData, std::size_t recvBytes,
                          int recvPeer, int tag);

  /// Nonblocking send and recv: start the transfer, set `request` to it and
  /// return; wait(request) completes it. The buffer must stay valid, and a
  /// send's data unchanged (a recv's unread), until that wait returns. A
  /// started transfer pairs with any send or recv of the peer (blocking or
  /// not) with the same tag, in the order they were issued. `peer` is
  /// another rank of the group: a started transfer to or from this rank is an
  /// error (use sendRecv), and so is a `request` that has a transfer in
  /// flight already. On an error nothing is started and `request` is left as
  /// it was. NCCL launches the started transfers of a communicator together,
  /// at the first wait on one of them or its next other call (see
  /// docs/runtime/comm.md). A backend without them returns an error.
  virtual Status startSend(const void *data, std::size_t bytes, int peer,
                           int tag, Request &request);
  virtual Status startRecv(void *data, std::size_t bytes, int peer, int tag,
                           Request &request);
  /// Gives `request` the state this backend's starts use, so that starting
  /// transfers on it allocates nothing (a device prepares the requests of
  /// its steps once). A start on a Request without it makes it then. An
  /// error for a request in flight; ok and nothing done where the backend's
  /// starts allocate anyway (the default, NCCL).
  virtual Status prepareRequest(Request &request);
  /// Returns once `request`'s transfer is complete, with its outcome (a recv
  /// of another length than asked for is an error where the backend can
  /// tell); `request` then has nothing in flight, even on an error. Ok at
  /// once when nothing is in flight. Any communicator may wait: the Request
  /// knows its own. (Inline, as waitAll: a device that waits links no
  /// communicator.)
  Status wait(Request &request) {
    if (!request.inFlight_)
      return Status::ok();
    // Whatever the outcome, the transfer is over; the state stays for the
    // next start (its destructor does not wait again once wait() has run).
    request.inFlight_ = false;
    return request.state_->wait();
  }
  /// wait() on each of `count` requests, in order; every one is waited for
  /// even after an error, and the first error is returned.
  Status waitAll(Request *requests, std::size_t count) {
    Status first = Status::ok();
    for (std::size_t i = 0; i < count; ++i)
      if (Status s = wait(requests[i]); !s && first)
        first = s;
    return first;
  }

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
  /// sendRecv's checks: both peers in the group, either both this rank (with
  /// equal sizes) or neither, and the tag.
  Status checkSendRecv(const char *what, std::size_t sendBytes, int sendPeer,
                       std::size_t recvBytes, int recvPeer, int tag) const;
  /// A start's check that `request` has nothing in flight.
  Status checkIdle(const char *what, const Request &request) const;
  /// For a backend's starts: `request`'s state if it is a T (a start or
  /// prepareRequest of this backend made it), else null.
  template <typename T> static T *stateOf(Request &request) {
    return dynamic_cast<T *>(request.state_.get());
  }
  /// Makes `state` `request`'s (which has nothing in flight).
  static void setState(Request &request,
                       std::unique_ptr<Request::State> state) {
    request.state_ = std::move(state);
  }
  /// Marks `request`'s state started: in flight until its wait.
  static void markStarted(Request &request) { request.inFlight_ = true; }

private:
  std::string label_;
};

/// A group of one rank: collectives are copies, point-to-point is an error
/// (there is no peer) except sendRecv with this rank as both peers, a copy.
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
