//===- NcclLibrary.cpp - finding and opening NCCL at run time -------------===//

#include "NcclLibrary.h"

#include "tpcrt/Comm.h"

#include <dlfcn.h>

using namespace tpcrt;

std::string tpcrt::ncclVersionString(int version) {
  // NCCL_VERSION: major * 1000 + minor * 100 + patch before 2.9.
  const bool old = version < 10000;
  int major = old ? version / 1000 : version / 10000;
  int minor = old ? version / 100 % 10 : version / 100 % 100;
  int patch = version % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

Status tpcrt::openNcclLibraryAt(const std::string &path, NcclLibrary &out) {
  void *handle = nullptr;
  if (Status s = openSharedLibrary(path, handle); !s)
    return s;
  NcclLibrary library;
  library.handle = handle;
  library.path = path;
  std::vector<std::string> missing;
#define TPCRT_NCCL_RESOLVE(field, name)                                        \
  resolveFunction(handle, #name, library.field, missing);
  TPCRT_NCCL_FUNCTIONS(TPCRT_NCCL_RESOLVE)
#undef TPCRT_NCCL_RESOLVE
  if (!missing.empty()) {
    dlclose(handle);
    return Status::error(path + ": not an NCCL of 2.18 or later (no " +
                         joinPaths(missing, ", ") + ")");
  }
  int version = 0;
  if (ncclResult_t r = library.getVersion(&version); r != ncclSuccess) {
    dlclose(handle);
    return Status::error(
        path + ": ncclGetVersion failed: " + library.getErrorString(r));
  }
  if (version < kNcclMinimumVersion) {
    dlclose(handle);
    return Status::error(path + ": NCCL " + ncclVersionString(version) +
                         ", 2.18 or later is needed (ncclCommSplit, "
                         "non-blocking communicators)");
  }
  library.version = version;
  out = std::move(library);
  return Status::ok();
}

const WheelLibrary &tpcrt::ncclWheelLibrary() {
  static const WheelLibrary nccl{"NCCL 2.18 or later", "TPCRT_NCCL_LIBRARY",
                                 "libnccl.so.2", "nccl", "nvidia-nccl-cu13"};
  return nccl;
}

Status tpcrt::findNcclLibrary(const LibrarySearch &search, NcclLibrary &out) {
  std::vector<std::string> tried;
  return findLibrary(
      ncclWheelLibrary(), search,
      [&](const std::string &path) { return openNcclLibraryAt(path, out); },
      tried);
}

Status tpcrt::loadNcclLibrary(const NcclLibrary *&library, std::string *path) {
  return loadLibraryOnce(ncclWheelLibrary(), openNcclLibraryAt, library, path);
}

Status tpcrt::agreeAllReady(Communicator &bootstrap, const Status &local,
                            const std::string &what) {
  int64_t failed = local ? 0 : 1;
  if (Status s = bootstrap.allReduceSum(&failed, 1); !s)
    return s.withContext(what);
  if (!local)
    return Status::error(what + ": rank " + std::to_string(bootstrap.rank()) +
                         ": " + local.message());
  if (failed)
    return Status::error(what + ": " + std::to_string(failed) + " of " +
                         std::to_string(bootstrap.size()) +
                         " ranks cannot load NCCL or use their CUDA device");
  return Status::ok();
}

Status tpcrt::shareUniqueId(Communicator &bootstrap, const NcclLibrary &nccl,
                            const std::string &what, ncclUniqueId &id) {
  struct {
    int32_t result;
    ncclUniqueId id;
  } root = {};
  if (bootstrap.rank() == 0)
    root.result = nccl.getUniqueId(&root.id);
  if (Status s = bootstrap.broadcast(&root, sizeof(root), 0); !s)
    return s.withContext(what);
  if (root.result != ncclSuccess)
    return Status::error(
        what + ": ncclGetUniqueId failed on rank 0: NCCL: " +
        nccl.getErrorString(static_cast<ncclResult_t>(root.result)));
  id = root.id;
  return Status::ok();
}
