//===- device_radix_sort.cuh - CUB's radix sort, emulated on the host -----===//
//
// cub::DeviceRadixSort::SortPairs over DoubleBuffers, for the emulated CUDA
// backend (../../cuda_runtime_api.h): a stable sort by the keys' bits
// [beginBit, endBit) (other bits are not compared, as CUB's), the sorted
// pairs written to the alternate buffers and the selectors flipped, so that
// a caller that reads the buffer it gave instead of Current() reads the
// unsorted keys. The temporary storage asked for is checked.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_EMULATION_CUB_DEVICE_RADIX_SORT_CUH
#define TPCRT_TEST_EMULATION_CUB_DEVICE_RADIX_SORT_CUH

#include "../../cuda_runtime_api.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace cub {

template <typename T> struct DoubleBuffer {
  T *d_buffers[2] = {nullptr, nullptr};
  int selector = 0;
  DoubleBuffer() = default;
  DoubleBuffer(T *current, T *alternate) : d_buffers{current, alternate} {}
  T *Current() { return d_buffers[selector]; }
  T *Alternate() { return d_buffers[selector ^ 1]; }
};

struct DeviceRadixSort {
  /// Bytes of temporary storage a sort asks for (some: a caller that
  /// passes fewer is refused).
  static constexpr size_t kTempBytes = 512;

  template <typename Key, typename Value, typename Count>
  static cudaError_t
  SortPairs(void *temp, size_t &tempBytes, DoubleBuffer<Key> &keys,
            DoubleBuffer<Value> &values, Count count, int beginBit = 0,
            int endBit = sizeof(Key) * 8, cudaStream_t stream = nullptr) {
    tpcrt::emu::Internal internal;
    if (!temp) {
      tempBytes = kTempBytes;
      return cudaSuccess;
    }
    if (tempBytes < kTempBytes || beginBit < 0 || endBit < beginBit ||
        endBit > int(sizeof(Key) * 8))
      return cudaErrorInvalidValue;
    const auto n = static_cast<size_t>(count);
    if (n == 0)
      return cudaSuccess;
    if (!tpcrt::emu::isDeviceRange(temp, tempBytes))
      return cudaErrorInvalidValue;
    for (void *p : {static_cast<void *>(keys.Current()),
                    static_cast<void *>(keys.Alternate())})
      if (!tpcrt::emu::isDeviceRange(p, n * sizeof(Key)))
        return cudaErrorInvalidValue;
    for (void *p : {static_cast<void *>(values.Current()),
                    static_cast<void *>(values.Alternate())})
      if (!tpcrt::emu::isDeviceRange(p, n * sizeof(Value)))
        return cudaErrorInvalidValue;
    const int bits = endBit - beginBit;
    const uint64_t mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    const Key *inKeys = keys.Current();
    const Value *inValues = values.Current();
    Key *outKeys = keys.Alternate();
    Value *outValues = values.Alternate();
    // In stream order (the keys are written by a kernel before it).
    tpcrt::emu::enqueueWork(stream, [=] {
      auto digit = [&](Key k) {
        return (static_cast<uint64_t>(k) >> beginBit) & mask;
      };
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t(0));
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return digit(inKeys[a]) < digit(inKeys[b]);
      });
      for (size_t i = 0; i < n; ++i) {
        outKeys[i] = inKeys[order[i]];
        outValues[i] = inValues[order[i]];
      }
    });
    keys.selector ^= 1;
    values.selector ^= 1;
    return cudaSuccess;
  }
};

} // namespace cub

#endif // TPCRT_TEST_EMULATION_CUB_DEVICE_RADIX_SORT_CUH
