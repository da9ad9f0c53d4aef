//===- WheelLibrary.h - a CUDA library found at run time ---------*- C++
//-*-===//
//
// NCCL and cuDNN are never linked: on the GPU machines they exist only
// inside Python wheels (site-packages/nvidia/<package>/lib/<soname>), so each
// is opened with dlopen from a path found at run time. This is the search
// both share; NcclLibrary.h and CudnnLibrary.h say what makes a found copy
// usable (its functions, its version).
//
// Where a library is looked for, in order (the first that opens and is
// usable wins):
//   1. $<variable> (TPCRT_NCCL_LIBRARY, TPCRT_CUDNN_LIBRARY): when set, the
//      only place tried;
//   2. the soname through the dynamic loader's path (LD_LIBRARY_PATH, the
//      cache; a copy the process has loaded already);
//   3. the CUDA toolkit's /usr/local/cuda/lib64/<soname>;
//   4. nvidia/<package>/lib/<soname> in every Python site-packages (or
//      dist-packages) folder of the system, the user, $VIRTUAL_ENV and
//      $CONDA_PREFIX;
//   5. where `python3` on PATH imports nvidia.<package> from.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_WHEELLIBRARY_H
#define TPCRT_CUDA_WHEELLIBRARY_H

#include "tpcrt/Status.h"

#include <dlfcn.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace tpcrt {

/// A library of the CUDA toolkit that Python wheels also ship.
struct WheelLibrary {
  /// For messages: "NCCL 2.18 or later".
  std::string what;
  /// The environment variable naming the one file to use.
  std::string variable;
  /// "libnccl.so.2".
  std::string soname;
  /// The folder under nvidia/ in site-packages, and the Python module
  /// nvidia.<package>: "nccl".
  std::string package;
  /// The Python package to name in the error: "nvidia-nccl-cu13".
  std::string wheel;

  /// "/nvidia/<package>/lib/<soname>".
  std::string wheelPath() const;
};

/// Where to look, so that tests can point the search elsewhere.
struct LibrarySearch {
  /// $<variable>: when not empty, the only place tried.
  std::string library;
  /// Names or files tried first, in order (the soname, the toolkit's).
  std::vector<std::string> fixed;
  /// glob(3) patterns of Python site-packages folders: the wheel path of
  /// each match is tried, in order.
  std::vector<std::string> sitePackages;
  /// Last, ask `python3` on PATH where it imports nvidia.<package> from.
  bool askPython = true;

  /// The search the runtime does (see the file comment), from the
  /// environment.
  static LibrarySearch fromEnvironment(const WheelLibrary &library);
};

/// The places `search` tries before asking Python, in order, without
/// duplicates (site-packages entries only where the file exists).
std::vector<std::string> libraryCandidates(const WheelLibrary &library,
                                           const LibrarySearch &search);

/// The lib/<soname> of nvidia.<package> that `python3` on PATH would import
/// (its folders: it may be a namespace package), where it exists.
std::vector<std::string> askPythonForLibrary(const WheelLibrary &library);

/// dlopen(path, RTLD_NOW | RTLD_LOCAL); an error naming `path` (once) with
/// dlerror's reason.
Status openSharedLibrary(const std::string &path, void *&handle);

/// Sets `field` (a function pointer) to `name` in the opened library
/// `handle`, or adds `name` to `missing`.
template <class Function>
void resolveFunction(void *handle, const char *name, Function &field,
                     std::vector<std::string> &missing) {
  field = reinterpret_cast<Function>(dlsym(handle, name));
  if (!field)
    missing.push_back(name);
}

/// Opens one candidate: ok when usable, else an error naming it.
using LibraryOpener = std::function<Status(const std::string &path)>;

/// Tries `search`'s places in order until `open` accepts one. Otherwise an
/// error that lists what was tried and why each failed, and says to set
/// the variable. `tried` gets every path attempted.
Status findLibrary(const WheelLibrary &library, const LibrarySearch &search,
                   const LibraryOpener &open, std::vector<std::string> &tried);

/// The search from the environment (LibrarySearch::fromEnvironment), done
/// once per process for each Library type: later calls return the first
/// outcome and the same table. `path` (when given) is where it was found
/// or, on an error, what was tried.
template <class Library>
Status loadLibraryOnce(const WheelLibrary &info,
                       Status (*openAt)(const std::string &, Library &),
                       const Library *&library, std::string *path);

/// "a, b, c".
std::string joinPaths(const std::vector<std::string> &parts, const char *by);

template <class Library>
Status loadLibraryOnce(const WheelLibrary &info,
                       Status (*openAt)(const std::string &, Library &),
                       const Library *&library, std::string *path) {
  // Found once: such libraries are never unloaded, and every caller gets
  // the same copy.
  struct Loaded {
    Library library;
    Status status;
    std::string where;
  };
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::vector<std::string> tried;
    loaded.status = findLibrary(
        info, LibrarySearch::fromEnvironment(info),
        [&](const std::string &file) { return openAt(file, loaded.library); },
        tried);
    loaded.where = loaded.status ? loaded.library.path : joinPaths(tried, ", ");
  });
  if (path)
    *path = loaded.where;
  library = loaded.status ? &loaded.library : nullptr;
  return loaded.status;
}

} // namespace tpcrt

#endif // TPCRT_CUDA_WHEELLIBRARY_H
