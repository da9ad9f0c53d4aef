//===- Layout.h - ranks on a mesh, blocks of split tensors ------*- C++ -*-===//
//
// The arithmetic of distributed executables (schema/tpcx.fbs, MeshAxis and
// DimSplit): a rank's coordinates on the mesh, the group of a collective over
// some axes and a rank's position in it, and the block of a split tensor that
// a rank holds, with copies between a whole tensor and a block.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_LAYOUT_H
#define TPCRT_LAYOUT_H

#include "tpcrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tpcrt {

/// A device mesh: named axes with sizes; no axes is one rank.
struct Mesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;

  int64_t worldSize() const;
  /// The rank's coordinates, row-major over the axes (last fastest).
  std::vector<int64_t> coordinates(int64_t rank) const;
  /// The rank at `coords`.
  int64_t rankAt(const std::vector<int64_t> &coords) const;
  /// The product of the sizes of `axes`.
  int64_t groupSize(const std::vector<uint32_t> &axes) const;
  /// The position of the rank at `coords` in its group over `axes`: its
  /// coordinates on `axes`, row-major in the order given.
  int64_t positionIn(const std::vector<int64_t> &coords,
                     const std::vector<uint32_t> &axes) const;
  /// The ranks of the group over `axes` that `rank` belongs to, in position
  /// order.
  std::vector<int64_t> groupRanks(int64_t rank,
                                  const std::vector<uint32_t> &axes) const;
  /// A number shared by exactly the ranks of one group over `axes` (the
  /// rank with the coordinates on `axes` set to zero): the `color` of
  /// Communicator::split.
  int64_t groupColor(int64_t rank, const std::vector<uint32_t> &axes) const;
  /// An error unless every axis index is in range and none repeats.
  Status checkAxes(const std::vector<uint32_t> &axes) const;
};

/// How each dimension of a tensor is split: the mesh axes, major first.
using Splits = std::vector<std::vector<uint32_t>>;

/// The block of a split tensor that one rank holds.
struct Block {
  std::vector<int64_t> offset; ///< per dimension, in the global tensor
  std::vector<int64_t> shape;  ///< per dimension, the local extent
};

/// The block that the rank at `coords` holds of a tensor of `globalShape`
/// split by `splits` (empty: not split). An error when a split dimension is
/// not divisible by its group size or the axes are bad.
Status blockOf(const Mesh &mesh, const std::vector<int64_t> &coords,
               const std::vector<int64_t> &globalShape, const Splits &splits,
               Block &block);

/// Copies `block` out of a whole row-major tensor of `globalShape` into a
/// dense row-major `local` buffer (elementBytes per element).
void extractBlock(const void *global, const std::vector<int64_t> &globalShape,
                  const Block &block, void *local, std::size_t elementBytes);
/// The inverse: writes a dense `local` block into the whole tensor.
void insertBlock(const void *local, const Block &block, void *global,
                 const std::vector<int64_t> &globalShape,
                 std::size_t elementBytes);

} // namespace tpcrt

#endif // TPCRT_LAYOUT_H
