//===- NcclLibrary.cpp - finding and opening NCCL at run time -------------===//

#include "NcclLibrary.h"

#include "tpcrt/Comm.h"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

using namespace tpcrt;

namespace {

constexpr const char *kWheelLibrary = "/nvidia/nccl/lib/libnccl.so.2";

bool isFile(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

bool endsWith(const std::string &text, const std::string &tail) {
  return text.size() >= tail.size() &&
         text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

/// The file `path` names, for telling copies apart; `path` itself when it
/// does not resolve (a bare name for the loader's search).
std::string identity(const std::string &path) {
  char resolved[PATH_MAX];
  if (path.find('/') != std::string::npos && realpath(path.c_str(), resolved))
    return resolved;
  return path;
}

std::string join(const std::vector<std::string> &parts, const char *by) {
  std::string text;
  for (const std::string &part : parts)
    text += (text.empty() ? "" : by) + part;
  return text;
}

} // namespace

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
  dlerror();
  // RTLD_LOCAL: NCCL's symbols stay out of the global namespace, where a
  // second copy (e.g. torch's) could bind to them.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    std::string message = why ? why : "dlopen failed";
    // dlerror names a file it could not open; say the path only once.
    if (message.compare(0, path.size(), path) != 0)
      message = path + ": " + message;
    return Status::error(message);
  }
  NcclLibrary library;
  library.handle = handle;
  library.path = path;
  std::vector<std::string> missing;
#define TPCRT_NCCL_RESOLVE(field, name)                                        \
  library.field =                                                              \
      reinterpret_cast<decltype(library.field)>(dlsym(handle, #name));         \
  if (!library.field)                                                          \
    missing.push_back(#name);
  TPCRT_NCCL_FUNCTIONS(TPCRT_NCCL_RESOLVE)
#undef TPCRT_NCCL_RESOLVE
  if (!missing.empty()) {
    dlclose(handle);
    return Status::error(path + ": not an NCCL of 2.18 or later (no " +
                         join(missing, ", ") + ")");
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

NcclSearch NcclSearch::fromEnvironment() {
  NcclSearch search;
  if (const char *library = std::getenv("TPCRT_NCCL_LIBRARY");
      library && *library)
    search.library = library;
  search.fixed = {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"};
  for (const char *prefix :
       {"/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/local/lib64"})
    for (const char *folder : {"site-packages", "dist-packages"})
      search.sitePackages.push_back(std::string(prefix) + "/python3*/" +
                                    folder);
  auto user = [&](const char *variable, const char *under) {
    if (const char *root = std::getenv(variable); root && *root)
      search.sitePackages.push_back(std::string(root) + under +
                                    "/python3*/site-packages");
  };
  user("HOME", "/.local/lib");
  user("VIRTUAL_ENV", "/lib");
  user("CONDA_PREFIX", "/lib");
  return search;
}

std::vector<std::string> tpcrt::ncclCandidates(const NcclSearch &search) {
  if (!search.library.empty())
    return {search.library};
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  auto add = [&](const std::string &path) {
    if (seen.insert(identity(path)).second)
      candidates.push_back(path);
  };
  for (const std::string &path : search.fixed)
    add(path);
  for (const std::string &pattern : search.sitePackages) {
    glob_t matches = {};
    // Only files that exist match (no GLOB_NOCHECK), sorted.
    if (glob((pattern + kWheelLibrary).c_str(), 0, nullptr, &matches) == 0)
      for (size_t i = 0; i < matches.gl_pathc; ++i)
        add(matches.gl_pathv[i]);
    globfree(&matches);
  }
  return candidates;
}

std::vector<std::string> tpcrt::askPythonForNccl() {
  // __path__, not __file__: nvidia.nccl may be a namespace package. The
  // shell's and Python's complaints (no python3, no nvidia.nccl) are not
  // ours to print.
  const char *command =
      "exec 2>/dev/null; python3 -c "
      "'import nvidia.nccl as m; print(\"\\n\".join(m.__path__))'";
  std::vector<std::string> found;
  FILE *pipe = popen(command, "r");
  if (!pipe)
    return found;
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe))
    output.append(buffer, n);
  pclose(pipe);
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos)
      end = output.size();
    std::string folder = output.substr(start, end - start);
    start = end + 1;
    if (folder.empty())
      continue;
    std::string path = folder + "/lib/libnccl.so.2";
    if (isFile(path))
      found.push_back(path);
  }
  return found;
}

namespace {

Status findNccl(const NcclSearch &search, NcclLibrary &out,
                std::vector<std::string> &tried) {
  if (!search.library.empty()) {
    tried.push_back(search.library);
    Status s = openNcclLibraryAt(search.library, out);
    if (s)
      return s;
    return Status::error(
        "NCCL: TPCRT_NCCL_LIBRARY=" + search.library +
        " is not usable: " + s.message() +
        " (set it to a libnccl.so.2 of NCCL 2.18 or later, or unset it to "
        "search the usual places)");
  }
  std::vector<std::string> failures;
  std::set<std::string> seen;
  auto attempt = [&](const std::string &path) {
    if (!seen.insert(identity(path)).second)
      return false;
    tried.push_back(path);
    Status s = openNcclLibraryAt(path, out);
    if (!s)
      failures.push_back(s.message());
    return bool(s);
  };
  bool anyWheel = false;
  for (const std::string &path : ncclCandidates(search)) {
    anyWheel |= endsWith(path, kWheelLibrary);
    if (attempt(path))
      return Status::ok();
  }
  if (!anyWheel && !search.sitePackages.empty())
    failures.push_back(std::string("no ") + (kWheelLibrary + 1) + " in " +
                       join(search.sitePackages, ", "));
  if (search.askPython) {
    std::vector<std::string> fromPython = askPythonForNccl();
    for (const std::string &path : fromPython)
      if (attempt(path))
        return Status::ok();
    if (fromPython.empty())
      failures.push_back("python3 on PATH: no nvidia.nccl with a "
                         "lib/libnccl.so.2");
  }
  return Status::error(
      "NCCL 2.18 or later (libnccl.so.2) was not found; tried: " +
      join(failures, "; ") +
      ". Set TPCRT_NCCL_LIBRARY to the path of libnccl.so.2 (e.g. "
      "<site-packages>" +
      kWheelLibrary + " of the Python package nvidia-nccl-cu13)");
}

} // namespace

Status tpcrt::findNcclLibrary(const NcclSearch &search, NcclLibrary &out) {
  std::vector<std::string> tried;
  return findNccl(search, out, tried);
}

Status tpcrt::loadNcclLibrary(const NcclLibrary *&library, std::string *path) {
  // Found once: NCCL is never unloaded, and every caller gets the same copy.
  struct Loaded {
    NcclLibrary library;
    Status status;
    std::string where;
  };
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> tried;
    loaded.status =
        findNccl(NcclSearch::fromEnvironment(), loaded.library, tried);
    loaded.where = loaded.status ? loaded.library.path : join(tried, ", ");
  });
  if (path)
    *path = loaded.where;
  library = loaded.status ? &loaded.library : nullptr;
  return loaded.status;
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
