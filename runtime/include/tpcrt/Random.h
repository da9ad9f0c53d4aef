//===- Random.h - counter-based random streams ------------------*- C++ -*-===//
//
// Every random number the runtime draws is a pure function of a key and a
// counter (no generator state), so a mask or an initial weight is the same
// whatever the order, the sharding or the recomputation that asks for it.
//
// Dropout (the executable contract, docs/runtime/executable-format.md): for
// the run's seed, an op's stream and the step counter, element i (row-major
// index in the op's full result tensor) is kept iff draw(i) >= threshold,
//   draw(i) = i even: splitmix64(key + i / 2) >> 40           (bits 40..63)
//             i odd:  (splitmix64(key + i / 2) >> 16) & 2^24-1 (bits 16..39)
//   key = splitmix64(seed ^ splitmix64(stream ^ splitmix64(step))),
//   threshold = llround(rate * 2^24),
// and kept elements are multiplied by float(1 / (1 - rate)): one hash draws
// two elements (the GPU's attention kernels hash for every score they drop
// or keep; a pair per hash halves that).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_RANDOM_H
#define TPCRT_RANDOM_H

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

/// Dropout draws 24 bits per element; an element is dropped when its draw is
/// below this threshold, so the drop probability is rate rounded to 2^-24.
inline uint64_t dropoutThreshold(double rate) {
  return static_cast<uint64_t>(std::llround(rate * 16777216.0));
}

/// The factor kept elements are multiplied by.
inline float dropoutScale(double rate) {
  return static_cast<float>(1.0 / (1.0 - rate));
}

/// The hash that draws element `index` (and its pair's other element).
constexpr uint64_t dropoutHash(uint64_t key, uint64_t index) {
  return splitmix64(key + (index >> 1));
}

/// Element `index`'s 24-bit draw from its hash (dropoutHash).
constexpr uint64_t dropoutDraw(uint64_t hash, uint64_t index) {
  return (index & 1) ? (hash >> 16) & 0xFFFFFFull : hash >> 40;
}

/// Whether elements 2 pair (bit 0) and 2 pair + 1 (bit 1) of the op keyed by
/// `key` are kept: the two draws of one hash.
constexpr unsigned dropoutKeepPair(uint64_t key, uint64_t pair,
                                   uint64_t threshold) {
  uint64_t hash = splitmix64(key + pair);
  return static_cast<unsigned>(dropoutDraw(hash, 0) >= threshold) |
         static_cast<unsigned>(dropoutDraw(hash, 1) >= threshold) << 1;
}

/// Whether element `index` of the op keyed by `key` is kept.
constexpr bool dropoutKeep(uint64_t key, uint64_t index, uint64_t threshold) {
  return dropoutDraw(dropoutHash(key, index), index) >= threshold;
}

/// visit(i, kept) for elements first + i, 0 <= i < count, of the op keyed by
/// `key`, in order, hashing each whole pair once.
template <typename Visit>
inline void forEachDropoutKeep(uint64_t key, uint64_t first, int64_t count,
                               uint64_t threshold, Visit &&visit) {
  int64_t i = 0;
  if (count > 0 && (first & 1)) {
    visit(int64_t(0), dropoutKeep(key, first, threshold));
    i = 1;
  }
  for (; i + 1 < count; i += 2) {
    unsigned kept = dropoutKeepPair(
        key, (first + static_cast<uint64_t>(i)) >> 1, threshold);
    visit(i, (kept & 1u) != 0);
    visit(i + 1, (kept & 2u) != 0);
  }
  if (i < count)
    visit(i, dropoutKeep(key, first + static_cast<uint64_t>(i), threshold));
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
