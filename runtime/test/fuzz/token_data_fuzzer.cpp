//===- token_data_fuzzer.cpp - libFuzzer target: the token data reader ----===//
//
// The input is a token file as `tpc-run --data` reads it (flat little-endian
// uint16 or uint32 ids, no header). TokenFile reads only from a path, so the
// bytes go to a per-process file (tokenPath), opened as both uint16 and
// uint32 tokens; every token is read, and batches are drawn from it for
// three small training executables built in-process
// (test/TestExecutables.h, test/RanksExecutables.h): the tiny training model
// (vocabulary 16, so most ids are out of bounds), the same with a vocabulary
// above 65536 and two microbatches, and the rank model placed on the last
// rank of a [dp=2, tp=2] mesh (the sampler cuts that rank's block out of
// the global batch). A file the reader refuses, or an id outside the
// executable's vocabulary, must come back as an error Status; anything else
// is a bug in src/TokenData.cpp (or src/Inputs.cpp). See
// test/fuzz/README.md.
//
//===----------------------------------------------------------------------===//

#include "RanksExecutables.h"
#include "TestExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Program.h"
#include "tpcrt/TokenData.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace tpcrt;
using namespace tpcrt::test;

namespace {

/// A decoded executable, placed on one rank, as the sampler sees it.
struct Target {
  LoadedExecutable loaded;
  Program program;
};

[[noreturn]] void fail(const std::string &what, const Status &status) {
  std::fprintf(stderr, "token_data_fuzzer: %s: %s\n", what.c_str(),
               status.message().c_str());
  std::abort();
}

std::unique_ptr<Target> makeTarget(const fb::ExecutableT &exe, int64_t rank) {
  auto target = std::make_unique<Target>();
  std::vector<uint8_t> image = fileImage(exe);
  if (Status s = loadExecutableFromBytes("fuzz-target.tpcx", image.data(),
                                         image.size(), target->loaded);
      !s)
    fail("building the target executable", s);
  if (Status s = decodeProgram(target->loaded.executable(), target->program);
      !s)
    fail("decoding the target executable", s);
  if (Status s = placeProgram(target->program, rank); !s)
    fail("placing the target executable", s);
  return target;
}

const std::vector<std::unique_ptr<Target>> &targets() {
  static const std::vector<std::unique_ptr<Target>> all = [] {
    std::vector<std::unique_ptr<Target>> list;
    list.push_back(makeTarget(tinyTrainingModel(), 0));
    TrainingOptions wide;
    wide.vocab = 70000;
    wide.batch = 2;
    wide.seq = 8;
    wide.microbatches = 2;
    list.push_back(makeTarget(tinyTrainingModel(wide), 0));
    list.push_back(makeTarget(ranksModel({{"dp", 2}, {"tp", 2}}), 3));
    return list;
  }();
  return all;
}

/// The per-process token file, removed after each input (libFuzzer may end
/// the process without running atexit handlers): in $TMPDIR when set, else
/// in /dev/shm where it is writable (rewriting a file on a disk for every
/// input makes the fuzzer some 50 times slower), else in /tmp.
const std::string &tokenPath() {
  static const std::string path = [] {
    const char *env = std::getenv("TMPDIR");
    std::string dir = "/tmp";
    if (env && *env)
      dir = env;
    else if (::access("/dev/shm", W_OK | X_OK) == 0)
      dir = "/dev/shm";
    return dir + "/tpcrt-token-fuzz." + std::to_string(::getpid()) + ".bin";
  }();
  return path;
}

bool writeTokenFile(const uint8_t *data, size_t size) {
  int fd = ::open(tokenPath().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0600);
  if (fd < 0)
    return false;
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return ::close(fd) == 0;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  targets();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!writeTokenFile(data, size)) {
    std::perror(tokenPath().c_str());
    std::abort();
  }
  for (TokenDType dtype : {TokenDType::U16, TokenDType::U32}) {
    TokenFile file;
    if (!TokenFile::open(tokenPath(), dtype, file))
      continue;
    uint64_t width = dtype == TokenDType::U16 ? 2 : 4;
    if (file.size() * width != size)
      std::abort();
    uint64_t sum = 0;
    for (uint64_t i = 0; i < file.size(); ++i) {
      int64_t token = file.token(i);
      if (token < 0 ||
          token > (dtype == TokenDType::U16 ? 0xFFFF : 0xFFFFFFFFll))
        std::abort();
      sum += static_cast<uint64_t>(token);
    }
    (void)sum;
    // Moving keeps the mapping.
    TokenFile moved = std::move(file);
    for (const std::unique_ptr<Target> &target : targets()) {
      TokenSampler sampler;
      if (!TokenSampler::create(moved, 7, "data", target->program, sampler))
        continue;
      for (uint64_t draw :
           {uint64_t(0), uint64_t(1), uint64_t(1) << 62, ~uint64_t(0)})
        if (!sampler.sample(draw))
          break;
    }
  }
  ::unlink(tokenPath().c_str());
  return 0;
}
