//===- NcclLibraryTest.cpp - finding and opening NCCL at run time ---------===//
//
// cuda/NcclLibrary.cpp without a GPU: a missing or broken library is an error
// naming the path, $TPCRT_NCCL_LIBRARY is the only place tried when set, the
// toolkit's copy (where installed) resolves every function and is >= 2.18,
// and the search finds a wheel's nvidia/nccl/lib/libnccl.so.2 in a
// site-packages folder and through python3 (a namespace package).
//
//===----------------------------------------------------------------------===//

#include "NcclLibrary.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <unistd.h>

using namespace tpcrt;
namespace fs = std::filesystem;

namespace {

constexpr const char *kToolkitNccl = "/usr/local/cuda/lib64/libnccl.so.2";

bool exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

/// A fresh folder, removed with what it holds.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "tpcrt-nccl-XXXXXX").string();
    if (char *made = mkdtemp(pattern.data()))
      path_ = made;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty())
      fs::remove_all(path_, ignored);
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Sets (or, given null, unsets) an environment variable for a scope, then
/// puts the old value back.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ScopedEnv(const char *name, const std::string &value)
      : ScopedEnv(name, value.c_str()) {}
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

/// Writes `text` to `path`, making its folders.
void writeFile(const std::string &path, const std::string &text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(NcclLibrary, MissingFileIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir.path() + "/nowhere/libnccl.so.2";
  NcclLibrary library;
  Status s = openNcclLibraryAt(path, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), path)) << s.message();
  EXPECT_EQ(library.handle, nullptr);
}

TEST(NcclLibrary, NotALibraryIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir.path() + "/libnccl.so.2";
  writeFile(path, "not an ELF file\n");
  NcclLibrary library;
  Status s = openNcclLibraryAt(path, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), path)) << s.message();
}

TEST(NcclLibrary, OverrideIsTheOnlyPlaceTried) {
  TempDir dir;
  const std::string path = dir.path() + "/missing/libnccl.so.2";
  LibrarySearch search;
  {
    ScopedEnv library("TPCRT_NCCL_LIBRARY", path);
    search = LibrarySearch::fromEnvironment(ncclWheelLibrary());
  }
  EXPECT_EQ(search.library, path);
  EXPECT_EQ(libraryCandidates(ncclWheelLibrary(), search), std::vector<std::string>{path});
  NcclLibrary library;
  Status s = findNcclLibrary(search, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), "TPCRT_NCCL_LIBRARY=" + path))
      << s.message();
  // Not silently replaced by another copy (e.g. the toolkit's).
  EXPECT_FALSE(contains(s.message(), kToolkitNccl)) << s.message();
}

TEST(NcclLibrary, EnvironmentSearchOrder) {
  ScopedEnv venv("VIRTUAL_ENV", "/some/venv");
  ScopedEnv conda("CONDA_PREFIX", "/some/conda");
  ScopedEnv home("HOME", "/some/home");
  ScopedEnv library("TPCRT_NCCL_LIBRARY", nullptr);
  LibrarySearch search = LibrarySearch::fromEnvironment(ncclWheelLibrary());
  EXPECT_TRUE(search.library.empty());
  ASSERT_EQ(search.fixed.size(), 2u);
  EXPECT_EQ(search.fixed[0], "libnccl.so.2");
  EXPECT_EQ(search.fixed[1], kToolkitNccl);
  auto has = [&](const std::string &pattern) {
    for (const std::string &p : search.sitePackages)
      if (p == pattern)
        return true;
    return false;
  };
  EXPECT_TRUE(has("/usr/lib/python3*/dist-packages"));
  EXPECT_TRUE(has("/usr/local/lib/python3*/site-packages"));
  EXPECT_TRUE(has("/some/home/.local/lib/python3*/site-packages"));
  EXPECT_TRUE(has("/some/venv/lib/python3*/site-packages"));
  EXPECT_TRUE(has("/some/conda/lib/python3*/site-packages"));
  EXPECT_TRUE(search.askPython);
}

TEST(NcclLibrary, ToolkitCopyResolvesEveryFunction) {
  if (!exists(kToolkitNccl))
    GTEST_SKIP() << "no " << kToolkitNccl;
  NcclLibrary library;
  Status s = openNcclLibraryAt(kToolkitNccl, library);
  ASSERT_TRUE(s) << s.message();
#define TPCRT_NCCL_CHECK(field, name)                                          \
  EXPECT_NE(library.field, nullptr) << #name;
  TPCRT_NCCL_FUNCTIONS(TPCRT_NCCL_CHECK)
#undef TPCRT_NCCL_CHECK
  EXPECT_GE(library.version, kNcclMinimumVersion);
  EXPECT_EQ(library.path, kToolkitNccl);
  int version = 0;
  ASSERT_EQ(library.getVersion(&version), ncclSuccess);
  EXPECT_EQ(version, library.version);
  // Calls that need no device work.
  EXPECT_STRNE(library.getErrorString(ncclInvalidArgument), "");
  EXPECT_NE(library.getLastError(nullptr), nullptr);
  std::string text = ncclVersionString(library.version);
  EXPECT_EQ(text.compare(0, 2, "2."), 0) << text;
}

TEST(NcclLibrary, VersionStrings) {
  EXPECT_EQ(ncclVersionString(21805), "2.18.5");
  EXPECT_EQ(ncclVersionString(22809), "2.28.9");
  EXPECT_EQ(ncclVersionString(2708), "2.7.8");
}

TEST(NcclLibrary, SearchFindsAWheelInSitePackages) {
  TempDir dir;
  const std::string wheel =
      dir.path() + "/venv/lib/python3.99/site-packages/nvidia/nccl/lib/"
                   "libnccl.so.2";
  writeFile(wheel, "a stand-in\n");
  LibrarySearch search;
  search.sitePackages = {dir.path() + "/venv/lib/python3*/site-packages",
                         dir.path() + "/none/lib/python3*/dist-packages"};
  search.askPython = false;
  EXPECT_EQ(libraryCandidates(ncclWheelLibrary(), search), std::vector<std::string>{wheel});

  // The stand-in does not load: the error names it and the way out.
  NcclLibrary library;
  Status s = findNcclLibrary(search, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), wheel)) << s.message();
  EXPECT_TRUE(contains(s.message(), "TPCRT_NCCL_LIBRARY")) << s.message();

  // A real NCCL in the wheel's place is found there.
  if (!exists(kToolkitNccl))
    GTEST_SKIP() << "no " << kToolkitNccl << " to put in the wheel";
  fs::remove(wheel);
  fs::create_symlink(kToolkitNccl, wheel);
  s = findNcclLibrary(search, library);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(library.path, wheel);
  EXPECT_GE(library.version, kNcclMinimumVersion);
}

TEST(NcclLibrary, NothingFoundSaysWhatWasTried) {
  TempDir dir;
  LibrarySearch search;
  search.fixed = {dir.path() + "/cuda/lib64/libnccl.so.2"};
  search.sitePackages = {dir.path() + "/lib/python3*/site-packages"};
  search.askPython = false;
  NcclLibrary library;
  Status s = findNcclLibrary(search, library);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), search.fixed[0])) << s.message();
  EXPECT_TRUE(contains(s.message(), "no nvidia/nccl/lib/libnccl.so.2 in " +
                                        search.sitePackages[0]))
      << s.message();
  EXPECT_TRUE(contains(s.message(), "Set TPCRT_NCCL_LIBRARY")) << s.message();
}

TEST(NcclLibrary, PythonFindsANamespacePackage) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no python3 on PATH";
  TempDir dir;
  // No __init__.py: nvidia and nvidia.nccl are namespace packages, as the
  // wheels install them (no __file__, only __path__).
  const std::string wheel = dir.path() + "/site/nvidia/nccl/lib/libnccl.so.2";
  writeFile(wheel, "a stand-in\n");
  ScopedEnv pythonPath("PYTHONPATH", dir.path() + "/site");
  // (A namespace package also spans any installed nvidia.nccl.)
  bool seen = false;
  for (const std::string &path : askPythonForLibrary(ncclWheelLibrary()))
    seen |= fs::equivalent(path, wheel);
  EXPECT_TRUE(seen);
}

TEST(NcclLibrary, LoadIsDoneOnce) {
  const NcclLibrary *first = nullptr, *second = nullptr;
  std::string firstPath, secondPath;
  Status a = loadNcclLibrary(first, &firstPath);
  Status b = loadNcclLibrary(second, &secondPath);
  EXPECT_EQ(bool(a), bool(b));
  EXPECT_EQ(a.message(), b.message());
  EXPECT_EQ(first, second);
  EXPECT_EQ(firstPath, secondPath);
  if (a) {
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->path, firstPath);
    EXPECT_GE(first->version, kNcclMinimumVersion);
  } else {
    EXPECT_EQ(first, nullptr);
    EXPECT_TRUE(contains(a.message(), "TPCRT_NCCL_LIBRARY")) << a.message();
  }
}
