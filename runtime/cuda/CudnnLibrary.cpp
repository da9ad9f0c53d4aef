//===- CudnnLibrary.cpp - finding and opening cuDNN at run time -----------===//

#include "CudnnLibrary.h"

#include <dlfcn.h>

using namespace tpcrt;

std::string tpcrt::cudnnVersionString(size_t version) {
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

std::string CudnnLibrary::describe(cudnnStatus_t status) const {
  char last[1024] = {};
  getLastErrorString(last, sizeof(last));
  std::string text = getErrorString(status);
  if (last[0])
    text += std::string(": ") + last;
  return text;
}

const WheelLibrary &tpcrt::cudnnWheelLibrary() {
  static const WheelLibrary cudnn{"cuDNN 9 or later", "TPCRT_CUDNN_LIBRARY",
                                  "libcudnn.so.9", "cudnn",
                                  "nvidia-cudnn-cu13"};
  return cudnn;
}

Status tpcrt::openCudnnLibraryAt(const std::string &path, CudnnLibrary &out) {
  void *handle = nullptr;
  if (Status s = openSharedLibrary(path, handle); !s)
    return s;
  CudnnLibrary library;
  library.handle = handle;
  library.path = path;
  std::vector<std::string> missing;
#define TPCRT_CUDNN_RESOLVE(field, name)                                       \
  resolveFunction(handle, #name, library.field, missing);
  TPCRT_CUDNN_FUNCTIONS(TPCRT_CUDNN_RESOLVE)
#undef TPCRT_CUDNN_RESOLVE
  if (!missing.empty()) {
    dlclose(handle);
    return Status::error(path + ": not a cuDNN of 9.0 or later (no " +
                         joinPaths(missing, ", ") + ")");
  }
  size_t version = library.getVersion();
  if (version < kCudnnMinimumVersion) {
    dlclose(handle);
    return Status::error(path + ": cuDNN " + cudnnVersionString(version) +
                         ", 9.0 or later is needed");
  }
  library.version = version;
  out = std::move(library);
  return Status::ok();
}

Status tpcrt::findCudnnLibrary(const LibrarySearch &search, CudnnLibrary &out) {
  std::vector<std::string> tried;
  return findLibrary(
      cudnnWheelLibrary(), search,
      [&](const std::string &path) { return openCudnnLibraryAt(path, out); },
      tried);
}

Status tpcrt::loadCudnnLibrary(const CudnnLibrary *&library,
                               std::string *path) {
  return loadLibraryOnce(cudnnWheelLibrary(), openCudnnLibraryAt, library,
                         path);
}
