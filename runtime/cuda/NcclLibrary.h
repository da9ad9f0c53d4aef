//===- NcclLibrary.h - NCCL's functions, opened with dlopen -----*- C++ -*-===//
//
// NCCL is never linked: on the GPU machines it exists only inside Python
// wheels (nvidia-nccl-cu*: site-packages/nvidia/nccl/lib/libnccl.so.2), so
// it is opened at run time from a path found then, and the functions the
// runtime calls are resolved into a table. nccl.h gives the types and the
// functions' declarations (which type the table); its symbols are never
// referenced. Used by the CUDA device (cuda/Nccl.cpp) and by the NCCL
// communicator (comm/NcclCommunicator.cpp); depends on nothing else of
// either.
//
// Where it is looked for, in order (the first that opens, resolves every
// function and is NCCL >= 2.18 wins):
//   1. $TPCRT_NCCL_LIBRARY: when set, the only place tried;
//   2. "libnccl.so.2" through the dynamic loader's path (LD_LIBRARY_PATH,
//      the cache; a copy the process has loaded already);
//   3. the CUDA toolkit's /usr/local/cuda/lib64/libnccl.so.2;
//   4. nvidia/nccl/lib/libnccl.so.2 in every Python site-packages (or
//      dist-packages) folder of the system, the user, $VIRTUAL_ENV and
//      $CONDA_PREFIX;
//   5. where `python3` on PATH imports nvidia.nccl from.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_NCCLLIBRARY_H
#define TPCRT_CUDA_NCCLLIBRARY_H

#include "tpcrt/Status.h"

#include <nccl.h>

#include <string>
#include <vector>

namespace tpcrt {

/// The oldest NCCL accepted: ncclCommSplit and ncclCommInitRankConfig with
/// non-blocking communicators.
constexpr int kNcclMinimumVersion = 21800;

// Every function the runtime calls: the table's field and NCCL's name.
#define TPCRT_NCCL_FUNCTIONS(X)                                                \
  X(getVersion, ncclGetVersion)                                                \
  X(getUniqueId, ncclGetUniqueId)                                              \
  X(commInitRank, ncclCommInitRank)                                            \
  X(commInitRankConfig, ncclCommInitRankConfig)                                \
  X(commSplit, ncclCommSplit)                                                  \
  X(commFinalize, ncclCommFinalize)                                            \
  X(commDestroy, ncclCommDestroy)                                              \
  X(commAbort, ncclCommAbort)                                                  \
  X(getErrorString, ncclGetErrorString)                                        \
  X(getLastError, ncclGetLastError)                                            \
  X(commGetAsyncError, ncclCommGetAsyncError)                                  \
  X(commCount, ncclCommCount)                                                  \
  X(commUserRank, ncclCommUserRank)                                            \
  X(allReduce, ncclAllReduce)                                                  \
  X(allGather, ncclAllGather)                                                  \
  X(reduceScatter, ncclReduceScatter)                                          \
  X(broadcast, ncclBroadcast)                                                  \
  X(send, ncclSend)                                                            \
  X(recv, ncclRecv)                                                            \
  X(groupStart, ncclGroupStart)                                                \
  X(groupEnd, ncclGroupEnd)

/// An opened NCCL: its functions, its version and where it came from. It
/// stays loaded for the life of the process (NCCL is not made to be
/// unloaded).
struct NcclLibrary {
#define TPCRT_NCCL_FIELD(field, name) decltype(&::name) field = nullptr;
  TPCRT_NCCL_FUNCTIONS(TPCRT_NCCL_FIELD)
#undef TPCRT_NCCL_FIELD
  /// ncclGetVersion's code: major * 10000 + minor * 100 + patch.
  int version = 0;
  /// The path it was opened by (as tried: a name or a file).
  std::string path;
  void *handle = nullptr;
};

/// "2.21.5" for version code 22105.
std::string ncclVersionString(int version);

/// Opens `path` (a file, or a name for the loader's search) and resolves
/// every function; an error naming `path` when it does not open, lacks a
/// function or is older than 2.18. Not cached: each call opens again (the
/// loader counts references to the same file).
Status openNcclLibraryAt(const std::string &path, NcclLibrary &out);

/// Where to look, so that tests can point the search elsewhere.
struct NcclSearch {
  /// $TPCRT_NCCL_LIBRARY: when not empty, the only place tried.
  std::string library;
  /// Names or files tried first, in order ("libnccl.so.2", the toolkit's).
  std::vector<std::string> fixed;
  /// glob(3) patterns of Python site-packages folders: the
  /// nvidia/nccl/lib/libnccl.so.2 of each match is tried, in order.
  std::vector<std::string> sitePackages;
  /// Last, ask `python3` on PATH where it imports nvidia.nccl from.
  bool askPython = true;

  /// The search the runtime does (see the file comment), from the
  /// environment.
  static NcclSearch fromEnvironment();
};

/// The places `search` tries before asking Python, in order, without
/// duplicates (site-packages entries only where the file exists).
std::vector<std::string> ncclCandidates(const NcclSearch &search);

/// The nvidia/nccl/lib/libnccl.so.2 that `python3` on PATH would import
/// (nvidia.nccl's folders: it may be a namespace package), where it exists.
std::vector<std::string> askPythonForNccl();

/// Tries `search`'s places in order; the first usable one fills `out`.
/// Otherwise an error that lists what was tried and why each failed, and
/// says to set TPCRT_NCCL_LIBRARY.
Status findNcclLibrary(const NcclSearch &search, NcclLibrary &out);

/// NcclSearch::fromEnvironment's search, done once per process (later
/// calls return the first outcome). On success `library` is the table.
/// `path` (when given) is where it was found or, on an error, what was
/// tried.
Status loadNcclLibrary(const NcclLibrary *&library, std::string *path);

class Communicator;

/// Before an NCCL init, where ranks wait for each other: every rank of
/// `bootstrap` learns whether all are ready (`local`: this rank's own
/// outcome of loading NCCL and taking its device). An error names `what`
/// and this rank's reason, or how many ranks cannot take part.
Status agreeAllReady(Communicator &bootstrap, const Status &local,
                     const std::string &what);

/// Rank 0 of `bootstrap` makes an NCCL unique id and every rank gets it in
/// `id` (collective). Rank 0's result travels with the id, so that its
/// failure ends every rank's call alike.
Status shareUniqueId(Communicator &bootstrap, const NcclLibrary &nccl,
                     const std::string &what, ncclUniqueId &id);

} // namespace tpcrt

#endif // TPCRT_CUDA_NCCLLIBRARY_H
