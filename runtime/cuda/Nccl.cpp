//===- Nccl.cpp - NCCL, opened at run time, for the CUDA device -----------===//
//
// The communicators are non-blocking (config.blocking = 0): no NCCL call
// blocks the thread, so every wait for a peer is a poll that the watchdog
// sees (hostBeginWait) and that an error or an abort ends. A call that
// returns ncclInProgress (an init, a first transfer that connects to a peer)
// is polled with ncclCommGetAsyncError until its work is enqueued, as NCCL
// requires before the next call; inside groupStart/groupEnd that happens at
// the outermost groupEnd, for every communicator the group used. Any error
// aborts the communicator (ncclCommAbort): NCCL's state is unknown after one,
// and a later destroy (which flushes) could wait forever for a peer.
//
//===----------------------------------------------------------------------===//

#include "Nccl.h"

#include "HostServices.h"
#include "NcclLibrary.h"

#include "tpcrt/Comm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

/// Paces a poll: a few yields (the work is about to finish), then short
/// sleeps (a long wait burns no core).
class Backoff {
public:
  void pause() {
    if (spins_ < 64) {
      ++spins_;
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

private:
  int spins_ = 0;
};

/// "all_reduce over [tp]", for messages.
std::string where(const char *operation, const std::string &label) {
  std::string text = operation;
  if (!label.empty())
    text += " over " + label;
  return text;
}

bool ncclTypeOf(Storage type, ncclDataType_t &out) {
  switch (type) {
  case Storage::F32:
    out = ncclFloat32;
    return true;
  case Storage::BF16:
    out = ncclBfloat16;
    return true;
  case Storage::F16:
    out = ncclFloat16;
    return true;
  case Storage::I64:
    out = ncclInt64;
    return true;
  default:
    return false;
  }
}

} // namespace

struct NcclGroup::Impl {
  const NcclLibrary *nccl = nullptr;
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  std::string label;
  bool aborted = false;

  /// This thread's open groupStart nesting, the communicators that
  /// operations used inside it (polled at the outermost groupEnd), and
  /// whether one of those operations failed (the groupEnd aborts them: not
  /// inside the group, whose queued work NCCL still holds).
  static thread_local int groupDepth;
  static thread_local std::vector<Impl *> groupMembers;
  static thread_local bool groupFailed;

  /// NCCL's word on `result`, with its last error (e.g. the failed peer).
  std::string describe(ncclResult_t result) const {
    std::string text = nccl->getErrorString(result);
    if (const char *detail = nccl->getLastError(comm); detail && *detail)
      text += std::string(" (") + detail + ")";
    return text;
  }
  Status failure(const char *operation, ncclResult_t result) const {
    return Status::error(where(operation, label) +
                         ": NCCL: " + describe(result));
  }
  std::string name() const {
    return label.empty() ? "the NCCL communicator"
                         : "the NCCL communicator of " + label;
  }
  Status abortedError(const char *operation) const {
    return Status::error(where(operation, label) + ": " + name() +
                         " was aborted after an earlier error");
  }

  /// ncclCommGetAsyncError: ok, ok and `busy` (in progress), or the error.
  Status state(const char *operation, bool &busy) const {
    busy = false;
    if (aborted)
      return abortedError(operation);
    ncclResult_t async = ncclSuccess;
    if (ncclResult_t r = nccl->commGetAsyncError(comm, &async);
        r != ncclSuccess)
      return failure(operation, r);
    if (async == ncclInProgress)
      busy = true;
    else if (async != ncclSuccess)
      return failure(operation, async);
    return Status::ok();
  }

  /// Polls until the work the last call started is done (enqueued, for an
  /// operation), as a wait for the watchdog; an error aborts.
  Status settle(const char *operation) {
    HostWait wait(operation, &label);
    Backoff backoff;
    for (;;) {
      bool busy = false;
      Status s = state(operation, busy);
      if (!s) {
        abort();
        return s;
      }
      if (!busy)
        return s;
      backoff.pause();
    }
  }

  /// What an operation's call returned: inside a group the groupEnd polls;
  /// alone, ncclInProgress is polled here.
  Status finish(const char *operation, ncclResult_t result) {
    if (groupDepth > 0 && std::find(groupMembers.begin(), groupMembers.end(),
                                    this) == groupMembers.end())
      groupMembers.push_back(this);
    if (result == ncclInProgress)
      return groupDepth > 0 ? Status::ok() : settle(operation);
    if (result != ncclSuccess) {
      Status s = failure(operation, result);
      if (groupDepth > 0)
        groupFailed = true;
      else
        abort();
      return s;
    }
    return Status::ok();
  }

  Status check(const char *operation) const {
    return aborted ? abortedError(operation) : Status::ok();
  }
  Status checkPeer(const char *operation, int peer) const {
    if (peer < 0 || peer >= size)
      return Status::error(where(operation, label) + ": peer " +
                           std::to_string(peer) + " is outside [0, " +
                           std::to_string(size) + ")");
    return check(operation);
  }

  void abort() {
    if (aborted)
      return;
    aborted = true;
    if (comm)
      nccl->commAbort(comm);
    comm = nullptr;
  }
};

thread_local int NcclGroup::Impl::groupDepth = 0;
thread_local std::vector<NcclGroup::Impl *> NcclGroup::Impl::groupMembers;
thread_local bool NcclGroup::Impl::groupFailed = false;

Status cuda::loadNccl(std::string *path) {
  const NcclLibrary *library = nullptr;
  return loadNcclLibrary(library, path);
}

NcclGroup::NcclGroup() : impl_(std::make_unique<Impl>()) {}

NcclGroup::~NcclGroup() {
  Impl &g = *impl_;
  auto &members = Impl::groupMembers;
  members.erase(std::remove(members.begin(), members.end(), &g), members.end());
  if (g.aborted || !g.comm)
    return;
  // Finalize flushes what is still queued (polled: non-blocking), then
  // destroy frees; a failure on the way aborts instead.
  ncclResult_t r = g.nccl->commFinalize(g.comm);
  if (r != ncclSuccess && r != ncclInProgress) {
    g.abort();
    return;
  }
  if (!g.settle("nccl_finalize"))
    return; // aborted
  g.nccl->commDestroy(g.comm);
  g.comm = nullptr;
}

Status NcclGroup::create(Communicator &bootstrap, int device,
                         const std::string &label,
                         std::unique_ptr<NcclGroup> &group) {
  const std::string what = "creating the NCCL communicator" +
                           (label.empty() ? std::string() : " of " + label);
  const NcclLibrary *nccl = nullptr;
  Status local = loadNcclLibrary(nccl, nullptr);
  if (local)
    if (cudaError_t err = cudaSetDevice(device); err != cudaSuccess)
      local = Status::error("CUDA device " + std::to_string(device) +
                            ": CUDA: " + cudaGetErrorString(err));
  // Every rank learns whether all can take part before any waits in the
  // NCCL init for one that cannot.
  if (Status s = agreeAllReady(bootstrap, local, what); !s)
    return s;

  ncclUniqueId id;
  if (Status s = shareUniqueId(bootstrap, *nccl, what, id); !s)
    return s;

  std::unique_ptr<NcclGroup> created(new NcclGroup());
  Impl &g = *created->impl_;
  g.nccl = nccl;
  g.label = label;
  g.size = bootstrap.size();
  g.rank = bootstrap.rank();
  // Non-blocking: the init returns at once and is polled below, so a rank
  // that never joins is the watchdog's, and an error ends it.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r =
      nccl->commInitRankConfig(&g.comm, g.size, id, g.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    Status s = g.failure("nccl_init", r);
    g.abort();
    return s.withContext(what);
  }
  if (Status s = g.settle("nccl_init"); !s)
    return s.withContext(what);
  int rank = -1, size = -1;
  if (Status s = g.finish("nccl_init", nccl->commUserRank(g.comm, &rank)); !s)
    return s.withContext(what);
  if (Status s = g.finish("nccl_init", nccl->commCount(g.comm, &size)); !s)
    return s.withContext(what);
  if (rank != g.rank || size != g.size) {
    g.abort();
    return Status::error(what + ": NCCL made rank " + std::to_string(rank) +
                         " of " + std::to_string(size) + ", expected " +
                         std::to_string(g.rank) + " of " +
                         std::to_string(g.size));
  }
  // A group lists each communicator once: room for one more now (this
  // thread makes the communicators and runs the steps), not in a step.
  Impl::groupMembers.reserve(Impl::groupMembers.capacity() + 1);
  group = std::move(created);
  return Status::ok();
}

int NcclGroup::rank() const { return impl_->rank; }
int NcclGroup::size() const { return impl_->size; }
const std::string &NcclGroup::label() const { return impl_->label; }

Status NcclGroup::allReduce(const void *send, void *recv, size_t count,
                            Storage type, bool max, cudaStream_t stream) {
  Impl &g = *impl_;
  const char *operation = max ? "all_reduce_max" : "all_reduce";
  if (Status s = g.check(operation); !s)
    return s;
  ncclDataType_t dataType;
  if (!ncclTypeOf(type, dataType))
    return Status::error(where(operation, g.label) +
                         ": elements of this type are not reduced (f32, "
                         "bf16, f16 or i64 only)");
  if (count == 0) // every rank passes the same count
    return Status::ok();
  return g.finish(operation,
                  g.nccl->allReduce(send, recv, count, dataType,
                                    max ? ncclMax : ncclSum, g.comm, stream));
}

Status NcclGroup::allGather(const void *send, void *recv, size_t sendBytes,
                            cudaStream_t stream) {
  Impl &g = *impl_;
  if (Status s = g.check("all_gather"); !s)
    return s;
  if (sendBytes == 0)
    return Status::ok();
  return g.finish("all_gather", g.nccl->allGather(send, recv, sendBytes,
                                                  ncclChar, g.comm, stream));
}

Status NcclGroup::reduceScatter(const void *send, void *recv, size_t recvCount,
                                Storage type, cudaStream_t stream) {
  Impl &g = *impl_;
  if (Status s = g.check("reduce_scatter"); !s)
    return s;
  ncclDataType_t dataType;
  if (!ncclTypeOf(type, dataType))
    return Status::error(where("reduce_scatter", g.label) +
                         ": elements of this type are not reduced (f32, "
                         "bf16, f16 or i64 only)");
  if (recvCount == 0)
    return Status::ok();
  return g.finish("reduce_scatter",
                  g.nccl->reduceScatter(send, recv, recvCount, dataType,
                                        ncclSum, g.comm, stream));
}

Status NcclGroup::allToAll(const void *send, void *recv, size_t bytesPerPeer,
                           cudaStream_t stream) {
  Impl &g = *impl_;
  if (Status s = g.check("all_to_all"); !s)
    return s;
  if (bytesPerPeer == 0)
    return Status::ok();
  // One group, so that every pair's transfers progress together; the chunk
  // a rank keeps goes through NCCL too (a send to self is allowed).
  const auto *in = static_cast<const char *>(send);
  auto *out = static_cast<char *>(recv);
  return grouped([&] {
    Status result = Status::ok();
    for (int q = 0; q < g.size && result; ++q) {
      const size_t offset = size_t(q) * bytesPerPeer;
      result =
          g.finish("all_to_all", g.nccl->send(in + offset, bytesPerPeer,
                                              ncclChar, q, g.comm, stream));
      if (result)
        result =
            g.finish("all_to_all", g.nccl->recv(out + offset, bytesPerPeer,
                                                ncclChar, q, g.comm, stream));
    }
    return result;
  });
}

Status NcclGroup::send(const void *data, size_t bytes, int peer,
                       cudaStream_t stream) {
  Impl &g = *impl_;
  if (Status s = g.checkPeer("send", peer); !s)
    return s;
  if (bytes == 0) // the peer's recv is empty too
    return Status::ok();
  return g.finish("send",
                  g.nccl->send(data, bytes, ncclChar, peer, g.comm, stream));
}

Status NcclGroup::recv(void *data, size_t bytes, int peer,
                       cudaStream_t stream) {
  Impl &g = *impl_;
  if (Status s = g.checkPeer("recv", peer); !s)
    return s;
  if (bytes == 0)
    return Status::ok();
  return g.finish("recv",
                  g.nccl->recv(data, bytes, ncclChar, peer, g.comm, stream));
}

Status NcclGroup::groupStart() {
  const NcclLibrary *nccl = nullptr;
  if (Status s = loadNcclLibrary(nccl, nullptr); !s)
    return s.withContext("group_start");
  if (ncclResult_t r = nccl->groupStart(); r != ncclSuccess)
    return Status::error(std::string("group_start: NCCL: ") +
                         nccl->getErrorString(r));
  ++Impl::groupDepth;
  return Status::ok();
}

Status NcclGroup::groupEnd() {
  const NcclLibrary *nccl = nullptr;
  if (Status s = loadNcclLibrary(nccl, nullptr); !s)
    return s.withContext("group_end");
  if (Impl::groupDepth == 0)
    return Status::error("group_end: no group was started");
  ncclResult_t r = nccl->groupEnd();
  auto &members = Impl::groupMembers;
  if (--Impl::groupDepth > 0) {
    // NCCL launches at the outermost groupEnd; nothing to poll yet.
    if (r == ncclSuccess || r == ncclInProgress)
      return Status::ok();
    return Status::error(std::string("group_end: NCCL: ") +
                         nccl->getErrorString(r));
  }
  Status result = Status::ok();
  if (Impl::groupFailed) {
    Impl::groupFailed = false;
    result = Status::error("group_end: an operation of the group failed "
                           "(its error was returned), so its communicators "
                           "are aborted");
  } else if (r != ncclSuccess && r != ncclInProgress) {
    result = members.empty() ? Status::error(std::string("group_end: NCCL: ") +
                                             nccl->getErrorString(r))
                             : members.front()->failure("group_end", r);
  } else {
    // Each communicator the group used is polled until its part is
    // enqueued (connections to new peers are made here).
    for (Impl *member : members)
      if (Status s = member->settle("group_end"); !s) {
        result = s;
        break;
      }
  }
  if (!result)
    // The group's transfers pair across its communicators: none of them
    // can complete now.
    for (Impl *member : members)
      member->abort();
  members.clear();
  return result;
}

Status NcclGroup::asyncError() {
  Impl &g = *impl_;
  if (g.aborted)
    return Status::error(g.name() + " was aborted after an earlier error");
  ncclResult_t async = ncclSuccess;
  if (ncclResult_t r = g.nccl->commGetAsyncError(g.comm, &async);
      r != ncclSuccess)
    async = r;
  if (async == ncclSuccess || async == ncclInProgress)
    return Status::ok();
  return Status::error(g.name() + " failed: NCCL: " + g.describe(async));
}

void NcclGroup::abort() { impl_->abort(); }

Status cuda::waitEvent(cudaEvent_t event, NcclGroup *const *groups,
                       size_t count, const char *operation,
                       const std::string *label) {
  // A query that finds the event not yet reached may leave
  // cudaErrorNotReady as the thread's last error, which a later
  // cudaGetLastError (synchronize's, a launch's check) would report as a
  // failure; it is cleared. Nothing else is lost: every launch is checked
  // when it is made, and a kernel's fault is sticky (the query returns it).
  auto query = [&] {
    cudaError_t result = cudaEventQuery(event);
    if (result == cudaErrorNotReady)
      (void)cudaGetLastError();
    return result;
  };
  cudaError_t err = query();
  if (err == cudaSuccess)
    return Status::ok();
  const std::string none;
  const std::string &group = label ? *label : none;
  auto abortAll = [&] {
    for (size_t i = 0; i < count; ++i)
      if (groups[i])
        groups[i]->abort();
  };
  HostWait wait(operation, label);
  Backoff backoff;
  for (;;) {
    if (err == cudaSuccess)
      return Status::ok();
    if (err != cudaErrorNotReady) {
      // A failed kernel leaves the context unusable: the peers' transfers
      // with this rank cannot complete either.
      abortAll();
      return Status::error(where(operation, group) +
                           ": CUDA: " + cudaGetErrorString(err));
    }
    for (size_t i = 0; i < count; ++i)
      if (groups[i])
        if (Status s = groups[i]->asyncError(); !s) {
          abortAll();
          return s.withContext(where(operation, group));
        }
    backoff.pause();
    err = query();
  }
}
