//===- InFlight.h - a stage's collectives in flight, for the replay -*- C++
//-*-===//
//
// The CUDA device's compute stream waits only for the collectives in flight
// whose bytes a kernel's own meet (runtime/cuda/HazardTracker.h, plain
// C++). The replay of such a device (PlanSimulation.cpp) holds the same
// tracker per stage, so that it waits where the device does. No MLIR: the
// unit tests use it alone.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_LIB_ANALYSIS_INFLIGHT_H
#define TPC_LIB_ANALYSIS_INFLIGHT_H

#include "runtime/cuda/HazardTracker.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace mlir::tpc::stream {

using ByteRange = tpcrt::cuda::ByteRange;
using llvm::ArrayRef;
using llvm::SmallVectorImpl;

/// One stage's collectives in flight (issued, not yet waited for by the
/// compute stream), by their position in the stage's replayed op list.
class InFlight {
public:
  /// Records the collective at `position`, on communication stream
  /// `stream`. Returns the position of one the compute stream must wait
  /// for first (the device retires the oldest in flight when every event
  /// slot is taken), or -1.
  int64_t start(int64_t position, uint8_t stream, ArrayRef<ByteRange> reads,
                ArrayRef<ByteRange> writes);
  /// A kernel that reads `reads` and writes `writes`: appends to `waits`
  /// the positions of the in-flight collectives it must wait for (all it
  /// meets retire), the last it meets on each stream, but where a wait on
  /// that stream already covers it (a stream runs its collectives in
  /// order; streams run beside each other).
  void conflicts(ArrayRef<ByteRange> reads, ArrayRef<ByteRange> writes,
                 SmallVectorImpl<int64_t> &waits);

private:
  /// A wait on `position` of `stream`, or -1 when an earlier wait covers
  /// it.
  int64_t waitFor(int64_t position, uint8_t stream);

  tpcrt::cuda::HazardTracker tracker{tpcrt::cuda::kEventSlots};
  int64_t positionOf[tpcrt::cuda::kEventSlots] = {};
  uint8_t streamOf[tpcrt::cuda::kEventSlots] = {};
  std::vector<uint32_t> slots;
  /// Per stream: the last position waited for.
  llvm::SmallDenseMap<uint8_t, int64_t, 4> waitedUpTo;
};

} // namespace mlir::tpc::stream

#endif // TPC_LIB_ANALYSIS_INFLIGHT_H
