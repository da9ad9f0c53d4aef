//===- Layout.cpp - ranks on a mesh, blocks of split tensors --------------===//

#include "tpcrt/Layout.h"

#include <cstring>

namespace tpcrt {

int64_t Mesh::worldSize() const {
  int64_t size = 1;
  for (int64_t s : sizes)
    size *= s;
  return size;
}

std::vector<int64_t> Mesh::coordinates(int64_t rank) const {
  std::vector<int64_t> coords(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    coords[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return coords;
}

int64_t Mesh::rankAt(const std::vector<int64_t> &coords) const {
  int64_t rank = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    rank = rank * sizes[i] + coords[i];
  return rank;
}

int64_t Mesh::groupSize(const std::vector<uint32_t> &axes) const {
  int64_t size = 1;
  for (uint32_t a : axes)
    size *= sizes[a];
  return size;
}

int64_t Mesh::positionIn(const std::vector<int64_t> &coords,
                         const std::vector<uint32_t> &axes) const {
  int64_t position = 0;
  for (uint32_t a : axes)
    position = position * sizes[a] + coords[a];
  return position;
}

std::vector<int64_t> Mesh::groupRanks(int64_t rank,
                                      const std::vector<uint32_t> &axes) const {
  std::vector<int64_t> coords = coordinates(rank);
  int64_t count = groupSize(axes);
  std::vector<int64_t> ranks(count);
  for (int64_t position = 0; position < count; ++position) {
    // Write `position` row-major over `axes` into the coordinates.
    int64_t rest = position;
    for (size_t i = axes.size(); i-- > 0;) {
      coords[axes[i]] = rest % sizes[axes[i]];
      rest /= sizes[axes[i]];
    }
    ranks[position] = rankAt(coords);
  }
  return ranks;
}

int64_t Mesh::groupColor(int64_t rank,
                         const std::vector<uint32_t> &axes) const {
  std::vector<int64_t> coords = coordinates(rank);
  for (uint32_t a : axes)
    coords[a] = 0;
  return rankAt(coords);
}

Status Mesh::checkAxes(const std::vector<uint32_t> &axes) const {
  std::vector<bool> seen(sizes.size(), false);
  for (uint32_t a : axes) {
    if (a >= sizes.size())
      return Status::error("mesh axis " + std::to_string(a) +
                           " out of range (the mesh has " +
                           std::to_string(sizes.size()) + " axes)");
    if (seen[a])
      return Status::error("mesh axis '" + names[a] + "' named twice");
    seen[a] = true;
  }
  return Status::ok();
}

Status blockOf(const Mesh &mesh, const std::vector<int64_t> &coords,
               const std::vector<int64_t> &globalShape, const Splits &splits,
               Block &block) {
  size_t rank = globalShape.size();
  if (!splits.empty() && splits.size() != rank)
    return Status::error("splits name " + std::to_string(splits.size()) +
                         " dimensions, the tensor has " +
                         std::to_string(rank));
  block.offset.assign(rank, 0);
  block.shape = globalShape;
  std::vector<uint32_t> used;
  for (size_t d = 0; d < splits.size(); ++d) {
    if (splits[d].empty())
      continue;
    if (Status s = mesh.checkAxes(splits[d]); !s)
      return s;
    used.insert(used.end(), splits[d].begin(), splits[d].end());
    int64_t pieces = mesh.groupSize(splits[d]);
    if (globalShape[d] % pieces != 0)
      return Status::error("dimension " + std::to_string(d) + " of size " +
                           std::to_string(globalShape[d]) +
                           " is not divisible into " + std::to_string(pieces) +
                           " pieces");
    block.shape[d] = globalShape[d] / pieces;
    block.offset[d] = mesh.positionIn(coords, splits[d]) * block.shape[d];
  }
  return mesh.checkAxes(used);
}

namespace {
/// Calls copy(globalByteOffset, localByteOffset, bytes) for every contiguous
/// row of the block.
template <typename Copy>
void forEachBlockRow(const std::vector<int64_t> &globalShape,
                     const Block &block, std::size_t elementBytes, Copy copy) {
  size_t rank = globalShape.size();
  if (rank == 0) {
    copy(0, 0, elementBytes);
    return;
  }
  for (int64_t extent : block.shape)
    if (extent == 0)
      return;
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    strides[d] = strides[d + 1] * globalShape[d + 1];
  std::size_t rowBytes = block.shape[rank - 1] * elementBytes;
  std::vector<int64_t> index(rank, 0); // over the block's outer dims
  std::size_t local = 0;
  while (true) {
    int64_t element = block.offset[rank - 1];
    for (size_t d = 0; d + 1 < rank; ++d)
      element += (block.offset[d] + index[d]) * strides[d];
    copy(element * elementBytes, local, rowBytes);
    local += rowBytes;
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++index[d] < block.shape[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}
} // namespace

void extractBlock(const void *global, const std::vector<int64_t> &globalShape,
                  const Block &block, void *local, std::size_t elementBytes) {
  forEachBlockRow(globalShape, block, elementBytes,
                  [&](std::size_t g, std::size_t l, std::size_t bytes) {
                    std::memcpy(static_cast<char *>(local) + l,
                                static_cast<const char *>(global) + g, bytes);
                  });
}

void insertBlock(const void *local, const Block &block, void *global,
                 const std::vector<int64_t> &globalShape,
                 std::size_t elementBytes) {
  forEachBlockRow(globalShape, block, elementBytes,
                  [&](std::size_t g, std::size_t l, std::size_t bytes) {
                    std::memcpy(static_cast<char *>(global) + g,
                                static_cast<const char *>(local) + l, bytes);
                  });
}

} // namespace tpcrt
