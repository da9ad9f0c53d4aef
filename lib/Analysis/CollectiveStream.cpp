//===- CollectiveStream.cpp - a rank's collectives beside its kernels -----===//

#include "CollectiveStream.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::stream;

Footprints::Footprints(rt::ProgramOp program) {
  auto attr = program->getAttrOfType<ArrayAttr>("pools");
  if (!attr)
    return;
  for (Attribute entry : attr) {
    auto dict = dyn_cast<DictionaryAttr>(entry);
    IntegerAttr slots = dict ? dict.getAs<IntegerAttr>("slots") : nullptr;
    IntegerAttr stride = dict ? dict.getAs<IntegerAttr>("stride") : nullptr;
    pools.push_back({slots ? std::max<int64_t>(1, slots.getInt()) : 1,
                     stride ? stride.getInt() : 0});
  }
}

ByteRange Footprints::span(Value buffer, std::optional<int64_t> slot) {
  auto bytes = static_cast<uint64_t>(
      rt::getBufferBytes(cast<MemRefType>(buffer.getType())));
  std::optional<int64_t> offset;
  // Copies after the first: how many, and how far apart.
  int64_t copies = 1, stride = 0;
  Operation *def = buffer.getDefiningOp();
  if (auto alloc = dyn_cast_if_present<rt::AllocOp>(def)) {
    offset = alloc.getOffset();
    if (std::optional<int64_t> pool = alloc.getPool();
        pool && *pool >= 0 && static_cast<size_t>(*pool) < pools.size()) {
      std::tie(copies, stride) = pools[*pool];
      if (stride == 0)
        offset.reset();
    }
  } else if (auto param = dyn_cast_if_present<rt::ParamOp>(def)) {
    offset = param.getOffset();
  } else if (auto state = dyn_cast_if_present<rt::StateOp>(def)) {
    offset = state.getOffset();
  } else if (auto input = dyn_cast_if_present<rt::InputOp>(def)) {
    // Inputs are read-only: every microbatch's copy at once is close
    // enough (no collective writes them).
    offset = input.getOffset();
    copies = input.getMicrobatches().value_or(1);
    // As the memory plan lays them out: a 64-byte-aligned copy each.
    stride = static_cast<int64_t>((bytes + 63) / 64 * 64);
  }
  if (!offset) {
    auto [it, inserted] = unplanned.try_emplace(buffer, nextUnplanned);
    if (inserted)
      nextUnplanned += bytes * copies + 1;
    return {it->second, it->second + bytes * copies};
  }
  auto begin = static_cast<uint64_t>(*offset);
  if (slot && copies > 1 && isa<rt::AllocOp>(def)) {
    begin += static_cast<uint64_t>((*slot % copies) * stride);
    return {begin, begin + bytes};
  }
  return {begin, begin + static_cast<uint64_t>((copies - 1) * stride) + bytes};
}

void CollectiveBytes::seal() {
  llvm::sort(ranges, [](const ByteRange &a, const ByteRange &b) {
    return a.begin < b.begin;
  });
  SmallVector<ByteRange, 0> merged;
  for (const ByteRange &range : ranges) {
    if (!merged.empty() && range.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, range.end);
    else
      merged.push_back(range);
  }
  ranges = std::move(merged);
}

bool CollectiveBytes::meets(const ByteRange &range) const {
  // Merged ranges are disjoint: only the last one that begins before
  // `range` ends can meet it.
  auto it = llvm::partition_point(
      ranges, [&](const ByteRange &r) { return r.begin < range.end; });
  return it != ranges.begin() && std::prev(it)->meets(range);
}
