//===- InFlight.cpp - a stage's collectives in flight, for the replay ----===//

#include "lib/Analysis/InFlight.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::tpc::stream;

int64_t InFlight::waitFor(int64_t position, uint8_t stream) {
  auto [it, inserted] = waitedUpTo.try_emplace(stream, position);
  if (!inserted) {
    if (position <= it->second)
      return -1;
    it->second = position;
  }
  return position;
}

int64_t InFlight::start(int64_t position, uint8_t stream,
                        ArrayRef<ByteRange> reads, ArrayRef<ByteRange> writes) {
  int64_t retired = -1;
  uint32_t slot = tracker.begin(reads.data(), reads.size(), writes.data(),
                                writes.size(), retired);
  int64_t wait =
      retired >= 0 ? waitFor(positionOf[retired], streamOf[retired]) : -1;
  positionOf[slot] = position;
  streamOf[slot] = stream;
  return wait;
}

void InFlight::conflicts(ArrayRef<ByteRange> reads, ArrayRef<ByteRange> writes,
                         SmallVectorImpl<int64_t> &waits) {
  tracker.conflicts(reads.data(), reads.size(), writes.data(), writes.size(),
                    slots);
  // The last met on each stream.
  llvm::SmallDenseMap<uint8_t, int64_t, 4> last;
  for (uint32_t slot : slots) {
    auto [it, inserted] = last.try_emplace(streamOf[slot], positionOf[slot]);
    if (!inserted)
      it->second = std::max(it->second, positionOf[slot]);
  }
  size_t first = waits.size();
  for (auto [stream, position] : last)
    if (int64_t wait = waitFor(position, stream); wait >= 0)
      waits.push_back(wait);
  // In position order, as the device enqueues them (the replay's time is
  // the same in any order).
  llvm::sort(waits.begin() + first, waits.end());
}
