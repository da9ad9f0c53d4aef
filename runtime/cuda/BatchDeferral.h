//===- BatchDeferral.h - several kernel calls as one launch -------*- C++ -*-===//
//
// The CUDA device runs a run of adamw_update calls (the parameters, one
// after the other, with the same scalars) as one multi-tensor launch. The
// interpreter still calls the kernels one by one, so the device defers each
// member of such a batch and launches what it deferred at the batch's last
// member, or as soon as anything else is called first (another kernel, a
// member out of order, the step's end): the launches then hold exactly the
// members called, each once, and none runs later than the next other kernel
// — the order the program asks for. Plain C++ (runtime/test/
// BatchDeferralTest.cpp drives it without a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_BATCHDEFERRAL_H
#define TPCRT_CUDA_BATCHDEFERRAL_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpcrt::cuda {

/// Members [first, first + count) of batch `batch`, in one launch.
struct BatchLaunch {
  int32_t batch = -1;
  uint32_t first = 0, count = 0;
};

class BatchDeferral {
public:
  /// At most two launches follow one call.
  static constexpr size_t kMostLaunches = 2;

  /// Batch b has sizes[b] members.
  explicit BatchDeferral(std::vector<uint32_t> sizes = {})
      : sizes_(std::move(sizes)) {}

  /// A kernel is called: member `member` of batch `batch`, or batch -1 for
  /// any other kernel. Writes the launches to make now, in order, to
  /// `launches` (their number to `count`) and returns whether the kernel is
  /// absorbed (a member: its work is in a launch, made or deferred) rather
  /// than to be run by the caller after them.
  bool call(int32_t batch, uint32_t member, BatchLaunch *launches,
            size_t &count) {
    count = 0;
    bool continues = batch >= 0 && batch == pending_ && member == deferred_;
    if (!continues)
      flushInto(launches, count);
    if (batch < 0)
      return false;
    if (member == 0 && pending_ < 0) {
      pending_ = batch;
      deferred_ = 0;
    }
    if (batch == pending_ && member == deferred_) {
      if (++deferred_ == sizes_[batch])
        flushInto(launches, count);
      return true;
    }
    // A member called alone (the ones before it did not just run).
    launches[count++] = {batch, member, 1};
    return true;
  }

  /// The deferred members, launched now (e.g. at the step's end).
  void flush(BatchLaunch *launches, size_t &count) {
    count = 0;
    flushInto(launches, count);
  }

private:
  void flushInto(BatchLaunch *launches, size_t &count) {
    if (pending_ >= 0 && deferred_ > 0)
      launches[count++] = {pending_, 0, deferred_};
    pending_ = -1;
    deferred_ = 0;
  }

  std::vector<uint32_t> sizes_;
  int32_t pending_ = -1;
  uint32_t deferred_ = 0;
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_BATCHDEFERRAL_H
