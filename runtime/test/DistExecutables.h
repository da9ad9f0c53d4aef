//===- DistExecutables.h - distributed executables in tests --*- C++ -*-===//
//
// What the distributed tests add to TestExecutables.h: a mesh, splits on
// params, inputs and kernels, and an independent account of a rank's place
// on the mesh (coordinates, group members, blocks) that the tests compute
// expected values with, written without the runtime's Layout.h.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_DISTEXECUTABLES_H
#define TPCRT_TEST_DISTEXECUTABLES_H

#include "TestExecutables.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpcrt {
namespace test {

/// Per dimension, the mesh axes (indices) splitting it.
using TestSplits = std::vector<std::vector<uint32_t>>;

inline std::vector<std::unique_ptr<fb::DimSplitT>>
makeSplits(const TestSplits &splits) {
  std::vector<std::unique_ptr<fb::DimSplitT>> list;
  for (const std::vector<uint32_t> &axes : splits) {
    list.push_back(std::make_unique<fb::DimSplitT>());
    list.back()->axes = axes;
  }
  return list;
}

/// Axes by name and size, e.g. {{"dp", 2}, {"tp", 2}}.
using TestMesh = std::vector<std::pair<std::string, int64_t>>;

inline void setMesh(fb::ExecutableT &exe, const TestMesh &mesh) {
  exe.mesh.clear();
  for (const auto &[name, size] : mesh) {
    exe.mesh.push_back(std::make_unique<fb::MeshAxisT>());
    exe.mesh.back()->name = name;
    exe.mesh.back()->size = size;
  }
}

/// A rank's place on a mesh, computed the way the contract words it: its
/// coordinates are the rank written row-major over the axes.
struct Place {
  std::vector<int64_t> sizes;
  std::vector<int64_t> coords;

  Place(const TestMesh &mesh, int64_t rank) {
    for (const auto &axis : mesh)
      sizes.push_back(axis.second);
    coords.assign(sizes.size(), 0);
    for (size_t i = sizes.size(); i-- > 0; rank /= sizes[i])
      coords[i] = rank % sizes[i];
  }
  int64_t rankOf(const std::vector<int64_t> &c) const {
    int64_t r = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      r = r * sizes[i] + c[i];
    return r;
  }
  int64_t groupSize(const std::vector<uint32_t> &axes) const {
    int64_t g = 1;
    for (uint32_t a : axes)
      g *= sizes[a];
    return g;
  }
  int64_t position(const std::vector<uint32_t> &axes) const {
    int64_t p = 0;
    for (uint32_t a : axes)
      p = p * sizes[a] + coords[a];
    return p;
  }
  /// The ranks agreeing with this one off `axes`, by position.
  std::vector<int64_t> members(const std::vector<uint32_t> &axes) const {
    std::vector<int64_t> ranks;
    for (int64_t p = 0, g = groupSize(axes); p < g; ++p) {
      std::vector<int64_t> c = coords;
      int64_t rest = p;
      for (size_t i = axes.size(); i-- > 0; rest /= sizes[axes[i]])
        c[axes[i]] = rest % sizes[axes[i]];
      ranks.push_back(rankOf(c));
    }
    return ranks;
  }
  /// The offset and extent of this rank's block of dimension `global`
  /// split by `axes`.
  std::pair<int64_t, int64_t> block(int64_t global,
                                    const std::vector<uint32_t> &axes) const {
    int64_t extent = global / groupSize(axes);
    return {position(axes) * extent, extent};
  }
};

/// Row-major element count and multi-index helpers.
inline int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
inline std::vector<int64_t> unflatten(int64_t i,
                                      const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0; i /= shape[d])
    index[d] = i % shape[d];
  return index;
}
inline int64_t flatten(const std::vector<int64_t> &index,
                       const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + index[d];
  return i;
}

/// This rank's block of a whole row-major tensor split by `splits`.
template <typename T>
std::vector<T> blockOfWhole(const std::vector<T> &whole,
                            const std::vector<int64_t> &shape,
                            const TestSplits &splits, const Place &place) {
  std::vector<int64_t> local = shape, offset(shape.size(), 0);
  for (size_t d = 0; d < splits.size(); ++d) {
    auto [o, e] = place.block(shape[d], splits[d]);
    offset[d] = o;
    local[d] = e;
  }
  std::vector<T> out(elementsOf(local));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    std::vector<int64_t> index = unflatten(i, local);
    for (size_t d = 0; d < index.size(); ++d)
      index[d] += offset[d];
    out[i] = whole[flatten(index, shape)];
  }
  return out;
}

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_DISTEXECUTABLES_H
