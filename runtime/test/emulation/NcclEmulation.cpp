//===- NcclEmulation.cpp - NCCL between emulated devices, on the host -----===//
//
// NCCL's C API for the emulated CUDA backend (README.md here): compiled into
// libtpcrt-cuda-emulated.so with default visibility, so that the backend's
// NCCL loader (cuda/NcclLibrary.cpp) finds these functions when
// TPCRT_NCCL_LIBRARY names that very library. Ranks are processes (MPI
// ranks of one machine); a communicator is a folder under
// $TPCRT_NCCL_EMULATION_DIR (default /dev/shm, else /tmp) named by the
// unique id, and every message a file in it, written whole and renamed
// into place:
//
//   p2p-<from>-<to>-<n>    the n-th send from one rank to another
//                          (NCCL pairs a peer's sends and receives in order)
//   coll-<n>-<rank>        a rank's part of the communicator's n-th
//                          collective
//   fin-<rank>             ncclCommFinalize: the rank's operations are done
//                          (its messages are removed when every rank's are)
//   gone-<rank>            the rank saw every fin (the last to leave one
//                          removes the markers and the folder)
//
// An operation is an operation of its CUDA stream (cuda_runtime_api.h's
// queues): it posts its data when it reaches the front of the stream (a
// send, a rank's part of a collective), then is done when what it waits for
// is there (a receive: its peer's message; a collective: every rank's part,
// which it then reduces or gathers in rank order, rounding to the element
// type after each addition as NCCL does). The operations between
// ncclGroupStart and ncclGroupEnd are one, as NCCL's guide describes a
// group over several streams: it starts when it reaches the front of every
// stream they use, posts all its sends, and is done (every stream goes on)
// when all its receives are. A peer that never sends leaves the stream waiting,
// as on a GPU: the device's polled waits and tpc-run's --timeout end it.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#define TPCRT_NCCL_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm {
  std::string dir;
  int rank = 0, size = 1;
  std::vector<uint64_t> sent, received; // per peer
  uint64_t collectives = 0;
  bool aborted = false, finalizing = false, finished = false;
  int64_t outstanding = 0;          // operations issued, not done
  std::vector<std::string> written; // this rank's files
  std::string lastError;
};

namespace {

using tpcrt::emu::fromBf16;
using tpcrt::emu::fromHalf;
using tpcrt::emu::toBf16;
using tpcrt::emu::toHalf;

std::string baseDir() {
  if (const char *dir = std::getenv("TPCRT_NCCL_EMULATION_DIR"); dir && *dir)
    return dir;
  struct stat st;
  if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
      access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return "/tmp";
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// Writes `bytes` to `path` whole: a reader never sees a part.
bool writeFile(const std::string &path, const void *data, size_t bytes) {
  std::string temporary = path + ".part";
  FILE *f = std::fopen(temporary.c_str(), "wb");
  if (!f)
    return false;
  bool ok = bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes;
  ok = std::fclose(f) == 0 && ok;
  return ok && std::rename(temporary.c_str(), path.c_str()) == 0;
}

/// Reads exactly `bytes` of `path`; false when it is another size.
bool readFile(const std::string &path, void *data, size_t bytes,
              std::string &error) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot open " + path;
    return false;
  }
  bool ok = bytes == 0 || std::fread(data, 1, bytes, f) == bytes;
  char extra;
  if (ok && std::fread(&extra, 1, 1, f) == 1)
    ok = false;
  std::fclose(f);
  if (!ok)
    error = path + " does not hold " + std::to_string(bytes) +
            " bytes (the peers disagree on a size)";
  return ok;
}

size_t typeBytes(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  default:
    return 8;
  }
}

/// acc = acc (op) value, in the element type (rounded to it, as NCCL's
/// reductions in bf16 and f16 are).
void combine(void *acc, const void *value, size_t i, ncclDataType_t type,
             ncclRedOp_t op) {
  auto pick = [&](auto a, auto b) {
    return op == ncclMax ? (a > b ? a : b) : a + b;
  };
  switch (type) {
  case ncclFloat32: {
    auto *a = static_cast<float *>(acc);
    a[i] = pick(a[i], static_cast<const float *>(value)[i]);
    break;
  }
  case ncclFloat64: {
    auto *a = static_cast<double *>(acc);
    a[i] = pick(a[i], static_cast<const double *>(value)[i]);
    break;
  }
  case ncclBfloat16: {
    auto *a = static_cast<uint16_t *>(acc);
    a[i] = toBf16(pick(fromBf16(a[i]),
                       fromBf16(static_cast<const uint16_t *>(value)[i])));
    break;
  }
  case ncclFloat16: {
    auto *a = static_cast<uint16_t *>(acc);
    a[i] = toHalf(pick(fromHalf(a[i]),
                       fromHalf(static_cast<const uint16_t *>(value)[i])));
    break;
  }
  case ncclInt64: {
    auto *a = static_cast<int64_t *>(acc);
    int64_t b = static_cast<const int64_t *>(value)[i];
    a[i] = op == ncclMax ? std::max(a[i], b)
                         : static_cast<int64_t>(static_cast<uint64_t>(a[i]) +
                                                static_cast<uint64_t>(b));
    break;
  }
  case ncclInt32: {
    auto *a = static_cast<int32_t *>(acc);
    a[i] = pick(a[i], static_cast<const int32_t *>(value)[i]);
    break;
  }
  default:
    break;
  }
}

/// One part of an operation: post() once, when the operation starts; then
/// done() until it says so.
struct Item {
  virtual ~Item() = default;
  /// "send 1024 bytes to 1 (#3)", for TPCRT_NCCL_EMULATION_TRACE.
  virtual std::string describe() const = 0;
  virtual void post(ncclComm &comm) = 0;
  virtual bool done(ncclComm &comm) = 0;
  ncclComm *comm = nullptr;
  cudaStream_t stream = nullptr;
  bool failed = false;
  /// done() said so: not asked again (a receive consumes its message).
  bool complete = false;
  void fail(const std::string &what) {
    failed = true;
    if (comm && comm->lastError.empty())
      comm->lastError = what;
    std::fprintf(stderr, "emulated NCCL: %s\n", what.c_str());
  }
  /// Writes this rank's message (removed at the communicator's end).
  void publish(ncclComm &c, const std::string &path, const void *data,
               size_t bytes) {
    if (!writeFile(path, data, bytes)) {
      fail("cannot write " + path);
      return;
    }
    c.written.push_back(path);
  }
};

struct Send : Item {
  const void *data;
  size_t bytes;
  int peer;
  uint64_t n;
  Send(const void *data, size_t bytes, int peer, uint64_t n)
      : data(data), bytes(bytes), peer(peer), n(n) {}
  std::string describe() const override {
    return "send " + std::to_string(bytes) + " bytes to " +
           std::to_string(peer) + " (#" + std::to_string(n) + ")";
  }
  void post(ncclComm &c) override {
    publish(c,
            c.dir + "/p2p-" + std::to_string(c.rank) + "-" +
                std::to_string(peer) + "-" + std::to_string(n),
            data, bytes);
  }
  bool done(ncclComm &) override { return true; }
};

struct Recv : Item {
  void *data;
  size_t bytes;
  int peer;
  uint64_t n;
  Recv(void *data, size_t bytes, int peer, uint64_t n)
      : data(data), bytes(bytes), peer(peer), n(n) {}
  std::string describe() const override {
    return "recv " + std::to_string(bytes) + " bytes from " +
           std::to_string(peer) + " (#" + std::to_string(n) + ")";
  }
  void post(ncclComm &) override {}
  bool done(ncclComm &c) override {
    std::string path = c.dir + "/p2p-" + std::to_string(peer) + "-" +
                       std::to_string(c.rank) + "-" + std::to_string(n);
    if (!exists(path))
      return false;
    std::string error;
    if (!readFile(path, data, bytes, error)) {
      fail(error);
      return true;
    }
    std::remove(path.c_str());
    return true;
  }
};

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast };

struct Collective : Item {
  Kind kind;
  const void *send;
  void *recv;
  size_t count; // elements: of send (all_reduce, broadcast), of recv
                // (reduce_scatter), of each rank's part (all_gather)
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  uint64_t n;
  Collective(Kind kind, const void *send, void *recv, size_t count,
             ncclDataType_t type, ncclRedOp_t op, int root, uint64_t n)
      : kind(kind), send(send), recv(recv), count(count), type(type), op(op),
        root(root), n(n) {}
  std::string describe() const override {
    static const char *names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                  "broadcast"};
    return std::string(names[int(kind)]) + " of " + std::to_string(count) +
           " (#" + std::to_string(n) + ")";
  }

  std::string part(const ncclComm &c, int rank) const {
    return c.dir + "/coll-" + std::to_string(n) + "-" + std::to_string(rank);
  }
  size_t partBytes(const ncclComm &c) const {
    size_t elements = kind == Kind::ReduceScatter ? count * c.size : count;
    return elements * typeBytes(type);
  }
  void post(ncclComm &c) override {
    if (kind != Kind::Broadcast || c.rank == root)
      publish(c, part(c, c.rank), send, partBytes(c));
  }
  bool done(ncclComm &c) override {
    if (kind == Kind::Broadcast)
      return exists(part(c, root)) ? read(c, root, recv) : false;
    for (int r = 0; r < c.size; ++r)
      if (!exists(part(c, r)))
        return false;
    const size_t element = typeBytes(type), bytes = partBytes(c);
    if (kind == Kind::AllGather) {
      for (int r = 0; r < c.size; ++r)
        if (!read(c, r, static_cast<char *>(recv) + r * bytes))
          return true;
      return true;
    }
    // Reductions in rank order, into the first part.
    std::vector<char> acc(bytes), other(bytes);
    if (!read(c, 0, acc.data()))
      return true;
    for (int r = 1; r < c.size; ++r) {
      if (!read(c, r, other.data()))
        return true;
      for (size_t i = 0; i < bytes / element; ++i)
        combine(acc.data(), other.data(), i, type, op);
    }
    if (kind == Kind::AllReduce)
      std::memcpy(recv, acc.data(), bytes);
    else
      std::memcpy(recv, acc.data() + c.rank * count * element, count * element);
    return true;
  }
  bool read(ncclComm &c, int rank, void *into) {
    std::string error;
    if (!readFile(part(c, rank), into, partBytes(c), error))
      fail(error);
    return !failed;
  }
};

/// Where TPCRT_NCCL_EMULATION_TRACE's lines go: stderr, or where it names a
/// folder, DIR/nccl-trace-<pid>.txt (a file per rank: ranks' lines through
/// one launcher's stderr arrive cut and interleaved), null when unset.
FILE *traceFile() {
  static FILE *file = [] {
    const char *v = std::getenv("TPCRT_NCCL_EMULATION_TRACE");
    if (!v)
      return static_cast<FILE *>(nullptr);
    struct stat info;
    if (*v && stat(v, &info) == 0 && S_ISDIR(info.st_mode)) {
      std::string path =
          std::string(v) + "/nccl-trace-" + std::to_string(getpid()) + ".txt";
      if (FILE *f = std::fopen(path.c_str(), "w")) {
        setvbuf(f, nullptr, _IOLBF, 0);
        return f;
      }
    }
    return stderr;
  }();
  return file;
}
bool tracing() { return traceFile() != nullptr; }

/// What ncclGroupStart..End gathered, or one operation alone: it starts
/// when every stream it uses has reached it.
struct Operation {
  std::vector<std::unique_ptr<Item>> items;
  std::vector<cudaStream_t> streams;
  int arrived = 0;
  bool posted = false, finished = false;

  void addStream(cudaStream_t stream) {
    if (std::find(streams.begin(), streams.end(), stream) == streams.end())
      streams.push_back(stream);
  }

  bool run() {
    if (finished)
      return true;
    if (arrived < static_cast<int>(streams.size()))
      return false;
    if (!posted) {
      posted = true;
      for (auto &item : items)
        if (!item->comm->aborted)
          item->post(*item->comm);
    }
    // Each item until it is done, once: a group's receives need not all
    // arrive at once, and one that is done has taken its message.
    bool all = true;
    for (auto &item : items) {
      if (!item->complete)
        item->complete =
            item->failed || item->comm->aborted || item->done(*item->comm);
      all &= item->complete;
    }
    if (!all)
      return false;
    finished = true;
    for (auto &item : items) {
      --item->comm->outstanding;
      if (tracing())
        std::fprintf(traceFile(), "emulated NCCL: rank %d of %s: done %s\n",
                     item->comm->rank, item->comm->dir.c_str(),
                     item->describe().c_str());
    }
    if (tracing() && items.size() > 1) {
      // What went out as one group (the device's runs of all_reduces).
      std::string what;
      for (auto &item : items)
        what += (what.empty() ? "" : "; ") + item->describe();
      std::fprintf(traceFile(), "emulated NCCL: rank %d: a group of %zu: %s\n",
                   items.front()->comm->rank, items.size(), what.c_str());
    }
    return true;
  }
};

/// The operation's place on one of its streams.
struct StreamPart : CUstreamOp {
  std::shared_ptr<Operation> operation;
  bool arrived = false;
  explicit StreamPart(std::shared_ptr<Operation> operation)
      : operation(std::move(operation)) {}
  bool run() override {
    if (!arrived) {
      arrived = true;
      ++operation->arrived;
    }
    return operation->run();
  }
  std::string describe() const override {
    std::string what;
    for (const auto &item : operation->items)
      what += (what.empty() ? "NCCL " : ", ") + item->describe() + " of " +
              item->comm->dir;
    return what;
  }
};

thread_local int groupDepth = 0;
thread_local std::shared_ptr<Operation> group;

/// Adds `item` to the open group, or enqueues it alone.
ncclResult_t issue(ncclComm_t comm, std::unique_ptr<Item> item,
                   cudaStream_t stream) {
  if (!comm)
    return ncclInvalidArgument;
  if (comm->aborted || comm->finalizing) {
    comm->lastError = "the communicator was aborted or finalized";
    return ncclInvalidUsage;
  }
  item->comm = comm;
  item->stream = stream;
  ++comm->outstanding;
  if (tracing())
    std::fprintf(traceFile(),
                 "emulated NCCL: rank %d of %s: issue %s on %p%s\n", comm->rank,
                 comm->dir.c_str(), item->describe().c_str(),
                 static_cast<void *>(stream), groupDepth > 0 ? " (group)" : "");
  if (groupDepth > 0) {
    group->items.push_back(std::move(item));
    return ncclSuccess;
  }
  auto operation = std::make_shared<Operation>();
  operation->items.push_back(std::move(item));
  operation->addStream(stream);
  tpcrt::emu::enqueue(stream, std::make_unique<StreamPart>(operation));
  return ncclSuccess;
}

bool checkPeer(ncclComm_t comm, int peer) {
  return comm && peer >= 0 && peer < comm->size;
}

std::string marker(const ncclComm &c, const char *what, int rank) {
  return c.dir + "/" + what + "-" + std::to_string(rank);
}

bool allMarked(const ncclComm &c, const char *what) {
  for (int r = 0; r < c.size; ++r)
    if (!exists(marker(c, what, r)))
      return false;
  return true;
}

/// Removes this rank's messages. The fin-<rank> markers stay until every
/// rank has seen them all (each then leaves gone-<rank>); the rank that
/// finds every gone-<rank> removes the markers and the folder.
void cleanUp(ncclComm &c) {
  for (const std::string &path : c.written)
    std::remove(path.c_str());
  c.written.clear();
  if (!c.finished)
    return; // aborted: the folder stays (the peers may still look)
  writeFile(marker(c, "gone", c.rank), "", 0);
  if (!allMarked(c, "gone"))
    return;
  for (int r = 0; r < c.size; ++r)
    std::remove(marker(c, "fin", r).c_str());
  for (int r = 0; r < c.size; ++r)
    std::remove(marker(c, "gone", r).c_str());
  rmdir(c.dir.c_str());
}

} // namespace

TPCRT_NCCL_EXPORT ncclResult_t ncclGetVersion(int *version) {
  tpcrt::emu::Internal internal;
  *version = 22800;
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  tpcrt::emu::Internal internal;
  tpcrt::emu::noteResourceCall("ncclGetUniqueId");
  static std::atomic<uint64_t> counter{0};
  std::random_device device;
  std::string token = "tpcrt-nccl-emulation-" + std::to_string(getpid()) + "-" +
                      std::to_string(counter++) + "-" +
                      std::to_string(device());
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, token.data(),
              std::min(token.size(), sizeof id->internal - 1));
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm,
                                                      int nranks,
                                                      ncclUniqueId id, int rank,
                                                      ncclConfig_t *) {
  tpcrt::emu::Internal internal;
  tpcrt::emu::noteResourceCall("ncclCommInitRankConfig");
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks || id.internal[0] == 0)
    return ncclInvalidArgument;
  auto c = std::make_unique<ncclComm>();
  id.internal[sizeof id.internal - 1] = 0;
  c->dir = baseDir() + "/" + id.internal;
  c->rank = rank;
  c->size = nranks;
  c->sent.assign(nranks, 0);
  c->received.assign(nranks, 0);
  if (mkdir(c->dir.c_str(), 0700) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "emulated NCCL: cannot make %s\n", c->dir.c_str());
    return ncclSystemError;
  }
  *comm = c.release();
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
                                                ncclUniqueId id, int rank) {
  tpcrt::emu::Internal internal;
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int, int,
                                             ncclComm_t *newcomm,
                                             ncclConfig_t *) {
  tpcrt::emu::Internal internal;
  tpcrt::emu::noteResourceCall("ncclCommSplit");
  *newcomm = nullptr;
  if (comm)
    comm->lastError = "ncclCommSplit is not emulated";
  return ncclInvalidUsage;
}

/// Polled (ncclCommGetAsyncError) until its operations are done and every
/// rank's are: then this rank's files may go (their readers read them).
TPCRT_NCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  tpcrt::emu::Internal internal;
  tpcrt::emu::noteResourceCall("ncclCommFinalize");
  if (!comm)
    return ncclInvalidArgument;
  comm->finalizing = true;
  return ncclInProgress;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  tpcrt::emu::Internal internal;
  tpcrt::emu::noteResourceCall("ncclCommDestroy");
  if (!comm)
    return ncclInvalidArgument;
  cleanUp(*comm);
  delete comm;
  return ncclSuccess;
}

/// Its operations still queued end at once; the communicator itself is
/// kept (they point at it).
TPCRT_NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  tpcrt::emu::Internal internal;
  tpcrt::emu::noteResourceCall("ncclCommAbort");
  if (!comm)
    return ncclSuccess;
  comm->aborted = true;
  cleanUp(*comm);
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  tpcrt::emu::Internal internal;
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error";
  case ncclSystemError:
    return "unhandled system error";
  case ncclInternalError:
    return "internal error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unknown result code";
  }
}

TPCRT_NCCL_EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  tpcrt::emu::Internal internal;
  static thread_local std::string text;
  text = comm ? comm->lastError : std::string();
  return text.c_str();
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                                     ncclResult_t *state) {
  tpcrt::emu::Internal internal;
  if (!comm)
    return ncclInvalidArgument;
  *state = ncclSuccess;
  tpcrt::emu::progress();
  if (!comm->lastError.empty()) {
    *state = ncclSystemError;
  } else if (comm->finalizing && !comm->finished) {
    *state = ncclInProgress;
    if (comm->outstanding > 0)
      return ncclSuccess;
    std::string mine = marker(*comm, "fin", comm->rank);
    if (!exists(mine))
      writeFile(mine, "", 0);
    if (!allMarked(*comm, "fin"))
      return ncclSuccess;
    comm->finished = true;
    *state = ncclSuccess;
  }
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm,
                                             int *count) {
  tpcrt::emu::Internal internal;
  if (!comm)
    return ncclInvalidArgument;
  *count = comm->size;
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm,
                                                int *rank) {
  tpcrt::emu::Internal internal;
  if (!comm)
    return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclAllReduce(const void *send, void *recv,
                                             size_t count, ncclDataType_t type,
                                             ncclRedOp_t op, ncclComm_t comm,
                                             cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  if (!comm)
    return ncclInvalidArgument;
  return issue(comm,
               std::make_unique<Collective>(Kind::AllReduce, send, recv, count,
                                            type, op, 0, comm->collectives++),
               stream);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclAllGather(const void *send, void *recv,
                                             size_t count, ncclDataType_t type,
                                             ncclComm_t comm,
                                             cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  if (!comm)
    return ncclInvalidArgument;
  return issue(comm,
               std::make_unique<Collective>(Kind::AllGather, send, recv, count,
                                            type, ncclSum, 0,
                                            comm->collectives++),
               stream);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclReduceScatter(
    const void *send, void *recv, size_t count, ncclDataType_t type,
    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  if (!comm)
    return ncclInvalidArgument;
  return issue(comm,
               std::make_unique<Collective>(Kind::ReduceScatter, send, recv,
                                            count, type, op, 0,
                                            comm->collectives++),
               stream);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclBroadcast(const void *send, void *recv,
                                             size_t count, ncclDataType_t type,
                                             int root, ncclComm_t comm,
                                             cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  if (!checkPeer(comm, root))
    return ncclInvalidArgument;
  return issue(comm,
               std::make_unique<Collective>(Kind::Broadcast, send, recv, count,
                                            type, ncclSum, root,
                                            comm->collectives++),
               stream);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclSend(const void *send, size_t count,
                                        ncclDataType_t type, int peer,
                                        ncclComm_t comm, cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  if (!checkPeer(comm, peer))
    return ncclInvalidArgument;
  return issue(comm,
               std::make_unique<Send>(send, count * typeBytes(type), peer,
                                      comm->sent[peer]++),
               stream);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclRecv(void *recv, size_t count,
                                        ncclDataType_t type, int peer,
                                        ncclComm_t comm, cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  if (!checkPeer(comm, peer))
    return ncclInvalidArgument;
  return issue(comm,
               std::make_unique<Recv>(recv, count * typeBytes(type), peer,
                                      comm->received[peer]++),
               stream);
}

TPCRT_NCCL_EXPORT ncclResult_t ncclGroupStart() {
  tpcrt::emu::Internal internal;
  if (groupDepth++ == 0)
    group = std::make_shared<Operation>();
  return ncclSuccess;
}

TPCRT_NCCL_EXPORT ncclResult_t ncclGroupEnd() {
  tpcrt::emu::Internal internal;
  if (groupDepth == 0)
    return ncclInvalidUsage;
  if (--groupDepth > 0)
    return ncclSuccess;
  std::shared_ptr<Operation> operation = std::move(group);
  group.reset();
  // Every stream of the group waits for all of it ("Mixing multiple
  // streams within the same ncclGroupStart/End() group" in NCCL's guide:
  // as if the group were posted on every stream), whatever communicators
  // its operations use.
  for (auto &item : operation->items)
    operation->addStream(item->stream);
  for (cudaStream_t stream : operation->streams)
    tpcrt::emu::enqueue(stream, std::make_unique<StreamPart>(operation));
  return ncclSuccess;
}
