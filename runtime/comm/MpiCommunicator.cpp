//===- MpiCommunicator.cpp - the MPI backend -------------------------------===//
//
// Every communicator made here has MPI_ERRORS_RETURN, so a failed call comes
// back as an error code that becomes a Status (the default handler aborts
// the whole job). MPI counts are ints: larger transfers are refused with an
// error rather than truncated.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Comm.h"
#include "tpcrt/Watchdog.h"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tpcrt;

namespace {

/// Finalizes MPI when the last communicator that needs it goes away, if
/// this runtime initialized it (a program that called MPI_Init owns it).
struct MpiSession {
  bool ownsMpi = false;
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (ownsMpi && !finalized)
      MPI_Finalize();
  }
};

Status mpiStatus(const char *what, int code) {
  if (code == MPI_SUCCESS)
    return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return Status::error(std::string(what) + ": MPI error code " +
                         std::to_string(code));
  return Status::error(std::string(what) + ": MPI: " +
                       std::string(text, length));
}

Status checkCount(const char *what, std::size_t count, const char *unit) {
  if (count > static_cast<std::size_t>(INT_MAX))
    return Status::error(std::string(what) + ": " + std::to_string(count) +
                         " " + unit + " exceed MPI's int count (" +
                         std::to_string(INT_MAX) + ")");
  return Status::ok();
}

/// A received message must have the length asked for (MPI reports a longer
/// one itself, as MPI_ERR_TRUNCATE).
Status checkReceived(const char *what, const MPI_Status &status,
                     std::size_t bytes, int peer) {
  int received = 0;
  MPI_Get_count(&status, MPI_BYTE, &received);
  if (static_cast<std::size_t>(received) != bytes)
    return Status::error(std::string(what) + ": got " +
                         std::to_string(received) + " bytes from rank " +
                         std::to_string(peer) + ", expected " +
                         std::to_string(bytes));
  return Status::ok();
}

/// An MPI_Isend or MPI_Irecv in flight, or idle between two (a Request
/// reuses it). It keeps the MPI session alive, so that MPI is not finalized
/// under it; MPI itself keeps a freed communicator's pending transfers going.
class MpiRequest final : public Request::State {
public:
  explicit MpiRequest(std::shared_ptr<MpiSession> session)
      : session_(std::move(session)) {}
  ~MpiRequest() override {
    // A program that initialized MPI may have finalized it already (an
    // error of its own): no MPI call is allowed then.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (request_ != MPI_REQUEST_NULL && !finalized)
      MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  /// Takes the transfer `started` (by `what`, of `bytes` bytes from or to
  /// `peer`).
  void start(const char *what, MPI_Request started, bool isRecv,
             std::size_t bytes, int peer, const std::string *group) {
    what_ = what;
    group_ = group;
    request_ = started;
    isRecv_ = isRecv;
    bytes_ = bytes;
    peer_ = peer;
  }

  Status wait() override {
    MPI_Status status;
    int code;
    {
      WaitGuard guard(isRecv_ ? "wait for a recv" : "wait for a send",
                      group_);
      code = MPI_Wait(&request_, &status);
    }
    // Whatever the outcome, the transfer is over: never wait for it again.
    request_ = MPI_REQUEST_NULL;
    int received = 0;
    if (code == MPI_SUCCESS && isRecv_)
      MPI_Get_count(&status, MPI_BYTE, &received);
    if (code == MPI_SUCCESS &&
        (!isRecv_ || static_cast<std::size_t>(received) == bytes_))
      return Status::ok(); // (words nothing: a step's waits allocate nothing)
    std::string what = std::string("wait for ") + what_;
    if (Status s = mpiStatus(what.c_str(), code); !s)
      return s;
    return checkReceived(what.c_str(), status, bytes_, peer_);
  }

private:
  std::shared_ptr<MpiSession> session_;
  const char *what_ = "";
  const std::string *group_ = nullptr;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool isRecv_ = false;
  std::size_t bytes_ = 0;
  int peer_ = 0;
};

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(std::shared_ptr<MpiSession> session, MPI_Comm comm,
                  bool ownsComm)
      : session_(std::move(session)), comm_(comm), ownsComm_(ownsComm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (ownsComm_)
      MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backendName() const override { return "mpi"; }

  Status allReduceSum(float *data, std::size_t count) override {
    return allReduce("allReduceSum", data, count, MPI_FLOAT, MPI_SUM);
  }

  Status allReduceSum(int64_t *data, std::size_t count) override {
    return allReduce("allReduceSum", data, count, MPI_INT64_T, MPI_SUM);
  }

  Status allReduceMax(float *data, std::size_t count) override {
    return allReduce("allReduceMax", data, count, MPI_FLOAT, MPI_MAX);
  }

  Status allToAll(const void *send, void *recv, std::size_t bytes) override {
    if (Status s = checkCount("allToAll", bytes, "bytes"); !s)
      return s;
    int n = static_cast<int>(bytes);
    WaitGuard guard("all_to_all", &label());
    return mpiStatus("allToAll", MPI_Alltoall(send, n, MPI_BYTE, recv, n,
                                              MPI_BYTE, comm_));
  }

  Status allGather(const void *send, void *recv, std::size_t bytes) override {
    if (Status s = checkCount("allGather", bytes, "bytes"); !s)
      return s;
    int n = static_cast<int>(bytes);
    WaitGuard guard("all_gather", &label());
    return mpiStatus("allGather", MPI_Allgather(send, n, MPI_BYTE, recv, n,
                                                MPI_BYTE, comm_));
  }

  Status reduceScatterSum(const float *send, float *recv,
                          std::size_t count) override {
    if (Status s = checkCount("reduceScatterSum", count, "elements"); !s)
      return s;
    WaitGuard guard("reduce_scatter", &label());
    return mpiStatus("reduceScatterSum",
                     MPI_Reduce_scatter_block(send, recv,
                                              static_cast<int>(count),
                                              MPI_FLOAT, MPI_SUM, comm_));
  }

  Status broadcast(void *data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return Status::error("broadcast: root rank " + std::to_string(root) +
                           " is outside [0, " + std::to_string(size_) + ")");
    if (Status s = checkCount("broadcast", bytes, "bytes"); !s)
      return s;
    WaitGuard guard("broadcast", &label());
    return mpiStatus("broadcast", MPI_Bcast(data, static_cast<int>(bytes),
                                            MPI_BYTE, root, comm_));
  }

  Status send(const void *data, std::size_t bytes, int peer,
              int tag) override {
    if (Status s = checkArgs("send", bytes, peer, tag); !s)
      return s;
    WaitGuard guard("send", &label());
    return mpiStatus("send", MPI_Send(data, static_cast<int>(bytes), MPI_BYTE,
                                      peer, tag, comm_));
  }

  Status recv(void *data, std::size_t bytes, int peer, int tag) override {
    if (Status s = checkArgs("recv", bytes, peer, tag); !s)
      return s;
    MPI_Status status;
    WaitGuard guard("recv", &label());
    if (Status s = mpiStatus("recv", MPI_Recv(data, static_cast<int>(bytes),
                                              MPI_BYTE, peer, tag, comm_,
                                              &status));
        !s)
      return s;
    return checkReceived("recv", status, bytes, peer);
  }

  Status sendRecv(const void *sendData, std::size_t sendBytes, int sendPeer,
                  void *recvData, std::size_t recvBytes, int recvPeer,
                  int tag) override {
    if (Status s = checkSendRecv("sendRecv", sendBytes, sendPeer, recvBytes,
                                 recvPeer, tag);
        !s)
      return s;
    if (Status s = checkCount("sendRecv", sendBytes, "bytes"); !s)
      return s;
    if (Status s = checkCount("sendRecv", recvBytes, "bytes"); !s)
      return s;
    if (sendPeer == rank_) {
      if (sendBytes)
        std::memmove(recvData, sendData, sendBytes);
      return Status::ok();
    }
    MPI_Status status;
    WaitGuard guard("send_recv", &label());
    if (Status s = mpiStatus("sendRecv",
                             MPI_Sendrecv(sendData, static_cast<int>(sendBytes),
                                          MPI_BYTE, sendPeer, tag, recvData,
                                          static_cast<int>(recvBytes), MPI_BYTE,
                                          recvPeer, tag, comm_, &status));
        !s)
      return s;
    return checkReceived("sendRecv", status, recvBytes, recvPeer);
  }

  Status startSend(const void *data, std::size_t bytes, int peer, int tag,
                   Request &request) override {
    if (Status s = checkStart("startSend", bytes, peer, tag, request); !s)
      return s;
    MpiRequest &state = stateFor(request);
    MPI_Request started;
    if (Status s = mpiStatus("startSend",
                             MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE,
                                       peer, tag, comm_, &started));
        !s)
      return s;
    state.start("startSend", started, false, bytes, peer, &label());
    markStarted(request);
    return Status::ok();
  }

  Status startRecv(void *data, std::size_t bytes, int peer, int tag,
                   Request &request) override {
    if (Status s = checkStart("startRecv", bytes, peer, tag, request); !s)
      return s;
    MpiRequest &state = stateFor(request);
    MPI_Request started;
    if (Status s = mpiStatus("startRecv",
                             MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE,
                                       peer, tag, comm_, &started));
        !s)
      return s;
    state.start("startRecv", started, true, bytes, peer, &label());
    markStarted(request);
    return Status::ok();
  }

  Status prepareRequest(Request &request) override {
    if (Status s = Communicator::prepareRequest(request); !s)
      return s;
    stateFor(request);
    return Status::ok();
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(comm_, code);
    std::_Exit(code); // should MPI_Abort return
  }

  Status barrier() override {
    WaitGuard guard("barrier", &label());
    return mpiStatus("barrier", MPI_Barrier(comm_));
  }

  Status split(int color, int key,
               std::unique_ptr<Communicator> &result) override {
    if (color < 0)
      return Status::error("split: color " + std::to_string(color) +
                           " is negative");
    MPI_Comm sub;
    if (Status s = mpiStatus("split", MPI_Comm_split(comm_, color, key, &sub));
        !s)
      return s;
    if (Status s = mpiStatus("split", MPI_Comm_set_errhandler(
                                          sub, MPI_ERRORS_RETURN));
        !s) {
      MPI_Comm_free(&sub);
      return s;
    }
    result = std::make_unique<MpiCommunicator>(session_, sub, true);
    return Status::ok();
  }

private:
  Status allReduce(const char *what, void *data, std::size_t count,
                   MPI_Datatype type, MPI_Op op) {
    if (Status s = checkCount(what, count, "elements"); !s)
      return s;
    WaitGuard guard("all_reduce", &label());
    return mpiStatus(what, MPI_Allreduce(MPI_IN_PLACE, data,
                                         static_cast<int>(count), type, op,
                                         comm_));
  }

  Status checkArgs(const char *what, std::size_t bytes, int peer, int tag) {
    if (Status s = checkPeer(what, peer); !s)
      return s;
    if (Status s = checkTag(what, tag); !s)
      return s;
    return checkCount(what, bytes, "bytes");
  }

  /// `request`'s MPI state, made once (the request is idle).
  MpiRequest &stateFor(Request &request) {
    if (!stateOf<MpiRequest>(request))
      setState(request, std::make_unique<MpiRequest>(session_));
    return *stateOf<MpiRequest>(request);
  }

  Status checkStart(const char *what, std::size_t bytes, int peer, int tag,
                    const Request &request) {
    if (Status s = checkArgs(what, bytes, peer, tag); !s)
      return s;
    return checkIdle(what, request);
  }

  std::shared_ptr<MpiSession> session_;
  MPI_Comm comm_;
  bool ownsComm_;
  int rank_ = 0;
  int size_ = 1;
};

} // namespace

bool tpcrt::hasMpiBackend() { return true; }

Status tpcrt::createMpiWorldCommunicator(std::unique_ptr<Communicator> &result) {
  // Shared by every communicator of this process, so finalization waits for
  // the last one.
  static std::weak_ptr<MpiSession> current;
  std::shared_ptr<MpiSession> session = current.lock();
  if (!session) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return Status::error("MPI was already finalized in this process");
    session = std::make_shared<MpiSession>();
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      if (Status s = mpiStatus("MPI_Init", MPI_Init(nullptr, nullptr)); !s)
        return s;
      session->ownsMpi = true;
    }
    current = session;
  }
  // MPI_COMM_WORLD is not ours to free; errors on it must come back too.
  if (Status s = mpiStatus("MPI_Comm_set_errhandler",
                           MPI_Comm_set_errhandler(MPI_COMM_WORLD,
                                                   MPI_ERRORS_RETURN));
      !s)
    return s;
  result = std::make_unique<MpiCommunicator>(session, MPI_COMM_WORLD, false);
  return Status::ok();
}
