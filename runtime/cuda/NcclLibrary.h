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
// Where it is looked for: WheelLibrary.h's search (TPCRT_NCCL_LIBRARY, the
// loader's path, the toolkit, the wheels, python3); the first copy that
// opens, resolves every function and is NCCL >= 2.18 wins.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_NCCLLIBRARY_H
#define TPCRT_CUDA_NCCLLIBRARY_H

#include "WheelLibrary.h"
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

/// NCCL as WheelLibrary.h looks for it (TPCRT_NCCL_LIBRARY, libnccl.so.2,
/// nvidia/nccl/lib in the wheels).
const WheelLibrary &ncclWheelLibrary();

/// Tries `search`'s places in order; the first usable one fills `out`.
/// Otherwise an error that lists what was tried and why each failed, and
/// says to set TPCRT_NCCL_LIBRARY.
Status findNcclLibrary(const LibrarySearch &search, NcclLibrary &out);

/// LibrarySearch::fromEnvironment(ncclWheelLibrary())'s search, done once per
/// process (later calls return the first outcome). On success `library` is the
/// table. `path` (when given) is where it was found or, on an error, what was
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
