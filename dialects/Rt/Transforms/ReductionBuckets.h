//===- ReductionBuckets.h - rt-bucket-reductions' default bucket -*- C++
//-*-===//
//
// The bytes of a run of all_reduces that rt-bucket-reductions makes by
// default, shared with tpc-plan's closed form, which prices the runs.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_REDUCTIONBUCKETS_H
#define DIALECTS_RT_TRANSFORMS_REDUCTIONBUCKETS_H

#include <cstdint>

namespace mlir::rt {

/// PyTorch DDP's default bucket: 25 MiB.
inline constexpr int64_t kReductionBucketBytes = int64_t(25) << 20;

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_REDUCTIONBUCKETS_H
