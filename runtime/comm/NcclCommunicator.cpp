//===- NcclCommunicator.cpp - the NCCL backend ----------------------------===//
//
// Collectives between GPUs on device buffers. A world communicator and the
// groups split from it share one CUDA stream on their device; every call
// enqueues its NCCL operation there and waits for it, polling
// ncclCommGetAsyncError so that a peer or network failure comes back as an
// error (and aborts the NCCL communicator) instead of hanging in
// cudaStreamSynchronize. The library tpcrt_nccl compiles the backend only
// where CUDA and NCCL >= 2.18 (ncclCommSplit) are found; elsewhere this file
// holds the stubs that say so.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Comm.h"

#ifdef TPCRT_HAVE_NCCL

#include "tpcrt/Devices.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL communicator needs NCCL >= 2.18 (ncclCommSplit)"
#endif

using namespace tpcrt;

namespace {

Status cudaStatus(const std::string &what, cudaError_t err) {
  if (err == cudaSuccess)
    return Status::ok();
  return Status::error(what + ": CUDA: " + cudaGetErrorString(err));
}

Status ncclStatus(const std::string &what, ncclResult_t result) {
  if (result == ncclSuccess)
    return Status::ok();
  std::string message = what + ": NCCL: " + ncclGetErrorString(result);
  // This process's last NCCL error names the failing step, e.g. the peer.
  if (const char *detail = ncclGetLastError(nullptr); detail && *detail)
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

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(Communicator &bootstrap, ncclComm_t comm,
                   std::shared_ptr<DeviceResources> resources)
      : bootstrap_(bootstrap), comm_(comm), resources_(std::move(resources)) {
    ncclCommUserRank(comm_, &rank_);
    ncclCommCount(comm_, &size_);
  }
  ~NcclCommunicator() override {
    if (!comm_)
      return;
    DeviceScope scope(resources_->device);
    ncclCommDestroy(comm_);
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
      return ncclAllGather(send, recv, bytes, ncclUint8, comm_, stream());
    });
  }

  Status reduceScatterSum(const float *send, float *recv,
                          std::size_t count) override {
    return run("reduceScatterSum", count, [&] {
      return ncclReduceScatter(send, recv, count, ncclFloat32, ncclSum, comm_,
                               stream());
    });
  }

  Status allToAll(const void *send, void *recv, std::size_t bytes) override {
    return run("allToAll", bytes, [&] {
      // One group, so that every pair's transfers progress together; the
      // chunk a rank keeps goes through NCCL too (send to self is allowed).
      const auto *in = static_cast<const unsigned char *>(send);
      auto *out = static_cast<unsigned char *>(recv);
      ncclResult_t result = ncclGroupStart();
      if (result != ncclSuccess)
        return result;
      for (int q = 0; q < size_ && result == ncclSuccess; ++q) {
        result = ncclSend(in + q * bytes, bytes, ncclUint8, q, comm_, stream());
        if (result == ncclSuccess)
          result =
              ncclRecv(out + q * bytes, bytes, ncclUint8, q, comm_, stream());
      }
      ncclResult_t ended = ncclGroupEnd();
      return result != ncclSuccess ? result : ended;
    });
  }

  Status broadcast(void *data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return Status::error("broadcast: root rank " + std::to_string(root) +
                           " is outside [0, " + std::to_string(size_) + ")");
    return run("broadcast", bytes, [&] {
      return ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream());
    });
  }

  // NCCL has no tags: transfers between two ranks pair in issue order. A
  // send returns once the peer has received (a rendezvous, like MPI_Ssend).
  Status send(const void *data, std::size_t bytes, int peer, int tag) override {
    if (Status s = checkPointToPoint("send", peer, tag); !s)
      return s;
    return run("send", bytes, [&] {
      return ncclSend(data, bytes, ncclUint8, peer, comm_, stream());
    });
  }

  Status recv(void *data, std::size_t bytes, int peer, int tag) override {
    if (Status s = checkPointToPoint("recv", peer, tag); !s)
      return s;
    return run("recv", bytes, [&] {
      return ncclRecv(data, bytes, ncclUint8, peer, comm_, stream());
    });
  }

  Status barrier() override {
    return run("barrier", 1, [&] {
      return ncclAllReduce(resources_->scratch, resources_->scratch, 1,
                           ncclFloat32, ncclSum, comm_, stream());
    });
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    if (comm_) {
      DeviceScope scope(resources_->device);
      ncclCommAbort(comm_);
      comm_ = nullptr;
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
    if (Status s = checkAlive("split"); !s)
      return s;
    DeviceScope scope(resources_->device);
    if (Status s = scope.status("split"); !s)
      return s;
    ncclComm_t sub = nullptr;
    // A null config: the group inherits this communicator's.
    if (Status s = ncclStatus("split",
                              ncclCommSplit(comm_, color, key, &sub, nullptr));
        !s)
      return s;
    result = std::make_unique<NcclCommunicator>(bootstrap_, sub, resources_);
    return Status::ok();
  }

private:
  cudaStream_t stream() const { return resources_->stream; }

  Status checkAlive(const char *what) const {
    if (!comm_)
      return Status::error(std::string(what) +
                           ": the NCCL communicator was aborted after an "
                           "earlier error");
    return Status::ok();
  }

  Status checkPointToPoint(const char *what, int peer, int tag) const {
    if (Status s = checkPeer(what, peer); !s)
      return s;
    return checkTag(what, tag);
  }

  Status allReduce(const char *what, void *data, std::size_t count,
                   ncclDataType_t type, ncclRedOp_t op) {
    return run(what, count, [&] {
      return ncclAllReduce(data, data, count, type, op, comm_, stream());
    });
  }

  /// Enqueues one operation (nothing for an empty one: every rank of a valid
  /// call passes the same count) and waits until it is done.
  template <typename Enqueue>
  Status run(const char *what, std::size_t count, Enqueue enqueue) {
    if (Status s = checkAlive(what); !s)
      return s;
    if (count == 0)
      return Status::ok();
    DeviceScope scope(resources_->device);
    if (Status s = scope.status(what); !s)
      return s;
    if (Status s = ncclStatus(what, enqueue()); !s)
      return s;
    return wait(what);
  }

  Status wait(const char *what) {
    for (;;) {
      cudaError_t err = cudaStreamQuery(stream());
      if (err == cudaSuccess)
        return Status::ok();
      if (err != cudaErrorNotReady)
        return cudaStatus(what, err);
      ncclResult_t async = ncclSuccess;
      if (Status s = ncclStatus(what, ncclCommGetAsyncError(comm_, &async)); !s)
        return s;
      if (async != ncclSuccess && async != ncclInProgress) {
        Status s = ncclStatus(what, async);
        // The operation can no longer complete: aborting the communicator
        // ends its kernels, so the stream drains; later calls are refused.
        ncclCommAbort(comm_);
        comm_ = nullptr;
        return s;
      }
      std::this_thread::yield();
    }
  }

  Communicator &bootstrap_;
  ncclComm_t comm_;
  std::shared_ptr<DeviceResources> resources_;
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
  int64_t failed = local ? 0 : 1;
  if (Status s = bootstrap.allReduceSum(&failed, 1); !s)
    return s.withContext(what);
  if (!local)
    return Status::error(what + ": rank " + std::to_string(bootstrap.rank()) +
                         ": " + local.message());
  if (failed)
    return Status::error(what + ": " + std::to_string(failed) + " of " +
                         std::to_string(bootstrap.size()) +
                         " ranks cannot use their CUDA device");

  // Rank 0's result travels with the id, so that its failure ends every
  // rank's call alike.
  struct {
    int32_t result;
    ncclUniqueId id;
  } root = {};
  if (bootstrap.rank() == 0)
    root.result = ncclGetUniqueId(&root.id);
  if (Status s = bootstrap.broadcast(&root, sizeof(root), 0); !s)
    return s.withContext(what);
  if (root.result != ncclSuccess)
    return Status::error(
        what + ": ncclGetUniqueId failed on rank 0: NCCL: " +
        ncclGetErrorString(static_cast<ncclResult_t>(root.result)));

  DeviceScope scope(device);
  if (Status s = scope.status(what); !s)
    return s;
  ncclComm_t comm = nullptr;
  if (Status s = ncclStatus(what, ncclCommInitRank(&comm, bootstrap.size(),
                                                   root.id, bootstrap.rank()));
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
