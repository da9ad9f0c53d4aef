//===- HazardTracker.h - ordering two streams by the bytes they touch -*- C++ -*-===//
//
// The CUDA device runs kernels on a compute stream and collectives and
// transfers on communication streams (collectives on one per communicator,
// transfers between stages on one per direction), so that a reduction
// overlaps the kernels after it. A collective is ordered after every
// kernel before it (its stream waits for an event recorded on the compute
// stream: cheap and always right). The other direction is by bytes: the
// tracker keeps the collectives in flight with the byte ranges they read
// and write, and a kernel about to be enqueued on the compute stream waits
// for exactly those whose ranges its own meet (it reads or writes what one
// writes, or writes what one reads) — the memory plan may hand a
// collective's buffer to another value once its wait has run, and that
// wait is this one. A wait is enqueued on the device (cudaStreamWaitEvent);
// the host never blocks here.
//
// Plain C++ with no CUDA: the device maps slots to events, and the unit test
// (runtime/test/HazardTrackerTest.cpp) drives it with a fake pair of
// streams. Nothing is allocated after construction.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_HAZARDTRACKER_H
#define TPCRT_CUDA_HAZARDTRACKER_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpcrt::cuda {

/// Bytes [begin, end) of device memory.
struct ByteRange {
  uint64_t begin = 0, end = 0;
  bool meets(const ByteRange &other) const {
    return begin < other.end && other.begin < end && begin < end &&
           other.begin < other.end;
  }
};

/// The CUDA device's event slots: collectives and transfers in flight at
/// once (tpc-compile's prediction replays the same count). A data-parallel
/// step issues a reduction per gradient during the backward; with 64 the
/// compute stream of a 24-layer model waited for old ones (Table 1's 1.7B
/// and 3.6B replayed 2% slower), with 256 as with 4096.
constexpr size_t kEventSlots = 256;

class HazardTracker {
public:
  /// The most ranges one operation reads or writes.
  static constexpr size_t kMaxRanges = 4;

  /// `capacity` operations in flight at most (each a slot: an event).
  explicit HazardTracker(size_t capacity) : entries_(capacity) {}

  size_t capacity() const { return entries_.size(); }
  size_t inFlight() const { return live_; }

  /// Records an operation enqueued on a communication stream and returns
  /// its slot, whose event the caller records after it. When every slot is
  /// in flight, the oldest is retired first: `retired` is then its slot,
  /// whose event the compute stream must wait for (else -1) — that keeps
  /// the order right, only less overlapped.
  uint32_t begin(const ByteRange *reads, size_t numReads,
                 const ByteRange *writes, size_t numWrites, int64_t &retired);

  /// For a kernel on the compute stream that reads `reads` and writes
  /// `writes`: appends to `waits` the slots of the operations in flight it
  /// must wait for (their events), which are then retired (whatever the
  /// compute stream runs later is ordered after them). `waits` is cleared
  /// first; it never grows beyond capacity() (reserve that once).
  void conflicts(const ByteRange *reads, size_t numReads,
                 const ByteRange *writes, size_t numWrites,
                 std::vector<uint32_t> &waits);

  /// For an operation about to go on another side stream (a transfer beside
  /// the collectives): the slots of the operations in flight its ranges
  /// meet, which it must wait for. Nothing retires: the compute stream has
  /// not waited for them.
  void overlapping(const ByteRange *reads, size_t numReads,
                   const ByteRange *writes, size_t numWrites,
                   std::vector<uint32_t> &waits) const;

  /// Every operation in flight (the compute stream waits for them all, e.g.
  /// before the host reads the arena or the step ends).
  void retireAll(std::vector<uint32_t> &waits);

private:
  struct Entry {
    bool live = false;
    uint64_t order = 0;
    uint32_t numReads = 0, numWrites = 0;
    ByteRange reads[kMaxRanges], writes[kMaxRanges];
  };
  static bool anyMeets(const ByteRange *a, size_t na, const ByteRange *b,
                       size_t nb) {
    for (size_t i = 0; i < na; ++i)
      for (size_t j = 0; j < nb; ++j)
        if (a[i].meets(b[j]))
          return true;
    return false;
  }

  std::vector<Entry> entries_;
  size_t live_ = 0;
  uint64_t next_ = 0;
};

inline uint32_t HazardTracker::begin(const ByteRange *reads, size_t numReads,
                                     const ByteRange *writes, size_t numWrites,
                                     int64_t &retired) {
  retired = -1;
  size_t slot = entries_.size();
  for (size_t i = 0; i < entries_.size() && slot == entries_.size(); ++i)
    if (!entries_[i].live)
      slot = i;
  if (slot == entries_.size()) {
    slot = 0;
    for (size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].order < entries_[slot].order)
        slot = i;
    retired = static_cast<int64_t>(slot);
    entries_[slot].live = false;
    --live_;
  }
  Entry &e = entries_[slot];
  e.live = true;
  e.order = next_++;
  e.numReads = static_cast<uint32_t>(numReads < kMaxRanges ? numReads
                                                           : kMaxRanges);
  e.numWrites = static_cast<uint32_t>(numWrites < kMaxRanges ? numWrites
                                                             : kMaxRanges);
  for (uint32_t i = 0; i < e.numReads; ++i)
    e.reads[i] = reads[i];
  for (uint32_t i = 0; i < e.numWrites; ++i)
    e.writes[i] = writes[i];
  ++live_;
  return static_cast<uint32_t>(slot);
}

inline void HazardTracker::conflicts(const ByteRange *reads, size_t numReads,
                                     const ByteRange *writes, size_t numWrites,
                                     std::vector<uint32_t> &waits) {
  waits.clear();
  // Stops after the last live entry: most slots are free most of the time.
  size_t unseen = live_;
  for (size_t i = 0; i < entries_.size() && unseen > 0; ++i) {
    Entry &e = entries_[i];
    if (!e.live)
      continue;
    --unseen;
    // Read after write, write after write, write after read.
    if (anyMeets(e.writes, e.numWrites, reads, numReads) ||
        anyMeets(e.writes, e.numWrites, writes, numWrites) ||
        anyMeets(e.reads, e.numReads, writes, numWrites)) {
      waits.push_back(static_cast<uint32_t>(i));
      e.live = false;
      --live_;
    }
  }
}

inline void HazardTracker::overlapping(const ByteRange *reads,
                                       size_t numReads,
                                       const ByteRange *writes,
                                       size_t numWrites,
                                       std::vector<uint32_t> &waits) const {
  waits.clear();
  size_t unseen = live_;
  for (size_t i = 0; i < entries_.size() && unseen > 0; ++i) {
    const Entry &e = entries_[i];
    if (!e.live)
      continue;
    --unseen;
    if ((anyMeets(e.writes, e.numWrites, reads, numReads) ||
         anyMeets(e.writes, e.numWrites, writes, numWrites) ||
         anyMeets(e.reads, e.numReads, writes, numWrites)))
      waits.push_back(static_cast<uint32_t>(i));
  }
}

inline void HazardTracker::retireAll(std::vector<uint32_t> &waits) {
  waits.clear();
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].live) {
      waits.push_back(static_cast<uint32_t>(i));
      entries_[i].live = false;
    }
  live_ = 0;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_HAZARDTRACKER_H
