//===- CollectiveStream.h - a rank's collectives beside its kernels -*- C++
//-*-===//
//
// The CUDA device runs each collective on a communication stream, after the
// kernels before it, and a later kernel waits only for the collectives in
// flight whose bytes its own meet: it reads or writes what one writes, or
// writes what one reads. For the replay of such a device
// (PlanSimulation.cpp): where each buffer lies in the arena (Footprints)
// and which bytes collectives touch; one stage's collectives in flight are
// InFlight.h's.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_LIB_ANALYSIS_COLLECTIVESTREAM_H
#define TPC_LIB_ANALYSIS_COLLECTIVESTREAM_H

#include "dialects/Rt/IR/RtOps.h"
#include "lib/Analysis/InFlight.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::tpc::stream {

/// Where the program's buffers lie: arena offsets as the memory plan gave
/// them; a buffer without one gets bytes of its own past the arena.
class Footprints {
public:
  explicit Footprints(rt::ProgramOp program);

  /// The bytes `buffer` occupies in an action of `slot` (a pooled alloc's
  /// copy of that slot).
  ByteRange of(Value buffer, int64_t slot) { return span(buffer, slot); }
  /// The bytes it occupies over all its copies.
  ByteRange extent(Value buffer) { return span(buffer, std::nullopt); }

private:
  ByteRange span(Value buffer, std::optional<int64_t> slot);

  /// Each pool's slots and stride (0 before the memory plan).
  SmallVector<std::pair<int64_t, int64_t>> pools;
  /// Buffers without an offset, and where their own bytes begin.
  DenseMap<Value, uint64_t> unplanned;
  uint64_t nextUnplanned = uint64_t(1) << 62;
};

/// The bytes any collective of a program touches, so that only the kernels
/// that meet them look for one in flight.
class CollectiveBytes {
public:
  void add(const ByteRange &range) { ranges.push_back(range); }
  /// Call once after the last add.
  void seal();
  bool meets(const ByteRange &range) const;

private:
  /// Sorted, overlapping ones merged.
  SmallVector<ByteRange, 0> ranges;
};

} // namespace mlir::tpc::stream

#endif // TPC_LIB_ANALYSIS_COLLECTIVESTREAM_H
