//===- Random.h - counter-based random streams ------------------*- C++ -*-===//
//
// Every random number the runtime draws is a pure function of a key and a
// counter (no generator state), so a mask or an initial weight is the same
// whatever the order, the sharding or the recomputation that asks for it.
//
// Dropout (the executable contract, docs/runtime/executable-format.md): for
// the run's seed, an op's stream and the step counter, element i (row-major
// index in the op's full result tensor) is kept iff draw(i) >= threshold,
//   draw(i)    = (splitmix64(key + counter(i)) >> (48 - 16 field(i))) & 2^16-1
//   counter(i) = 4 (i / 16) + (i % 8) / 2
//   field(i)   = 2 ((i / 8) % 2) + i % 2
//   key = splitmix64(seed ^ splitmix64(stream ^ splitmix64(step))),
//   threshold = llround(rate * 2^16),
// and kept elements are multiplied by float(1 / (1 - rate)): one hash draws
// four elements, i, i + 1, i + 8 and i + 9 of a block of 16 (i even, i % 16
// < 8), the four a GPU thread holds of one row in the tensor cores'
// accumulator layouts (two neighbours in each of two 8-column tiles), so
// that the attention kernels, which hash for every score they drop or
// keep, hash once for four (docs/runtime/cuda.md).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_RANDOM_H
#define TPCRT_RANDOM_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace tpcrt {

/// SplitMix64's increment, the golden gamma (2^64 / phi, odd).
constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

/// SplitMix64's two xor-shift-multiply rounds, without the final xor-shift
/// (the GPU's dropout draws read their bits from this: CudaCommon.cuh).
constexpr uint64_t splitmix64Rounds(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  return (z ^ (z >> 27)) * 0x94D049BB133111EBull;
}

/// Steele, Lea and Flood's SplitMix64 finalizer of x + golden gamma.
constexpr uint64_t splitmix64(uint64_t x) {
  uint64_t z = splitmix64Rounds(x + kSplitMix64Gamma);
  return z ^ (z >> 31);
}

/// The dropout key of one op (stream) at one step.
constexpr uint64_t dropoutKey(uint64_t seed, uint64_t stream, uint64_t step) {
  return splitmix64(seed ^ splitmix64(stream ^ splitmix64(step)));
}

/// Dropout draws 16 bits per element; an element is dropped when its draw is
/// below this threshold, so the drop probability is rate rounded to 2^-16.
inline uint64_t dropoutThreshold(double rate) {
  return static_cast<uint64_t>(std::llround(rate * 65536.0));
}

/// The factor kept elements are multiplied by.
inline float dropoutScale(double rate) {
  return static_cast<float>(1.0 / (1.0 - rate));
}

/// The counter of the hash that draws element `index`, and three more.
constexpr uint64_t dropoutCounter(uint64_t index) {
  return (index >> 4 << 2) + ((index >> 1) & 3);
}

/// Which of its hash's four draws is element `index`'s (0 the high 16 bits).
constexpr unsigned dropoutField(uint64_t index) {
  return static_cast<unsigned>((index >> 3 & 1) << 1 | (index & 1));
}

/// Draw `field` (0..3) of a hash: its bits 48 - 16 field .. 63 - 16 field.
constexpr uint64_t dropoutDraw(uint64_t hash, unsigned field) {
  return hash >> (48 - 16 * field) & 0xFFFFull;
}

/// Whether the four elements of the op keyed by `key` that counter
/// `counter` draws are kept: bit f for field f.
constexpr unsigned dropoutKeepQuad(uint64_t key, uint64_t counter,
                                   uint64_t threshold) {
  uint64_t hash = splitmix64(key + counter);
  unsigned kept = 0;
  for (unsigned field = 0; field < 4; ++field)
    kept |= static_cast<unsigned>(dropoutDraw(hash, field) >= threshold)
            << field;
  return kept;
}

/// Whether element `index` of the op keyed by `key` is kept.
constexpr bool dropoutKeep(uint64_t key, uint64_t index, uint64_t threshold) {
  return dropoutDraw(splitmix64(key + dropoutCounter(index)),
                     dropoutField(index)) >= threshold;
}

/// visit(i, kept) for elements first + i, 0 <= i < count, of the op keyed by
/// `key`, in order, hashing each counter once: the four hashes of each
/// block of 16 elements the range touches.
template <typename Visit>
inline void forEachDropoutKeep(uint64_t key, uint64_t first, int64_t count,
                               uint64_t threshold, Visit &&visit) {
  int64_t i = 0;
  while (i < count) {
    const uint64_t index = first + static_cast<uint64_t>(i);
    const uint64_t block = index & ~uint64_t(15);
    unsigned kept[4];
    for (uint64_t c = 0; c < 4; ++c)
      kept[c] = dropoutKeepQuad(key, dropoutCounter(block) + c, threshold);
    // The block's elements from `index` on, within the range.
    const int64_t end =
        std::min<int64_t>(count, i + static_cast<int64_t>(block + 16 - index));
    for (; i < end; ++i) {
      const uint64_t n = first + static_cast<uint64_t>(i);
      visit(i, ((kept[(n >> 1) & 3] >> dropoutField(n)) & 1u) != 0);
    }
  }
}

/// FNV-1a of a name: keys a parameter's or an input's stream by its name, so
/// that adding a parameter does not change the values of the others.
inline uint64_t hashName(const std::string &name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

/// The key of the stream called `name` under `seed` (--init-seed,
/// --synthetic-seed).
inline uint64_t namedStreamKey(uint64_t seed, const std::string &name) {
  return splitmix64(seed ^ splitmix64(hashName(name)));
}

/// A double uniform in (0, 1] from 53 bits of draw i of `key`.
inline double uniformOpenClosed(uint64_t key, uint64_t i) {
  return static_cast<double>((splitmix64(key + i) >> 11) + 1) * 0x1.0p-53;
}

/// Standard normal value i of `key` (Box-Muller on draws 2i and 2i + 1).
inline double standardNormal(uint64_t key, uint64_t i) {
  double u1 = uniformOpenClosed(key, 2 * i);
  double u2 = uniformOpenClosed(key, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) *
         std::cos(6.283185307179586476925 * u2);
}

/// Value i of `key`, uniform in [0, bound) (bound > 0): the high 64 bits of a
/// 128-bit product, which is unbiased enough for bounds far below 2^64.
inline int64_t uniformBelow(uint64_t key, uint64_t i, uint64_t bound) {
  unsigned __int128 product =
      static_cast<unsigned __int128>(splitmix64(key + i)) * bound;
  return static_cast<int64_t>(product >> 64);
}

} // namespace tpcrt

#endif // TPCRT_RANDOM_H
