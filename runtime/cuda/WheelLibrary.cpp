//===- WheelLibrary.cpp - finding a CUDA library at run time --------------===//

#include "WheelLibrary.h"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <set>

using namespace tpcrt;

namespace {

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

} // namespace

std::string tpcrt::joinPaths(const std::vector<std::string> &parts,
                             const char *by) {
  std::string text;
  for (const std::string &part : parts)
    text += (text.empty() ? "" : by) + part;
  return text;
}

std::string WheelLibrary::wheelPath() const {
  return "/nvidia/" + package + "/lib/" + soname;
}

Status tpcrt::openSharedLibrary(const std::string &path, void *&handle) {
  dlerror();
  // RTLD_LOCAL: the library's symbols stay out of the global namespace,
  // where a second copy (e.g. torch's) could bind to them.
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle)
    return Status::ok();
  const char *why = dlerror();
  std::string message = why ? why : "dlopen failed";
  // dlerror names a file it could not open; say the path only once.
  if (message.compare(0, path.size(), path) != 0)
    message = path + ": " + message;
  return Status::error(message);
}

LibrarySearch LibrarySearch::fromEnvironment(const WheelLibrary &library) {
  LibrarySearch search;
  if (const char *file = std::getenv(library.variable.c_str()); file && *file)
    search.library = file;
  search.fixed = {library.soname, "/usr/local/cuda/lib64/" + library.soname};
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

std::vector<std::string> tpcrt::libraryCandidates(const WheelLibrary &library,
                                                  const LibrarySearch &search) {
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
  const std::string wheel = library.wheelPath();
  for (const std::string &pattern : search.sitePackages) {
    glob_t matches = {};
    // Only files that exist match (no GLOB_NOCHECK), sorted.
    if (glob((pattern + wheel).c_str(), 0, nullptr, &matches) == 0)
      for (size_t i = 0; i < matches.gl_pathc; ++i)
        add(matches.gl_pathv[i]);
    globfree(&matches);
  }
  return candidates;
}

std::vector<std::string>
tpcrt::askPythonForLibrary(const WheelLibrary &library) {
  // __path__, not __file__: nvidia.<package> may be a namespace package.
  // The shell's and Python's complaints (no python3, no such module) are
  // not ours to print.
  const std::string command = "exec 2>/dev/null; python3 -c "
                              "'import nvidia." +
                              library.package +
                              " as m; print(\"\\n\".join(m.__path__))'";
  std::vector<std::string> found;
  FILE *pipe = popen(command.c_str(), "r");
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
    std::string path = folder + "/lib/" + library.soname;
    if (isFile(path))
      found.push_back(path);
  }
  return found;
}

Status tpcrt::findLibrary(const WheelLibrary &library,
                          const LibrarySearch &search,
                          const LibraryOpener &open,
                          std::vector<std::string> &tried) {
  if (!search.library.empty()) {
    tried.push_back(search.library);
    Status s = open(search.library);
    if (s)
      return s;
    return Status::error(library.what.substr(0, library.what.find(' ')) + ": " +
                         library.variable + "=" + search.library +
                         " is not usable: " + s.message() + " (set it to a " +
                         library.soname + " of " + library.what +
                         ", or unset it to search the usual places)");
  }
  std::vector<std::string> failures;
  std::set<std::string> seen;
  auto attempt = [&](const std::string &path) {
    if (!seen.insert(identity(path)).second)
      return false;
    tried.push_back(path);
    Status s = open(path);
    if (!s)
      failures.push_back(s.message());
    return bool(s);
  };
  const std::string wheel = library.wheelPath();
  bool anyWheel = false;
  for (const std::string &path : libraryCandidates(library, search)) {
    anyWheel |= endsWith(path, wheel);
    if (attempt(path))
      return Status::ok();
  }
  if (!anyWheel && !search.sitePackages.empty())
    failures.push_back("no " + wheel.substr(1) + " in " +
                       joinPaths(search.sitePackages, ", "));
  if (search.askPython) {
    std::vector<std::string> fromPython = askPythonForLibrary(library);
    for (const std::string &path : fromPython)
      if (attempt(path))
        return Status::ok();
    if (fromPython.empty())
      failures.push_back("python3 on PATH: no nvidia." + library.package +
                         " with a lib/" + library.soname);
  }
  return Status::error(library.what + " (" + library.soname +
                       ") was not found; tried: " + joinPaths(failures, "; ") +
                       ". Set " + library.variable + " to the path of " +
                       library.soname + " (e.g. <site-packages>" + wheel +
                       " of the Python package " + library.wheel + ")");
}
