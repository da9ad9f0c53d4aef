//===- Shape.h - tensor shapes: counts, text, the rank limit ----*- C++ -*-===//
//
// What the executable's checks, the safetensors reader and the kernels share
// about shapes. Plain C++ with no schema: the safetensors side includes it
// too.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_SHAPE_H
#define TPCRT_SHAPE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// The highest rank a kernel accepts where it indexes dimensions (transpose,
/// slice, repeat, pad, sum_groups, the collectives along a dimension, the
/// splits of dropout kernels): the decoder refuses more, and the CPU kernels
/// size their index arrays with it.
constexpr int kMaxRank = 8;

/// Number of elements of `shape`; false when a dimension is negative or the
/// product does not fit an int64 (a scalar, shape [], has one element).
bool numElementsOf(const std::vector<int64_t> &shape, int64_t &count);

/// A tensor viewed around dimension `dim` as [outer, extent, inner]: the
/// collectives along a dimension and the layout kernels cut it so.
struct AroundDim {
  int64_t outer = 1, extent = 1, inner = 1;
};
inline AroundDim aroundDim(const std::vector<int64_t> &shape, int64_t dim) {
  AroundDim v;
  v.extent = shape[dim];
  for (int64_t d = 0; d < dim; ++d)
    v.outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    v.inner *= shape[d];
  return v;
}

/// A shape as text, e.g. "[2, 3]" ("[]" for a scalar), for messages.
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace tpcrt

#endif // TPCRT_SHAPE_H
