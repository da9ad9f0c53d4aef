//===- RankChecker.h - one rank's checks in the multi-rank checks -*- C++
//-*-===//
//
// The checks that run on every rank of a communicator (tpcrt-comm-check,
// tpcrt-dist-check, tpcrt-pipeline-check, tpcrt-nccl-check) count their
// checks and failures here, each failure said on stderr with the rank, and
// end alike on every rank (finishOnEveryRank).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_RANKCHECKER_H
#define TPCRT_TEST_RANKCHECKER_H

#include "tpcrt/Comm.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace tpcrt::test {

struct RankChecker {
  int rank = 0;
  int failures = 0;
  int checks = 0;
  /// Says each equal() that holds on stdout, "rank R: WHAT: ok (N elements)".
  bool sayPasses = false;

  void fail(const std::string &what) {
    std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
    ++failures;
  }

  /// Whether `s` is ok; a failure, with its message, where it is not.
  bool ok(const std::string &what, const Status &s) {
    if (s)
      return true;
    fail(what + ": error: " + s.message());
    return false;
  }

  /// A failure where `s` is ok; its message on stdout where it is not.
  void expectError(const std::string &what, const Status &s) {
    if (s) {
      fail(what + ": expected an error, got ok");
      return;
    }
    std::printf("rank %d: %s: error as expected: %s\n", rank, what.c_str(),
                s.message().c_str());
  }

  /// Equal element by element, or within `tolerance` (relative to
  /// 1 + |want|) where it is above 0; the first difference is said.
  template <typename T>
  bool equal(const std::string &what, const std::vector<T> &got,
             const std::vector<T> &want, double tolerance = 0.0) {
    ++checks;
    if (got.size() != want.size()) {
      fail(what + ": " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size()));
      return false;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      double g = double(got[i]), w = double(want[i]);
      bool same = tolerance > 0
                      ? std::abs(g - w) <= tolerance * (1 + std::abs(w))
                      : got[i] == want[i];
      if (!same) {
        char text[96];
        std::snprintf(text, sizeof(text), "element %zu is %.9g, expected %.9g",
                      i, g, w);
        fail(what + ": " + text);
        return false;
      }
    }
    if (sayPasses)
      std::printf("rank %d: %s: ok (%zu elements)\n", rank, what.c_str(),
                  want.size());
    return true;
  }
};

/// Whether any rank of `world` has failed (the failures summed over it,
/// said on stderr where any): every rank gets the same answer.
inline bool failedOnAnyRank(Communicator &world, RankChecker &check) {
  int64_t failures = check.failures;
  if (!check.ok("summing failures", world.allReduceSum(&failures, 1)))
    return true;
  if (failures)
    std::fprintf(stderr, "rank %d: %d failure(s) here, %lld in all\n",
                 check.rank, check.failures, static_cast<long long>(failures));
  return failures != 0;
}

/// The exit status of a check on every rank of `world` alike: 1 where any
/// rank failed, else 0.
inline int finishOnEveryRank(Communicator &world, RankChecker &check) {
  if (failedOnAnyRank(world, check))
    return 1;
  std::printf("rank %d: %d checks passed\n", check.rank, check.checks);
  return 0;
}

/// The main of a check run under an MPI launcher: `run` on the world; where
/// the arguments are not what it takes (`badArguments`), `usage` on stderr.
template <typename Run>
int mpiCheckMain(bool badArguments, const char *usage, Run run) {
  if (badArguments) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 1;
  }
  if (!hasMpiBackend()) {
    std::printf("built without MPI: skipped\n");
    return 77;
  }
  std::unique_ptr<Communicator> world;
  if (Status s = createMpiWorldCommunicator(world); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return run(*world);
}

} // namespace tpcrt::test

#endif // TPCRT_TEST_RANKCHECKER_H
