//===- ModelPrograms.h - compiled models' programs for tests ----*- C++ -*-===//
//
// Tests of what the CUDA device plans for compiled models (GemmSpecTest's,
// CudnnTest's DISABLED_Model* cases): the executables a ctest script
// compiled with tpc-compile, named by TPCRT_GEMM_SPEC_MODELS (':'-separated;
// runtime/test/gemm_spec_models.sh), each decoded as the loader does.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_MODELPROGRAMS_H
#define TPCRT_TEST_MODELPROGRAMS_H

#include "tpcrt/Executable.h"
#include "tpcrt/Program.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace tpcrt::test {

/// Loads and decodes the executable at `path` as the loader does.
inline void loadProgram(const std::string &path, LoadedExecutable &file,
                        Program &program) {
  Status s = loadExecutable(path, file);
  ASSERT_TRUE(s.isOk()) << s.message();
  s = decodeProgram(file.executable(), program);
  ASSERT_TRUE(s.isOk()) << path << ": " << s.message();
}

/// The executables named by TPCRT_GEMM_SPEC_MODELS (':'-separated).
inline std::vector<std::string> modelPaths() {
  std::vector<std::string> paths;
  const char *models = std::getenv("TPCRT_GEMM_SPEC_MODELS");
  std::string list = models ? models : "";
  for (size_t start = 0; start < list.size();) {
    size_t end = std::min(list.find(':', start), list.size());
    if (end > start)
      paths.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return paths;
}

/// Runs `check` on each model's decoded program, stopping at a fatal
/// failure.
inline void forEachModel(
    const std::function<void(const std::string &, const Program &)> &check) {
  std::vector<std::string> paths = modelPaths();
  ASSERT_FALSE(paths.empty()) << "TPCRT_GEMM_SPEC_MODELS is not set";
  for (const std::string &path : paths) {
    SCOPED_TRACE(path);
    LoadedExecutable file;
    Program program;
    loadProgram(path, file, program);
    if (::testing::Test::HasFatalFailure())
      return;
    check(path, program);
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

} // namespace tpcrt::test

#endif // TPCRT_TEST_MODELPROGRAMS_H
