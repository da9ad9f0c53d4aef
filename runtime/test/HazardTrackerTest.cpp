//===- HazardTrackerTest.cpp - two streams ordered by bytes, on the CPU ---===//
//
// The CUDA device's ordering of its compute and communication streams
// (cuda/HazardTracker.h), driven here without a GPU: the cases by hand, then
// random programs replayed on fake streams (compute, and one to three for
// collectives) whose collectives finish whenever they like unless waited
// for; every kernel must see every earlier collective whose bytes it touches
// finished.
//
//===----------------------------------------------------------------------===//

#include "HazardTracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

using tpcrt::cuda::ByteRange;
using tpcrt::cuda::HazardTracker;

namespace {

std::vector<uint32_t> conflictsOf(HazardTracker &t, std::vector<ByteRange> r,
                                  std::vector<ByteRange> w) {
  std::vector<uint32_t> waits;
  t.conflicts(r.data(), r.size(), w.data(), w.size(), waits);
  return waits;
}

uint32_t begin(HazardTracker &t, std::vector<ByteRange> r,
               std::vector<ByteRange> w, int64_t *retired = nullptr) {
  int64_t dropped = -1;
  uint32_t slot = t.begin(r.data(), r.size(), w.data(), w.size(), dropped);
  if (retired)
    *retired = dropped;
  return slot;
}

TEST(HazardTrackerTest, ReadAfterWriteWaits) {
  HazardTracker t(4);
  uint32_t slot = begin(t, {{0, 100}}, {{0, 100}}); // in-place all_reduce
  EXPECT_EQ(conflictsOf(t, {{50, 60}}, {{200, 300}}),
            std::vector<uint32_t>{slot});
  EXPECT_EQ(t.inFlight(), 0u);
}

TEST(HazardTrackerTest, WriteAfterReadWaits) {
  HazardTracker t(4);
  uint32_t slot = begin(t, {{0, 100}}, {{100, 200}}); // reads 0..100
  EXPECT_EQ(conflictsOf(t, {}, {{99, 101}}), std::vector<uint32_t>{slot});
}

TEST(HazardTrackerTest, WriteAfterWriteWaits) {
  HazardTracker t(4);
  uint32_t slot = begin(t, {}, {{100, 200}});
  EXPECT_EQ(conflictsOf(t, {}, {{150, 160}}), std::vector<uint32_t>{slot});
}

TEST(HazardTrackerTest, ReadAfterReadAndDisjointBytesDoNotWait) {
  HazardTracker t(4);
  begin(t, {{0, 100}}, {{100, 200}});
  // Reads what it reads; touches neither end's neighbours.
  EXPECT_TRUE(conflictsOf(t, {{0, 100}, {200, 300}}, {{300, 400}}).empty());
  // Adjacent ranges share no byte.
  EXPECT_TRUE(conflictsOf(t, {{200, 201}}, {{250, 260}}).empty());
  // An empty range meets nothing.
  EXPECT_TRUE(conflictsOf(t, {{150, 150}}, {{150, 150}}).empty());
  EXPECT_EQ(t.inFlight(), 1u);
}

TEST(HazardTrackerTest, OnlyTheMeetingOperationsRetire) {
  HazardTracker t(4);
  uint32_t a = begin(t, {{0, 10}}, {{0, 10}});
  uint32_t b = begin(t, {{20, 30}}, {{20, 30}});
  uint32_t c = begin(t, {{40, 50}}, {{40, 50}});
  EXPECT_EQ(conflictsOf(t, {{5, 6}, {45, 46}}, {}),
            (std::vector<uint32_t>{a, c}));
  EXPECT_EQ(t.inFlight(), 1u);
  EXPECT_EQ(conflictsOf(t, {}, {{25, 26}}), std::vector<uint32_t>{b});
  // Retired: the slot is free again and nothing waits twice.
  EXPECT_TRUE(conflictsOf(t, {{0, 100}}, {{0, 100}}).empty());
}

TEST(HazardTrackerTest, FullRetiresTheOldestFirst) {
  HazardTracker t(2);
  int64_t retired = 0;
  uint32_t a = begin(t, {}, {{0, 10}}, &retired);
  EXPECT_EQ(retired, -1);
  begin(t, {}, {{10, 20}}, &retired);
  EXPECT_EQ(retired, -1);
  uint32_t c = begin(t, {}, {{20, 30}}, &retired);
  EXPECT_EQ(retired, static_cast<int64_t>(a));
  EXPECT_EQ(c, a); // the oldest's slot, reused
  EXPECT_EQ(t.inFlight(), 2u);
  // The retired one no longer asks for a wait: the compute stream waited.
  EXPECT_TRUE(conflictsOf(t, {{0, 10}}, {}).empty());
}

// A side stream's operation waits for what its bytes meet; the compute
// stream has not waited, so nothing retires.
TEST(HazardTrackerTest, OverlappingRetiresNothing) {
  HazardTracker t(4);
  uint32_t recv = begin(t, {}, {{0, 100}});
  uint32_t other = begin(t, {{200, 300}}, {{300, 400}});
  std::vector<uint32_t> waits;
  ByteRange read{50, 60};
  t.overlapping(&read, 1, nullptr, 0, waits);
  EXPECT_EQ(waits, std::vector<uint32_t>{recv});
  ByteRange write{250, 260};
  t.overlapping(nullptr, 0, &write, 1, waits);
  EXPECT_EQ(waits, std::vector<uint32_t>{other});
  EXPECT_EQ(t.inFlight(), 2u);
  // The compute stream still waits for both when it touches them.
  EXPECT_EQ(conflictsOf(t, {{0, 100}}, {}), (std::vector<uint32_t>{recv}));
  EXPECT_EQ(conflictsOf(t, {}, {{200, 260}}), (std::vector<uint32_t>{other}));
}

TEST(HazardTrackerTest, RetireAllEmptiesIt) {
  HazardTracker t(3);
  begin(t, {}, {{0, 10}});
  begin(t, {}, {{10, 20}});
  std::vector<uint32_t> waits;
  t.retireAll(waits);
  EXPECT_EQ(waits.size(), 2u);
  EXPECT_EQ(t.inFlight(), 0u);
  t.retireAll(waits);
  EXPECT_TRUE(waits.empty());
}

/// Random programs on the device's streams: collectives on one to three
/// streams (one per communicator), each FIFO, that finish whenever they
/// like unless something waited for them; a collective's stream waits
/// for the compute stream's position (orderAfterCompute) and for the
/// collectives in flight on other streams whose bytes it meets
/// (`overlapping`, orderAfterOthers); the compute stream waits for what
/// `conflicts` returns and for the slot `begin` retires. Orders are vector
/// clocks over the streams: a clock's entry s counts the collectives of
/// stream s something is ordered after. Checked: no kernel meets a
/// collective it is not ordered after, and no collective meets one of
/// another stream it is not ordered after (write against read or write).
TEST(HazardTrackerTest, RandomProgramsNeverRace) {
  std::mt19937_64 random(20261204);
  for (int program = 0; program < 600; ++program) {
    size_t capacity = 1 + random() % 6;
    size_t streams = 1 + random() % 3;
    HazardTracker t(capacity);
    using Clock = std::vector<int64_t>;
    auto join = [](Clock &into, const Clock &other) {
      for (size_t s = 0; s < into.size(); ++s)
        into[s] = std::max(into[s], other[s]);
    };
    struct Collective {
      ByteRange read, write;
      size_t stream;
      int64_t index; // its position on its stream
      Clock clock;   // what it is ordered after, itself included
    };
    std::vector<Collective> collectives;
    std::vector<int64_t> slotCollective(capacity, -1);
    Clock compute(streams, 0);
    std::vector<Clock> streamClock(streams, Clock(streams, 0));
    auto ordered = [](const Clock &clock, const Collective &c) {
      return c.index < clock[c.stream];
    };
    auto range = [&] {
      uint64_t begin = random() % 64;
      return ByteRange{begin, begin + 1 + random() % 16};
    };
    std::vector<uint32_t> waits;
    for (int step = 0; step < 200; ++step) {
      if (random() % 3 == 0) {
        Collective c{range(), range(), random() % streams, 0, {}};
        c.index = streamClock[c.stream][c.stream];
        c.clock = streamClock[c.stream];
        join(c.clock, compute);
        t.overlapping(&c.read, 1, &c.write, 1, waits);
        for (uint32_t slot : waits)
          join(c.clock, collectives[slotCollective[slot]].clock);
        for (const Collective &other : collectives) {
          bool meets = other.write.meets(c.read) ||
                       other.write.meets(c.write) || other.read.meets(c.write);
          ASSERT_FALSE(meets && other.stream != c.stream &&
                       !ordered(c.clock, other))
              << "program " << program << ", step " << step
              << ": two collectives race";
        }
        c.clock[c.stream] = c.index + 1;
        streamClock[c.stream] = c.clock;
        int64_t retired = -1;
        uint32_t slot = t.begin(&c.read, 1, &c.write, 1, retired);
        if (retired >= 0)
          join(compute, collectives[slotCollective[retired]].clock);
        slotCollective[slot] = static_cast<int64_t>(collectives.size());
        collectives.push_back(c);
        continue;
      }
      ByteRange reads[2] = {range(), range()};
      ByteRange writes[1] = {range()};
      t.conflicts(reads, 2, writes, 1, waits);
      for (uint32_t slot : waits)
        join(compute, collectives[slotCollective[slot]].clock);
      for (size_t i = 0; i < collectives.size(); ++i) {
        const Collective &c = collectives[i];
        bool meets = c.write.meets(reads[0]) || c.write.meets(reads[1]) ||
                     c.write.meets(writes[0]) || c.read.meets(writes[0]);
        ASSERT_FALSE(meets && !ordered(compute, c))
            << "program " << program << ", step " << step
            << ": a kernel races collective " << i << " on stream " << c.stream;
      }
      ASSERT_LE(t.inFlight(), capacity);
    }
  }
}

} // namespace
