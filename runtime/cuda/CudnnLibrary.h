//===- CudnnLibrary.h - cuDNN's functions, opened with dlopen ---*- C++ -*-===//
//
// cuDNN is never linked: on the GPU machines it exists only inside Python
// wheels (nvidia-cudnn-cu*: site-packages/nvidia/cudnn/lib/libcudnn.so.9),
// so it is opened at run time (WheelLibrary.h's search: TPCRT_CUDNN_LIBRARY,
// the loader's path, the toolkit, the wheels, python3), and the functions
// the runtime calls are resolved into a table. Only the graph (backend) API
// is used; cudnn_graph.h gives the types and declarations, its symbols are
// never referenced. libcudnn.so.9 is cuDNN's shim: it opens its
// sub-libraries (graph, engines) from its own folder when first needed.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_CUDNNLIBRARY_H
#define TPCRT_CUDA_CUDNNLIBRARY_H

#include "WheelLibrary.h"
#include "tpcrt/Status.h"

#include <cudnn_graph.h>

#include <string>

namespace tpcrt {

/// The oldest cuDNN accepted: 9.0, the first with libcudnn.so.9 (the shim
/// and its sub-libraries) and cudnnGetLastErrorString.
constexpr size_t kCudnnMinimumVersion = 90000;

// Every function the runtime calls: the table's field and cuDNN's name.
#define TPCRT_CUDNN_FUNCTIONS(X)                                               \
  X(getVersion, cudnnGetVersion)                                               \
  X(getErrorString, cudnnGetErrorString)                                       \
  X(getLastErrorString, cudnnGetLastErrorString)                               \
  X(create, cudnnCreate)                                                       \
  X(destroy, cudnnDestroy)                                                     \
  X(setStream, cudnnSetStream)                                                 \
  X(createDescriptor, cudnnBackendCreateDescriptor)                            \
  X(destroyDescriptor, cudnnBackendDestroyDescriptor)                          \
  X(setAttribute, cudnnBackendSetAttribute)                                    \
  X(getAttribute, cudnnBackendGetAttribute)                                    \
  X(finalize, cudnnBackendFinalize)                                            \
  X(execute, cudnnBackendExecute)

/// An opened cuDNN: its functions, its version and where it came from. It
/// stays loaded for the life of the process.
struct CudnnLibrary {
#define TPCRT_CUDNN_FIELD(field, name) decltype(&::name) field = nullptr;
  TPCRT_CUDNN_FUNCTIONS(TPCRT_CUDNN_FIELD)
#undef TPCRT_CUDNN_FIELD
  /// cudnnGetVersion's code: major * 10000 + minor * 100 + patch.
  size_t version = 0;
  /// The path it was opened by (as tried: a name or a file).
  std::string path;
  void *handle = nullptr;

  /// "CUDNN_STATUS_...: <the last error's text>" for a failed call.
  std::string describe(cudnnStatus_t status) const;
};

/// "9.19.0" for version code 91900.
std::string cudnnVersionString(size_t version);

/// cuDNN as WheelLibrary.h looks for it (TPCRT_CUDNN_LIBRARY,
/// libcudnn.so.9, nvidia/cudnn/lib in the wheels).
const WheelLibrary &cudnnWheelLibrary();

/// Opens `path` (a file, or a name for the loader's search) and resolves
/// every function; an error naming `path` when it does not open, lacks a
/// function or is older than 9.0. Not cached.
Status openCudnnLibraryAt(const std::string &path, CudnnLibrary &out);

/// Tries `search`'s places in order; the first usable one fills `out`.
Status findCudnnLibrary(const LibrarySearch &search, CudnnLibrary &out);

/// LibrarySearch::fromEnvironment(cudnnWheelLibrary())'s search, done once
/// per process (later calls return the first outcome). On success
/// `library` is the table; `path` (when given) is where it was found or, on
/// an error, what was tried.
Status loadCudnnLibrary(const CudnnLibrary *&library, std::string *path);

} // namespace tpcrt

#endif // TPCRT_CUDA_CUDNNLIBRARY_H
