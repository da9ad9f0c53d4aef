//===- BatchDeferralTest.cpp - the optimizer's batched launches, on the CPU ===//
//
// cuda/BatchDeferral.h without a GPU: a batch called in order is one launch
// at its last member; anything else called first launches what was
// deferred; random call sequences update every called member exactly once,
// never before it is called and never after the next other kernel.
//
//===----------------------------------------------------------------------===//

#include "BatchDeferral.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using tpcrt::cuda::BatchDeferral;
using tpcrt::cuda::BatchLaunch;

namespace {

struct Step {
  bool absorbed;
  std::vector<BatchLaunch> launches;
};

Step call(BatchDeferral &d, int32_t batch, uint32_t member) {
  BatchLaunch launches[BatchDeferral::kMostLaunches];
  size_t count = 0;
  bool absorbed = d.call(batch, member, launches, count);
  return {absorbed, std::vector<BatchLaunch>(launches, launches + count)};
}

std::vector<BatchLaunch> flush(BatchDeferral &d) {
  BatchLaunch launches[BatchDeferral::kMostLaunches];
  size_t count = 0;
  d.flush(launches, count);
  return std::vector<BatchLaunch>(launches, launches + count);
}

bool same(const std::vector<BatchLaunch> &a,
          const std::vector<std::vector<uint32_t>> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (static_cast<uint32_t>(a[i].batch) != b[i][0] || a[i].first != b[i][1] ||
        a[i].count != b[i][2])
      return false;
  return true;
}

TEST(BatchDeferralTest, InOrderIsOneLaunchAtTheLastMember) {
  BatchDeferral d({3});
  EXPECT_TRUE(call(d, 0, 0).absorbed);
  EXPECT_TRUE(call(d, 0, 1).launches.empty());
  Step last = call(d, 0, 2);
  EXPECT_TRUE(last.absorbed);
  EXPECT_TRUE(same(last.launches, {{0, 0, 3}}));
  EXPECT_TRUE(flush(d).empty());
}

TEST(BatchDeferralTest, AnotherKernelLaunchesWhatWasDeferred) {
  BatchDeferral d({4});
  call(d, 0, 0);
  call(d, 0, 1);
  Step other = call(d, -1, 0);
  EXPECT_FALSE(other.absorbed);
  EXPECT_TRUE(same(other.launches, {{0, 0, 2}}));
  // The rest, called afterwards, go alone.
  EXPECT_TRUE(same(call(d, 0, 2).launches, {{0, 2, 1}}));
  EXPECT_TRUE(same(call(d, 0, 3).launches, {{0, 3, 1}}));
}

TEST(BatchDeferralTest, OutOfOrderAndTheStepsEnd) {
  BatchDeferral d({3, 2});
  call(d, 0, 0);
  // Member 2 before member 1: the deferred one first, then 2 alone.
  EXPECT_TRUE(same(call(d, 0, 2).launches, {{0, 0, 1}, {0, 2, 1}}));
  call(d, 1, 0);
  EXPECT_TRUE(same(flush(d), {{1, 0, 1}}));
  // The next step starts over.
  call(d, 1, 0);
  EXPECT_TRUE(same(call(d, 1, 1).launches, {{1, 0, 2}}));
}

TEST(BatchDeferralTest, RandomCallsUpdateEachCalledMemberOnce) {
  std::mt19937 random(17);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<uint32_t> sizes;
    for (int b = 0, n = 1 + random() % 3; b < n; ++b)
      sizes.push_back(1 + random() % 5);
    BatchDeferral d(sizes);
    // Calls: mostly batches in order, sometimes skips, repeats, others.
    std::vector<std::vector<int>> called(sizes.size()), updated(sizes.size());
    for (size_t b = 0; b < sizes.size(); ++b) {
      called[b].assign(sizes[b], 0);
      updated[b].assign(sizes[b], 0);
    }
    auto apply = [&](const std::vector<BatchLaunch> &launches) {
      for (const BatchLaunch &l : launches)
        for (uint32_t m = l.first; m < l.first + l.count; ++m) {
          ASSERT_GT(called[l.batch][m], updated[l.batch][m])
              << "trial " << trial << ": member " << m << " of batch "
              << l.batch << " launched before it was called";
          ++updated[l.batch][m];
        }
    };
    for (int step = 0; step < 40; ++step) {
      int32_t batch = -1;
      uint32_t member = 0;
      if (random() % 4 != 0) {
        batch = static_cast<int32_t>(random() % sizes.size());
        member = random() % 3 == 0 ? random() % sizes[batch] : 0;
      }
      // A run of the batch in order from `member`, often to its end.
      uint32_t end = batch < 0 ? member + 1
                               : (random() % 2 ? sizes[batch]
                                               : member + 1 +
                                                     random() %
                                                         (sizes[batch] - member));
      for (uint32_t m = member; m < end; ++m) {
        if (batch >= 0)
          ++called[batch][m];
        Step s = call(d, batch, m);
        ASSERT_EQ(s.absorbed, batch >= 0);
        apply(s.launches);
      }
      if (random() % 3 == 0) {
        // Another kernel: everything called so far is updated first.
        apply(call(d, -1, 0).launches);
        for (size_t b = 0; b < sizes.size(); ++b)
          for (uint32_t m = 0; m < sizes[b]; ++m)
            ASSERT_EQ(updated[b][m], called[b][m]) << "trial " << trial;
      }
    }
    apply(flush(d));
    for (size_t b = 0; b < sizes.size(); ++b)
      for (uint32_t m = 0; m < sizes[b]; ++m)
        ASSERT_EQ(updated[b][m], called[b][m]) << "trial " << trial;
  }
}

} // namespace
