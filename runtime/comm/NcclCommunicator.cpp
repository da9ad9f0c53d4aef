//===- NcclCommunicator.cpp - the NCCL backend ----------------------------===//
//
// Collectives between GPUs on device buffers. A world communicator and the
// groups split from it share one CUDA stream on their device; every call
// enqueues its NCCL operation there and waits for it, polling
// ncclCommGetAsyncError so that a peer or network failure comes back as an
// error (and aborts the NCCL communicator) instead of hanging in
// cudaStreamSynchronize. Started transfers (startSend, startRecv) wait in a
// list until the first wait on one of them or the communicator's next call,
// then go out together as one NCCL group (NCCL point-to-point operations that
// must progress together complete only in one group) followed by an event
// that wait() polls. NCCL is not linked: the library is opened at run time
// (cuda/NcclLibrary.h: $TPCRT_NCCL_LIBRARY, the loader's path, the CUDA
// toolkit, the Python wheels) and called through its table. The library
// tpcrt_nccl compiles the backend only where CUDA and an nccl.h of NCCL >=
// 2.18 (ncclCommSplit) are found; elsewhere this file holds the stubs that
// say so.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Comm.h"

#ifdef TPCRT_HAVE_NCCL

#include "tpcrt/Devices.h"

#include "../cuda/NcclLibrary.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <thread>
#include <vector>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL communicator needs NCCL >= 2.18 (ncclCommSplit)"
#endif

using namespace tpcrt;

namespace {

/// NCCL's functions. createNcclCommunicator opens the library before
/// anything else here runs, so this only returns the table it opened.
const NcclLibrary &nccl() {
  const NcclLibrary *library = nullptr;
  loadNcclLibrary(library, nullptr);
  return *library;
}

Status cudaStatus(const std::string &what, cudaError_t err) {
  if (err == cudaSuccess)
    return Status::ok();
  return Status::error(what + ": CUDA: " + cudaGetErrorString(err));
}

Status ncclStatus(const std::string &what, ncclResult_t result) {
  if (result == ncclSuccess)
    return Status::ok();
  std::string message = what + ": NCCL: " + nccl().getErrorString(result);
  // This process's last NCCL error names the failing step, e.g. the peer.
  if (const char *detail = nccl().getLastError(nullptr); detail && *detail)
    message += std::string(" (") + detail + ")";
  return Status::error(message);
}

/// Makes `device` current for a scope (NCCL calls and streams act on the
/// current device) and gives the caller's back afterwards.
class DeviceScope {
public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess)
      previous_ = -1;
    if (previous_ != device)
      err_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0 && err_ == cudaSuccess)
      cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

  Status status(const std::string &what) const {
    return cudaStatus(what, err_);
  }

private:
  int previous_ = -1;
  cudaError_t err_ = cudaSuccess;
};

/// The stream a world communicator and its groups run on, and a zeroed
/// device float that barrier() reduces.
struct DeviceResources {
  int device = -1;
  cudaStream_t stream = nullptr;
  float *scratch = nullptr;

  ~DeviceResources() {
    DeviceScope scope(device);
    if (scratch)
      cudaFree(scratch);
    if (stream)
      cudaStreamDestroy(stream);
  }

  static Status create(int device, std::shared_ptr<DeviceResources> &result) {
    std::string reason;
    int count = cudaDeviceCount(&reason);
    if (count == 0)
      return Status::error(
          reason == "no CUDA device" ? reason : "no CUDA device: " + reason);
    if (device < 0 || device >= count)
      return Status::error("CUDA device " + std::to_string(device) +
                           " is outside [0, " + std::to_string(count) + ")");
    DeviceScope scope(device);
    if (Status s = scope.status("cudaSetDevice"); !s)
      return s;
    auto resources = std::make_shared<DeviceResources>();
    resources->device = device;
    // A blocking stream: work the caller queued on the legacy default stream
    // finishes before a collective reads its buffers.
    if (Status s = cudaStatus("cudaStreamCreate",
                              cudaStreamCreate(&resources->stream));
        !s)
      return s;
    if (Status s = cudaStatus(
            "cudaMalloc",
            cudaMalloc(reinterpret_cast<void **>(&resources->scratch),
                       sizeof(float)));
        !s)
      return s;
    if (Status s = cudaStatus("cudaMemset",
                              cudaMemset(resources->scratch, 0, sizeof(float)));
        !s)
      return s;
    result = std::move(resources);
    return Status::ok();
  }
};

/// One launch of started transfers (one NCCL group) and the event recorded
/// after it on the stream.
struct NcclBatch {
  int device = -1;
  /// Null once known complete without one (see NcclShared::launch).
  cudaEvent_t event = nullptr;
  /// Set when the communicator was aborted before the batch completed.
  Status failure = Status::ok();

  ~NcclBatch() {
    if (!event)
      return;
    DeviceScope scope(device);
    cudaEventDestroy(event);
  }
};

/// A transfer from startSend/startRecv or a blocking point-to-point call.
struct NcclTransfer {
  bool isSend = false;
  void *data = nullptr;
  std::size_t bytes = 0;
  int peer = 0;
  /// Its launch, once launched.
  std::shared_ptr<NcclBatch> batch;
  /// Set when it could not be launched.
  Status failure = Status::ok();

  static std::shared_ptr<NcclTransfer> make(bool isSend, const void *data,
                                            std::size_t bytes, int peer) {
    auto t = std::make_shared<NcclTransfer>();
    t->isSend = isSend;
    // ncclSend takes a const pointer; a send's data is never written.
    t->data = const_cast<void *>(data);
    t->bytes = bytes;
    t->peer = peer;
    return t;
  }
};

/// The NCCL communicator and what the transfers in flight share with the
/// Communicator object, so that a Request may outlive it: the NCCL
/// communicator is destroyed with the last of them.
struct NcclShared {
  ncclComm_t comm = nullptr;
  std::shared_ptr<DeviceResources> resources;
  /// Started, not launched yet, in issue order.
  std::vector<std::shared_ptr<NcclTransfer>> pending;
  /// Launched batches that may still be waited for.
  std::vector<std::weak_ptr<NcclBatch>> batches;

  ~NcclShared() {
    if (!comm)
      return;
    DeviceScope scope(resources->device);
    nccl().commDestroy(comm);
  }

  cudaStream_t stream() const { return resources->stream; }

  Status checkAlive(const std::string &what) const {
    if (!comm)
      return Status::error(what +
                           ": the NCCL communicator was aborted after an "
                           "earlier error");
    return Status::ok();
  }

  /// Launches the pending transfers as one group (so that they progress
  /// together) and records an event after them. On an error every one of
  /// them carries it. The caller makes the device current.
  Status launch(const std::string &what) {
    if (pending.empty())
      return Status::ok();
    std::vector<std::shared_ptr<NcclTransfer>> group;
    group.swap(pending);
    auto fail = [&](const Status &s) {
      for (const std::shared_ptr<NcclTransfer> &t : group)
        t->failure = s;
      return s;
    };
    if (Status s = checkAlive(what); !s)
      return fail(s);
    ncclResult_t result = nccl().groupStart();
    if (result != ncclSuccess)
      return fail(ncclStatus(what, result));
    for (const std::shared_ptr<NcclTransfer> &t : group) {
      result = t->isSend ? nccl().send(t->data, t->bytes, ncclUint8, t->peer,
                                       comm, stream())
                         : nccl().recv(t->data, t->bytes, ncclUint8, t->peer,
                                       comm, stream());
      if (result != ncclSuccess)
        break;
    }
    ncclResult_t ended = nccl().groupEnd();
    if (result == ncclSuccess)
      result = ended;
    if (result != ncclSuccess)
      return fail(ncclStatus(what, result));

    auto batch = std::make_shared<NcclBatch>();
    batch->device = resources->device;
    cudaError_t err =
        cudaEventCreateWithFlags(&batch->event, cudaEventDisableTiming);
    if (err == cudaSuccess)
      err = cudaEventRecord(batch->event, stream());
    if (err != cudaSuccess) {
      // Without an event, the batch is waited for here, with the stream.
      if (batch->event)
        cudaEventDestroy(batch->event);
      batch->event = nullptr;
      if (Status s = waitStream(what); !s)
        return fail(s);
    }
    for (const std::shared_ptr<NcclTransfer> &t : group)
      t->batch = batch;
    std::vector<std::weak_ptr<NcclBatch>> live;
    for (const std::weak_ptr<NcclBatch> &b : batches)
      if (!b.expired())
        live.push_back(b);
    live.push_back(batch);
    batches.swap(live);
    return Status::ok();
  }

  /// Returns once the stream is done. The caller makes the device current.
  Status waitStream(const std::string &what) {
    return poll(what, [&] { return cudaStreamQuery(stream()); });
  }

  /// Returns once `t` is done, launching it with the other pending
  /// transfers first if it has not been.
  Status waitTransfer(const std::string &what, NcclTransfer &t) {
    DeviceScope scope(resources->device);
    if (Status s = scope.status(what); !s)
      return s;
    if (!t.batch && t.failure)
      if (Status s = launch(what); !s)
        return s;
    if (!t.failure)
      return t.failure;
    if (!t.batch) // not expected: a transfer is pending, launched or failed
      return Status::error(what + ": the transfer was never launched");
    NcclBatch &batch = *t.batch;
    if (!batch.failure)
      return batch.failure;
    if (!batch.event)
      return Status::ok();
    if (cudaEventQuery(batch.event) == cudaSuccess)
      return Status::ok();
    if (Status s = checkAlive(what); !s)
      return s;
    return poll(what, [&] { return cudaEventQuery(batch.event); });
  }

  /// Polls `query` until the work it watches is done, and
  /// ncclCommGetAsyncError meanwhile, so that a peer or network failure
  /// comes back as an error instead of a hang.
  template <typename Query> Status poll(const std::string &what, Query query) {
    for (;;) {
      cudaError_t err = query();
      if (err == cudaSuccess)
        return Status::ok();
      if (err != cudaErrorNotReady)
        return cudaStatus(what, err);
      if (Status s = checkAlive(what); !s)
        return s;
      ncclResult_t async = ncclSuccess;
      if (Status s = ncclStatus(what, nccl().commGetAsyncError(comm, &async));
          !s)
        return s;
      if (async != ncclSuccess && async != ncclInProgress) {
        Status s = ncclStatus(what, async);
        abortComm(s);
        return s;
      }
      std::this_thread::yield();
    }
  }

  /// The operations in flight can no longer complete: aborting the
  /// communicator ends its kernels, so the stream drains; the batches not
  /// complete by then and the transfers not launched fail with `cause`, and
  /// later calls are refused. The caller makes the device current.
  void abortComm(const Status &cause) {
    Status failure = Status::error(
        "the NCCL communicator was aborted before the transfer completed: " +
        cause.message());
    for (const std::weak_ptr<NcclBatch> &b : batches)
      if (std::shared_ptr<NcclBatch> batch = b.lock())
        if (batch->event && cudaEventQuery(batch->event) != cudaSuccess)
          batch->failure = failure;
    batches.clear();
    for (const std::shared_ptr<NcclTransfer> &t : pending)
      t->failure = failure;
    pending.clear();
    nccl().commAbort(comm);
    comm = nullptr;
  }
};

/// A started transfer: waiting for it launches it with the communicator's
/// other pending ones if no call has yet.
class NcclRequest final : public Request::State {
public:
  NcclRequest(std::shared_ptr<NcclShared> shared, const char *what,
              std::shared_ptr<NcclTransfer> transfer)
      : shared_(std::move(shared)), what_(what),
        transfer_(std::move(transfer)) {}
  ~NcclRequest() override {
    if (!waited_)
      wait();
  }

  Status wait() override {
    waited_ = true;
    return shared_->waitTransfer(std::string("wait for ") + what_, *transfer_);
  }

private:
  std::shared_ptr<NcclShared> shared_;
  const char *what_;
  std::shared_ptr<NcclTransfer> transfer_;
  bool waited_ = false;
};

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(Communicator &bootstrap, ncclComm_t comm,
                   std::shared_ptr<DeviceResources> resources)
      : bootstrap_(bootstrap), shared_(std::make_shared<NcclShared>()) {
    shared_->comm = comm;
    shared_->resources = std::move(resources);
    nccl().commUserRank(comm, &rank_);
    nccl().commCount(comm, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backendName() const override { return "nccl"; }

  Status allReduceSum(float *data, std::size_t count) override {
    return allReduce("allReduceSum", data, count, ncclFloat32, ncclSum);
  }

  Status allReduceSum(int64_t *data, std::size_t count) override {
    return allReduce("allReduceSum", data, count, ncclInt64, ncclSum);
  }

  Status allReduceMax(float *data, std::size_t count) override {
    return allReduce("allReduceMax", data, count, ncclFloat32, ncclMax);
  }

  Status allGather(const void *send, void *recv, std::size_t bytes) override {
    return run("allGather", bytes, [&] {
      return nccl().allGather(send, recv, bytes, ncclUint8, comm(), stream());
    });
  }

  Status reduceScatterSum(const float *send, float *recv,
                          std::size_t count) override {
    return run("reduceScatterSum", count, [&] {
      return nccl().reduceScatter(send, recv, count, ncclFloat32, ncclSum,
                                  comm(), stream());
    });
  }

  Status allToAll(const void *send, void *recv, std::size_t bytes) override {
    return run("allToAll", bytes, [&] {
      // One group, so that every pair's transfers progress together; the
      // chunk a rank keeps goes through NCCL too (send to self is allowed).
      const auto *in = static_cast<const unsigned char *>(send);
      auto *out = static_cast<unsigned char *>(recv);
      ncclResult_t result = nccl().groupStart();
      if (result != ncclSuccess)
        return result;
      for (int q = 0; q < size_ && result == ncclSuccess; ++q) {
        result =
            nccl().send(in + q * bytes, bytes, ncclUint8, q, comm(), stream());
        if (result == ncclSuccess)
          result = nccl().recv(out + q * bytes, bytes, ncclUint8, q, comm(),
                               stream());
      }
      ncclResult_t ended = nccl().groupEnd();
      return result != ncclSuccess ? result : ended;
    });
  }

  Status broadcast(void *data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return Status::error("broadcast: root rank " + std::to_string(root) +
                           " is outside [0, " + std::to_string(size_) + ")");
    return run("broadcast", bytes, [&] {
      return nccl().broadcast(data, data, bytes, ncclUint8, root, comm(),
                              stream());
    });
  }

  // NCCL has no tags: transfers between two ranks pair in issue order. A
  // send returns once the peer has received (a rendezvous, like MPI_Ssend).
  // Blocking transfers join the started ones not launched yet in one group.
  Status send(const void *data, std::size_t bytes, int peer, int tag) override {
    if (Status s = checkPointToPoint("send", peer, tag); !s)
      return s;
    return transfer("send", {NcclTransfer::make(true, data, bytes, peer)});
  }

  Status recv(void *data, std::size_t bytes, int peer, int tag) override {
    if (Status s = checkPointToPoint("recv", peer, tag); !s)
      return s;
    return transfer("recv", {NcclTransfer::make(false, data, bytes, peer)});
  }

  // Both in one group; with this rank as both peers, NCCL's send to self.
  Status sendRecv(const void *sendData, std::size_t sendBytes, int sendPeer,
                  void *recvData, std::size_t recvBytes, int recvPeer,
                  int tag) override {
    if (Status s = checkSendRecv("sendRecv", sendBytes, sendPeer, recvBytes,
                                 recvPeer, tag);
        !s)
      return s;
    return transfer("sendRecv",
                    {NcclTransfer::make(true, sendData, sendBytes, sendPeer),
                     NcclTransfer::make(false, recvData, recvBytes, recvPeer)});
  }

  Status startSend(const void *data, std::size_t bytes, int peer, int tag,
                   Request &request) override {
    return start("startSend", true, data, bytes, peer, tag, request);
  }

  Status startRecv(void *data, std::size_t bytes, int peer, int tag,
                   Request &request) override {
    return start("startRecv", false, data, bytes, peer, tag, request);
  }

  Status barrier() override {
    return run("barrier", 1, [&] {
      return nccl().allReduce(resources().scratch, resources().scratch, 1,
                              ncclFloat32, ncclSum, comm(), stream());
    });
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    if (comm()) {
      DeviceScope scope(resources().device);
      nccl().commAbort(comm());
      shared_->comm = nullptr;
    }
    // NCCL ends only this rank's communicator; the bootstrap ends the job.
    bootstrap_.abort(code);
    std::_Exit(code); // a virtual call is not known not to return
  }

  Status split(int color, int key,
               std::unique_ptr<Communicator> &result) override {
    if (color < 0)
      return Status::error("split: color " + std::to_string(color) +
                           " is negative");
    if (Status s = shared_->checkAlive("split"); !s)
      return s;
    DeviceScope scope(resources().device);
    if (Status s = scope.status("split"); !s)
      return s;
    if (Status s = shared_->launch("split"); !s)
      return s;
    ncclComm_t sub = nullptr;
    // A null config: the group inherits this communicator's.
    if (Status s = ncclStatus(
            "split", nccl().commSplit(comm(), color, key, &sub, nullptr));
        !s)
      return s;
    result =
        std::make_unique<NcclCommunicator>(bootstrap_, sub, shared_->resources);
    return Status::ok();
  }

private:
  ncclComm_t comm() const { return shared_->comm; }
  DeviceResources &resources() const { return *shared_->resources; }
  cudaStream_t stream() const { return shared_->stream(); }

  Status checkPointToPoint(const char *what, int peer, int tag) const {
    if (Status s = checkPeer(what, peer); !s)
      return s;
    return checkTag(what, tag);
  }

  Status allReduce(const char *what, void *data, std::size_t count,
                   ncclDataType_t type, ncclRedOp_t op) {
    return run(what, count, [&] {
      return nccl().allReduce(data, data, count, type, op, comm(), stream());
    });
  }

  /// Launches the pending started transfers, then enqueues one operation
  /// (nothing for an empty one: every rank of a valid call passes the same
  /// count) and waits until the stream is done.
  template <typename Enqueue>
  Status run(const char *what, std::size_t count, Enqueue enqueue) {
    if (Status s = shared_->checkAlive(what); !s)
      return s;
    DeviceScope scope(resources().device);
    if (Status s = scope.status(what); !s)
      return s;
    if (Status s = shared_->launch(what); !s)
      return s;
    if (count == 0)
      return Status::ok();
    if (Status s = ncclStatus(what, enqueue()); !s)
      return s;
    return shared_->waitStream(what);
  }

  /// Blocking transfers: launched in one group with the pending started
  /// ones (empty ones are skipped: both sides pass the same length), then
  /// waited for with the stream.
  Status transfer(const char *what,
                  std::initializer_list<std::shared_ptr<NcclTransfer>> list) {
    if (Status s = shared_->checkAlive(what); !s)
      return s;
    DeviceScope scope(resources().device);
    if (Status s = scope.status(what); !s)
      return s;
    bool any = false;
    for (const std::shared_ptr<NcclTransfer> &t : list)
      if (t->bytes) {
        shared_->pending.push_back(t);
        any = true;
      }
    if (Status s = shared_->launch(what); !s)
      return s;
    if (!any)
      return Status::ok();
    return shared_->waitStream(what);
  }

  /// startSend and startRecv: the transfer waits in `pending` for the first
  /// wait on one of them or the communicator's next call. An empty one is
  /// complete at once (the peer's is empty too).
  Status start(const char *what, bool isSend, const void *data,
               std::size_t bytes, int peer, int tag, Request &request) {
    if (Status s = checkPointToPoint(what, peer, tag); !s)
      return s;
    if (Status s = checkIdle(what, request); !s)
      return s;
    if (Status s = shared_->checkAlive(what); !s)
      return s;
    if (bytes == 0)
      return Status::ok();
    std::shared_ptr<NcclTransfer> t =
        NcclTransfer::make(isSend, data, bytes, peer);
    shared_->pending.push_back(t);
    request = Request(std::make_unique<NcclRequest>(shared_, what, t));
    return Status::ok();
  }

  Communicator &bootstrap_;
  std::shared_ptr<NcclShared> shared_;
  int rank_ = 0;
  int size_ = 1;
};

} // namespace

bool tpcrt::hasNcclBackend() { return true; }

Status tpcrt::createNcclCommunicator(Communicator &bootstrap, int device,
                                     std::unique_ptr<Communicator> &result) {
  const std::string what = "createNcclCommunicator";
  // Every rank learns whether all can take part before any enters
  // ncclCommInitRank, where the others would wait for a missing rank.
  std::shared_ptr<DeviceResources> resources;
  Status local = DeviceResources::create(device, resources);
  const NcclLibrary *library = nullptr;
  if (local)
    local = loadNcclLibrary(library, nullptr);
  if (Status s = agreeAllReady(bootstrap, local, what); !s)
    return s;

  ncclUniqueId id;
  if (Status s = shareUniqueId(bootstrap, nccl(), what, id); !s)
    return s;

  DeviceScope scope(device);
  if (Status s = scope.status(what); !s)
    return s;
  ncclComm_t comm = nullptr;
  if (Status s =
          ncclStatus(what, nccl().commInitRank(&comm, bootstrap.size(), id,
                                               bootstrap.rank()));
      !s)
    return s;
  result =
      std::make_unique<NcclCommunicator>(bootstrap, comm, std::move(resources));
  return Status::ok();
}

#else // !TPCRT_HAVE_NCCL

bool tpcrt::hasNcclBackend() { return false; }

tpcrt::Status tpcrt::createNcclCommunicator(Communicator &, int,
                                            std::unique_ptr<Communicator> &) {
  return Status::error("createNcclCommunicator: this runtime was built "
                       "without NCCL (TPCRT_HAVE_NCCL off: it needs the CUDA "
                       "toolkit and NCCL >= 2.18; reconfigure)");
}

#endif // TPCRT_HAVE_NCCL
