//===- DataChecks.cu - ids and labels checked on the device ---------------===//
//
// The CPU kernels refuse an embedding id or a cross-entropy label outside
// the vocabulary, naming it and its position. On the GPU a kernel cannot
// return an error, so the device launches this check beside such a kernel:
// a bad value lowers one 64-bit key (atomicMin) to (order << 40 | position),
// order being the check's place in the step, and the device reads the key
// when the step synchronizes: the first failing kernel in program order and
// its first bad position, whatever order the threads ran in. A one-thread
// kernel after each check copies the bad value itself while the ids are
// still there (a later kernel may reuse their bytes before the step ends),
// when the key is that check's.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.cuh"
#include "CudaKernels.h"

using namespace tpcrt;

namespace {

__global__ void checkIdsKernel(const int64_t *ids, int64_t count,
                               int64_t bound, int64_t ignore, bool hasIgnore,
                               unsigned long long order,
                               unsigned long long *firstBad) {
  for (int64_t i = cuda::firstThread(); i < count; i += cuda::threadStride()) {
    int64_t id = ids[i];
    if (hasIgnore && id == ignore)
      continue;
    if (id < 0 || id >= bound)
      atomicMin(firstBad, (order << cuda::kDataCheckOrderShift) |
                              static_cast<unsigned long long>(i));
  }
}

/// *value = the ids' bad value, when the first failure is check `order`'s.
__global__ void recordBadValueKernel(const int64_t *ids,
                                     unsigned long long order,
                                     const unsigned long long *firstBad,
                                     int64_t *value) {
  unsigned long long key = *firstBad;
  if (key != ~0ull && (key >> cuda::kDataCheckOrderShift) == order)
    *value = ids[key & cuda::kDataCheckPositionMask];
}

} // namespace

Status cuda::checkIdsInRange(const int64_t *ids, int64_t count, int64_t bound,
                             const int64_t *ignore, uint64_t order,
                             unsigned long long *firstBad, int64_t *badValue,
                             cudaStream_t stream) {
  if (count <= 0)
    return Status::ok();
  constexpr unsigned kThreads = 256;
  TPCRT_LAUNCH(checkIdsKernel, gridFor(count, kThreads), kThreads, 0, stream,
               ids, count, bound, ignore ? *ignore : 0, ignore != nullptr,
               order, firstBad);
  if (Status s = launchStatus("check ids"); !s)
    return s;
  TPCRT_LAUNCH(recordBadValueKernel, 1, 1, 0, stream, ids, order, firstBad,
               badValue);
  return launchStatus("check ids (the bad value)");
}
