//===- PlanMemory.cpp - rt-plan-memory ------------------------------------===//
//
// Lifetimes in kernel indices, then one sweep over the kernels that frees
// the buffers that died at the previous kernel and places the ones born at
// this one, with a best-fit, address-ordered, coalescing free list. Both the
// sweep and the free list are O(log n) per buffer, so a model of thousands of
// layers plans in well under a second.
//
// A program run by action lists (`stage_actions`) runs its kernels in
// another order, some of them once per microbatch; its offsets are planned
// with lifetimes that hold in any order (see the pass description), its
// peak measured over the actions (ActionPeak.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/Transforms/PlanMemory.h"
#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/FusionCandidates.h"
#include "dialects/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <map>
#include <set>

namespace mlir::rt {
#define GEN_PASS_DEF_RTPLANMEMORY
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

constexpr int64_t kAlignment = 64;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// One buffer of the program. `first..last` is the inclusive range of kernel
/// indices at which it is live: -1..K for params, inputs and state (from
/// before the first kernel to after the last), K as `last` for an output or
/// a gradient. A buffer no kernel uses has first == kNever.
struct Buffer {
  Operation *op;
  int64_t bytes;
  int64_t first = kNever;
  int64_t last = -1;
  int64_t offset = 0;
  /// Pipeline programs: the stages whose kernels touch it (bit s).
  uint64_t stages = 0;
  /// The arena bytes it takes, when more than `bytes` (an input pooled by
  /// microbatch: a 64-byte-aligned slot per microbatch, `bytes` their sum).
  int64_t extent = 0;
  /// A pooled rt.alloc's pool, else -1. Its copy of slot s lies at
  /// offset + s * stride; while planning, a pool's region (all its slots)
  /// is placed as one buffer and `inSlot` is the buffer's place in a slot.
  int64_t pool = -1;
  int64_t inSlot = 0;
  bool isRegion = false;
  /// With actions: the function of the kernels using it, and whether
  /// kernels of several functions do.
  int64_t function = -1;
  bool crossesFunctions = false;
  bool isLive() const { return first <= last; }
  int64_t span() const { return extent ? extent : bytes; }
  /// A pooled buffer, placed with its pool's region.
  bool inRegion() const { return pool >= 0 && !isRegion; }
};

/// A pool's slots and the bytes from one slot to the next.
struct PoolLayout {
  int64_t slots = 1;
  int64_t stride = 0;
};

/// The program's buffers in program order and its kernel count.
struct Lifetimes {
  std::vector<Buffer> buffers;
  int64_t numKernels = 0;
  /// Pipeline programs: each stage's kernels, [first, last]; empty without
  /// stages.
  std::vector<std::pair<int64_t, int64_t>> stageKernels;
  /// With `stage_actions`: the schedule, and the pools (their strides once
  /// planned or read).
  ProgramOp program;
  std::optional<ActionSchedule> schedule;
  SmallVector<PoolLayout> pools;
  /// Each `copy` kernel (a reshape): its kernel index and its result's and
  /// operand's buffer indices.
  struct Copy {
    int64_t kernel;
    size_t result, operand;
  };
  SmallVector<Copy> copies;
  /// Each forward norm that ends a run the CUDA device may fuse (the
  /// residual add with the next norm: FusionCandidates.h): the run's first
  /// and the norm's kernel indices, the norm's result (its value, and its
  /// buffer index once every buffer has one: it is allocated after the
  /// run's first kernel) and the buffer indices of the operands of the
  /// run's other kernels.
  struct FusedNorm {
    int64_t head, kernel;
    Value value;
    size_t result = 0;
    SmallVector<size_t, 6> operands;
  };
  SmallVector<FusedNorm> fusedNorms;
};

constexpr unsigned kMaxStages = 64;

/// The lifetimes of the buffers of `program`. A pipeline program's stages
/// run on different ranks, each from its first kernel to its last: a
/// buffer that persists (a param, an input, a state, an output, a
/// gradient) is live over the kernels of the stages that use it, not the
/// whole program, so buffers of different stages share arena bytes.
///
/// With actions, the kernels run in action order, which the plan does not
/// follow: a buffer that crosses actions (a pooled one, one used by several
/// functions, an output or a gradient) is live over the kernels of its
/// stages. What one function uses alone is written by each run before it is
/// read: its file-order lifetime holds for every run.
FailureOr<Lifetimes> computeLifetimes(ProgramOp program) {
  Lifetimes result;
  result.program = program;
  FailureOr<std::optional<ActionSchedule>> schedule =
      readActionSchedule(program);
  if (failed(schedule))
    return failure();
  result.schedule = std::move(*schedule);
  if (result.schedule)
    for (int64_t slots : result.schedule->poolSlots)
      result.pools.push_back({slots});
  DenseMap<Value, size_t> index;
  int64_t k = 0;
  for (Operation &op : program.getBody().front()) {
    if (isa<ParamOp, InputOp, StateOp, AllocOp>(op)) {
      Value buffer = op.getResult(0);
      index[buffer] = result.buffers.size();
      Buffer info{&op, getBufferBytes(cast<MemRefType>(buffer.getType()))};
      // An input pooled by microbatch holds every microbatch, a slot each.
      if (auto input = dyn_cast<InputOp>(op))
        if (std::optional<int64_t> slots = input.getMicrobatches()) {
          info.extent = alignUp(info.bytes) * *slots;
          info.bytes *= *slots;
        }
      if (auto alloc = dyn_cast<AllocOp>(op)) {
        if (IntegerAttr pool = alloc.getPoolAttr())
          info.pool = pool.getInt();
      } else {
        info.first = -1;
      }
      result.buffers.push_back(info);
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      std::optional<uint32_t> stage = kernel.getStage();
      if (stage) {
        auto &ranges = result.stageKernels;
        if (*stage >= kMaxStages)
          return kernel.emitError()
                 << "rt-plan-memory: stage " << *stage << " (at most "
                 << kMaxStages << " stages)";
        if ((!ranges.empty() && *stage + 1 < ranges.size()) ||
            *stage > ranges.size() || (k > 0 && ranges.empty()))
          return kernel.emitError()
                 << "rt-plan-memory: the kernels of each stage must be "
                    "contiguous, stages in increasing order from 0 (and "
                    "every kernel has a stage); this one is on stage "
                 << *stage << " after "
                 << (ranges.empty() ? std::string("kernels without one")
                                    : "stage " +
                                          std::to_string(ranges.size() - 1));
        if (*stage == ranges.size())
          ranges.push_back({k, k});
        ranges.back().second = k;
      } else if (!result.stageKernels.empty()) {
        return kernel.emitError()
               << "rt-plan-memory: a kernel without a stage in a pipeline "
                  "program";
      }
      if (kernel.getOpcode() == OpCode::Copy)
        result.copies.push_back({k, index.lookup(kernel.getOutputs()[0]),
                                 index.lookup(kernel.getInputs()[0])});
      SmallVector<KernelOp, 3> partners = fusionPartners(kernel);
      if (!partners.empty() &&
          (partners.back().getOpcode() == OpCode::LayerNorm ||
           partners.back().getOpcode() == OpCode::RmsNorm)) {
        Lifetimes::FusedNorm norm{k, k + static_cast<int64_t>(partners.size()),
                                  partners.back().getOutputs()[0]};
        partners.pop_back();
        partners.insert(partners.begin(), kernel);
        for (KernelOp member : partners)
          for (Value input : member.getInputs())
            norm.operands.push_back(index.lookup(input));
        result.fusedNorms.push_back(std::move(norm));
      }
      int64_t function = result.schedule ? result.schedule->functionOf[k] : -1;
      for (Value buffer : op.getOperands()) {
        Buffer &info = result.buffers[index.lookup(buffer)];
        info.first = std::min(info.first, k);
        info.last = std::max(info.last, k);
        if (stage)
          info.stages |= uint64_t(1) << *stage;
        if (info.function >= 0 && info.function != function)
          info.crossesFunctions = true;
        info.function = function;
      }
      ++k;
    }
  }
  result.numKernels = k;
  for (Lifetimes::FusedNorm &norm : result.fusedNorms)
    norm.result = index.lookup(norm.value);
  // A program of actions runs some functions once per microbatch: a value
  // that flows into such a function from before it is read by every run,
  // so it lives to the function's end (its last file-order read may be in
  // the first run's middle).
  if (auto functions = program->getAttrOfType<ArrayAttr>("functions")) {
    DenseMap<int64_t, int64_t> runs;
    if (auto actions = program->getAttrOfType<DenseI64ArrayAttr>("actions"))
      for (int64_t a = 0; a + 2 < actions.size(); a += 3)
        ++runs[actions[a]];
    for (auto [index, function] :
         llvm::enumerate(functions.getAsRange<DictionaryAttr>())) {
      if (runs.lookup(index) < 2)
        continue;
      int64_t first = function.getAs<IntegerAttr>("first").getInt();
      int64_t last = first + function.getAs<IntegerAttr>("count").getInt() - 1;
      for (Buffer &info : result.buffers)
        if (info.first < first && info.last >= first && info.last < last)
          info.last = last;
    }
  }
  DenseSet<Value> bound;
  for (Operation &op : program.getBody().front()) {
    if (auto output = dyn_cast<OutputOp>(op))
      bound.insert(output.getBuffer());
    else if (auto grad = dyn_cast<GradOp>(op))
      bound.insert(grad.getBuffer());
  }
  for (Buffer &info : result.buffers) {
    bool persists = !isa<AllocOp>(info.op);
    bool isBound = bound.contains(info.op->getResult(0));
    bool crossesActions = result.schedule && !persists && info.isLive() &&
                          (info.pool >= 0 || info.crossesFunctions || isBound);
    if (!persists && !isBound && !crossesActions)
      continue;
    if (result.stageKernels.empty() || info.stages == 0) {
      if (crossesActions)
        info.first = 0;
      info.last = persists || isBound ? k : k - 1;
      continue;
    }
    // Over its stages' kernels.
    int64_t first = kNever, last = -1;
    for (auto [stage, range] : llvm::enumerate(result.stageKernels))
      if (info.stages & (uint64_t(1) << stage)) {
        first = std::min(first, range.first);
        last = std::max(last, range.second);
      }
    if (persists || crossesActions)
      info.first = first;
    info.last = last;
  }
  return result;
}

/// Free ranges of the arena, by offset (to coalesce neighbours) and by size
/// (best fit). Every size is a multiple of kAlignment.
class FreeList {
public:
  int64_t allocate(int64_t size) {
    auto fit = bySize.lower_bound({size, 0});
    if (fit != bySize.end()) {
      auto [rangeSize, offset] = *fit;
      erase(offset, rangeSize);
      if (rangeSize > size)
        insert(offset + size, rangeSize - size);
      return offset;
    }
    // A free range ending at the top grows instead of leaving a hole.
    if (!byOffset.empty()) {
      auto [offset, rangeSize] = *byOffset.rbegin();
      if (offset + rangeSize == top) {
        erase(offset, rangeSize);
        top = offset + size;
        return offset;
      }
    }
    int64_t offset = top;
    top += size;
    return offset;
  }

  void release(int64_t offset, int64_t size) {
    auto next = byOffset.lower_bound(offset);
    if (next != byOffset.end() && offset + size == next->first) {
      size += next->second;
      erase(next->first, next->second);
    }
    next = byOffset.lower_bound(offset);
    if (next != byOffset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        erase(prev->first, prev->second);
      }
    }
    insert(offset, size);
  }

  int64_t getTop() const { return top; }

private:
  void insert(int64_t offset, int64_t size) {
    byOffset.emplace(offset, size);
    bySize.emplace(size, offset);
  }
  void erase(int64_t offset, int64_t size) {
    byOffset.erase(offset);
    bySize.erase({size, offset});
  }

  std::map<int64_t, int64_t> byOffset;
  std::set<std::pair<int64_t, int64_t>> bySize;
  int64_t top = 0;
};

/// With actions: lays out each pool's slot, its buffers one after another
/// in program order, 64-byte aligned (they may all be live at once), and
/// appends the pool's region, every slot, as one buffer to place, live
/// where its buffers are (over their stage's kernels).
LogicalResult addPoolRegions(Lifetimes &lifetimes) {
  std::vector<Buffer> regions;
  for (size_t pool = 0; pool < lifetimes.pools.size(); ++pool) {
    Buffer &region = regions.emplace_back(Buffer{nullptr, 0});
    region.pool = pool;
    region.isRegion = true;
  }
  for (Buffer &buffer : lifetimes.buffers) {
    if (buffer.pool < 0)
      continue;
    Buffer &region = regions[buffer.pool];
    PoolLayout &pool = lifetimes.pools[buffer.pool];
    if (!region.op)
      region.op = buffer.op;
    buffer.inSlot = pool.stride;
    if (buffer.bytes > std::numeric_limits<int64_t>::max() / 2 ||
        llvm::AddOverflow(pool.stride, alignUp(buffer.bytes), pool.stride))
      return buffer.op->emitError("rt-plan-memory: the buffers need more "
                                  "than 2^63 bytes");
    region.first = std::min(region.first, buffer.first);
    region.last = std::max(region.last, buffer.last);
    region.stages |= buffer.stages;
  }
  for (Buffer &region : regions) {
    // A pool no buffer names takes no bytes.
    if (!region.op)
      continue;
    if (llvm::MulOverflow(lifetimes.pools[region.pool].slots,
                          lifetimes.pools[region.pool].stride, region.bytes))
      return region.op->emitError("rt-plan-memory: the buffers need more "
                                  "than 2^63 bytes");
    lifetimes.buffers.push_back(region);
  }
  return success();
}

/// Puts each pooled buffer at its place in its region's first slot and
/// drops the regions.
void placePooledBuffers(Lifetimes &lifetimes) {
  SmallVector<int64_t> base(lifetimes.pools.size(), 0);
  for (const Buffer &buffer : lifetimes.buffers)
    if (buffer.isRegion)
      base[buffer.pool] = buffer.offset;
  llvm::erase_if(lifetimes.buffers,
                 [](const Buffer &buffer) { return buffer.isRegion; });
  for (Buffer &buffer : lifetimes.buffers)
    if (buffer.inRegion())
      buffer.offset = base[buffer.pool] + buffer.inSlot;
}

/// For each kernel k, the kernel after which the buffers that die at k are
/// freed: k itself, or the last kernel of a run the CUDA device may run as
/// one (FusionCandidates.h; within one stage and function) that k belongs
/// to but does not end. A fused kernel writes the run's results while it
/// still reads what the run's earlier kernels read, and the device refuses
/// a candidate whose result lies on such bytes (FusionPlan.h: "the
/// gelu_grad's result overlaps an operand of the input gradient", "the add's
/// result overlaps dY, x or the residual", ...); freed at k, those bytes
/// would go to the run's later results first (GPT-2 1.7B with two
/// microbatches: 45 of its 48 MLP input gradients ran apart from their
/// gelu_grad). The lifetimes, and so the peak, are unchanged: only where the
/// later results are placed.
std::vector<int64_t> releaseAfter(const Lifetimes &lifetimes) {
  ProgramOp program = lifetimes.program;
  SmallVector<KernelOp> kernels(program.getBody().front().getOps<KernelOp>());
  std::vector<int64_t> release(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k)
    release[k] = k;
  auto together = [&](size_t a, size_t b) {
    return kernels[a].getStage() == kernels[b].getStage() &&
           (!lifetimes.schedule || lifetimes.schedule->functionOf[a] ==
                                       lifetimes.schedule->functionOf[b]);
  };
  for (size_t k = 0; k < kernels.size(); ++k) {
    // The partners are the kernels right after k, in order.
    size_t end = k + fusionPartners(kernels[k]).size();
    size_t last = k;
    while (last < end && together(k, last + 1))
      ++last;
    for (size_t j = k; j < last; ++j)
      release[j] = std::max<int64_t>(release[j], last);
  }
  // A collective runs on a stream of its own (the CUDA device's) until the
  // first kernel that reads its result waits for it; a kernel before that
  // one writing over its operand's bytes would wait for it too
  // (HazardTracker.h), so the operand's bytes go to that reader at the
  // earliest (rt-prefetch-gathers issues gathers well before their reader).
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (!isCollective(kernels[k].getOpcode()))
      continue;
    Value result = kernels[k].getOutputs()[0];
    if (result == kernels[k].getInputs()[0])
      continue; // in place: its operand lives on as the result
    for (size_t j = k + 1; j < kernels.size() && together(k, j); ++j) {
      if (llvm::is_contained(kernels[j]->getOperands(), result)) {
        release[k] = std::max<int64_t>(release[k], j - 1);
        break;
      }
    }
  }
  return release;
}

/// Places every buffer (a pooled one's region); returns the arena size.
int64_t assignOffsets(Lifetimes &lifetimes) {
  std::vector<Buffer> &buffers = lifetimes.buffers;
  int64_t numKernels = lifetimes.numKernels;
  FreeList arena;
  // Allocs by first and by last kernel; params and inputs go first.
  std::vector<SmallVector<size_t, 2>> bornAt(numKernels), diedAt(numKernels);
  std::vector<int64_t> release = releaseAfter(lifetimes);
  int64_t unusedBytes = 0;
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    if (buffer.inRegion())
      continue;
    if (!buffer.isLive() || buffer.bytes == 0) {
      // Nothing else is live while it is, so any offset will do.
      buffer.offset = 0;
      unusedBytes = std::max(unusedBytes, buffer.span());
    } else if (buffer.first < 0) {
      buffer.offset = arena.allocate(alignUp(buffer.span()));
    } else {
      bornAt[buffer.first].push_back(i);
      if (buffer.last < numKernels)
        diedAt[release[buffer.last]].push_back(i);
    }
  }
  // A copy (a reshape) whose operand dies at it and whose result is born
  // there takes the operand's bytes: the devices then skip it (a copy onto
  // its own bytes), and the arena holds the value once. The result keeps
  // the bytes to its own end.
  DenseMap<size_t, size_t> bytesOf; // result -> operand
  DenseSet<size_t> handedOver;
  for (const Lifetimes::Copy &copy : lifetimes.copies) {
    const Buffer &result = buffers[copy.result];
    const Buffer &operand = buffers[copy.operand];
    if (copy.result != copy.operand && isa<AllocOp>(operand.op) &&
        result.first == copy.kernel && operand.last == copy.kernel &&
        operand.first >= 0 && operand.pool < 0 && result.pool < 0 &&
        operand.span() == result.span() && !handedOver.contains(copy.operand))
      if (bytesOf.try_emplace(copy.result, copy.operand).second)
        handedOver.insert(copy.operand);
  }
  // The norm after a residual add, fused with it, normalizes each row after
  // it has read the row's operands (NormLossKernels.cuh normOfSourceKernel;
  // FusionPlan.h allows its result on an operand's very bytes): it takes
  // the bytes of an operand that dies in the run (the branch), which the
  // run holds to its end (releaseAfter), so that the arena need not find
  // it new ones.
  for (const Lifetimes::FusedNorm &norm : lifetimes.fusedNorms) {
    const Buffer &result = buffers[norm.result];
    if (result.first != norm.kernel || result.pool >= 0 ||
        bytesOf.count(norm.result))
      continue;
    for (size_t i : norm.operands) {
      const Buffer &operand = buffers[i];
      if (isa<AllocOp>(operand.op) && operand.first >= 0 && operand.pool < 0 &&
          operand.last >= norm.head && operand.last < norm.kernel &&
          release[operand.last] == norm.kernel &&
          operand.span() == result.span() && !handedOver.contains(i)) {
        bytesOf[norm.result] = i;
        handedOver.insert(i);
        break;
      }
    }
  }
  for (int64_t k = 0; k < numKernels; ++k) {
    if (k > 0)
      for (size_t i : diedAt[k - 1])
        if (!handedOver.contains(i))
          arena.release(buffers[i].offset, alignUp(buffers[i].span()));
    for (size_t i : bornAt[k]) {
      auto it = bytesOf.find(i);
      buffers[i].offset = it != bytesOf.end()
                              ? buffers[it->second].offset
                              : arena.allocate(alignUp(buffers[i].span()));
    }
  }
  return std::max(arena.getTop(), unusedBytes);
}

/// Max over kernels of the bytes live at the kernel (see the pass
/// description), from a difference array over kernel indices; only the
/// buffers `counts` accepts add up (all of them by default).
int64_t plannedPeak(const Lifetimes &lifetimes,
                    function_ref<bool(const Buffer &)> counts = nullptr) {
  int64_t numKernels = lifetimes.numKernels;
  if (numKernels == 0) {
    int64_t bytes = 0;
    for (const Buffer &buffer : lifetimes.buffers)
      if (!isa<AllocOp>(buffer.op) && (!counts || counts(buffer)))
        bytes += buffer.bytes;
    return bytes;
  }
  std::vector<int64_t> delta(numKernels + 1, 0);
  for (const Buffer &buffer : lifetimes.buffers) {
    if (!buffer.isLive() || (counts && !counts(buffer)))
      continue;
    delta[std::max<int64_t>(buffer.first, 0)] += buffer.bytes;
    delta[std::min(buffer.last, numKernels - 1) + 1] -= buffer.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t k = 0; k < numKernels; ++k) {
    live += delta[k];
    peak = std::max(peak, live);
  }
  return peak;
}

/// Each stage's planned peak: the bytes of its buffers live at its
/// kernels; with actions, at its kernel runs.
SmallVector<int64_t> stagePeaks(const Lifetimes &lifetimes) {
  if (const std::optional<ActionSchedule> &schedule = lifetimes.schedule)
    return computeActionPeaks(lifetimes.program, *schedule);
  SmallVector<int64_t> peaks;
  for (auto [stage, range] : llvm::enumerate(lifetimes.stageKernels)) {
    int64_t peak = 0;
    std::vector<int64_t> delta(range.second - range.first + 2, 0);
    for (const Buffer &buffer : lifetimes.buffers) {
      if (!buffer.isLive() || !(buffer.stages & (uint64_t(1) << stage)))
        continue;
      int64_t from = std::max(buffer.first, range.first);
      int64_t to = std::min(buffer.last, range.second);
      if (from > to)
        continue;
      delta[from - range.first] += buffer.bytes;
      delta[to - range.first + 1] -= buffer.bytes;
    }
    int64_t live = 0;
    for (int64_t d : ArrayRef(delta).drop_back()) {
      live += d;
      peak = std::max(peak, live);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

/// rt.planned_peak_bytes and, with stages or actions, each stage's peak
/// (the program's is the largest: each stage runs on its own ranks).
struct Peaks {
  int64_t program = 0;
  SmallVector<int64_t> stages;
};

Peaks computePeaks(const Lifetimes &lifetimes) {
  if (lifetimes.stageKernels.empty() && !lifetimes.schedule)
    return {plannedPeak(lifetimes), {}};
  SmallVector<int64_t> stages = stagePeaks(lifetimes);
  return {*llvm::max_element(stages), std::move(stages)};
}

void setOffset(Operation *op, int64_t offset) {
  auto attr = Builder(op->getContext()).getI64IntegerAttr(offset);
  llvm::TypeSwitch<Operation *>(op).Case<ParamOp, InputOp, StateOp, AllocOp>(
      [&](auto op) { op.setOffsetAttr(attr); });
}

/// Checks the plan independently of how it was made: sweeping time from
/// before the first kernel to after the last with the live buffers ordered
/// by offset, a buffer becoming live must not share a byte with its
/// neighbours, and every buffer must be aligned and inside the arena. A
/// pooled buffer is a buffer per slot there, each at its own offset. The
/// one sharing allowed: a copy's result born on the very bytes of its
/// operand, which dies at that copy.
LogicalResult checkPlan(const Lifetimes &lifetimes, int64_t arenaBytes) {
  std::vector<Buffer> buffers;
  std::vector<size_t> origin; // each entry's index in lifetimes.buffers
  for (auto [index, buffer] : llvm::enumerate(lifetimes.buffers)) {
    PoolLayout pool =
        buffer.pool >= 0 ? lifetimes.pools[buffer.pool] : PoolLayout();
    if (buffer.offset % kAlignment != 0 || buffer.offset < 0 ||
        buffer.span() > arenaBytes - buffer.offset ||
        (pool.slots - 1) * pool.stride >
            arenaBytes - buffer.offset - buffer.span()) {
      InFlightDiagnostic diag = buffer.op->emitError()
                                << "rt-plan-memory: buffer at offset "
                                << buffer.offset << " (" << buffer.span()
                                << " bytes";
      if (buffer.pool >= 0)
        diag << " in each of " << pool.slots << " slots " << pool.stride
             << " bytes apart";
      return diag << ") is misaligned or outside the arena of " << arenaBytes
                  << " bytes";
    }
    for (int64_t slot = 0; slot < pool.slots; ++slot) {
      buffers.push_back(buffer);
      buffers.back().offset += slot * pool.stride;
      origin.push_back(index);
    }
  }
  auto handsOver = [&](size_t operand, size_t result) {
    const Buffer &a = buffers[operand], &b = buffers[result];
    return a.offset == b.offset && a.span() == b.span() && a.pool < 0 &&
           b.pool < 0 &&
           llvm::any_of(lifetimes.copies, [&](const Lifetimes::Copy &copy) {
             return copy.operand == origin[operand] &&
                    copy.result == origin[result] && copy.kernel == a.last &&
                    copy.kernel == b.first;
           });
  };
  int64_t numKernels = lifetimes.numKernels;
  // Time t is stored at slot t + 1 (t = -1 is before the first kernel).
  std::vector<SmallVector<size_t, 2>> born(numKernels + 2),
      died(numKernels + 2);
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    if (buffer.isLive() && buffer.span() > 0) {
      born[buffer.first + 1].push_back(i);
      died[buffer.last + 1].push_back(i);
    }
  }
  std::map<int64_t, size_t> live; // offset -> buffer
  for (int64_t slot = 0; slot < numKernels + 2; ++slot) {
    if (slot > 0)
      for (size_t i : died[slot - 1])
        if (auto it = live.find(buffers[i].offset);
            it != live.end() && it->second == i)
          live.erase(it);
    for (size_t i : born[slot]) {
      const Buffer &buffer = buffers[i];
      auto next = live.lower_bound(buffer.offset);
      const Buffer *clash = nullptr;
      if (next != live.end() && next->first == buffer.offset &&
          handsOver(next->second, i)) {
        next->second = i;
        continue;
      }
      if (next != live.end() && next->first < buffer.offset + buffer.span())
        clash = &buffers[next->second];
      else if (next != live.begin()) {
        const Buffer &prev = buffers[std::prev(next)->second];
        if (prev.offset + prev.span() > buffer.offset)
          clash = &prev;
      }
      if (clash) {
        InFlightDiagnostic diag = buffer.op->emitError()
                                  << "rt-plan-memory: bytes [" << buffer.offset
                                  << ", " << buffer.offset + buffer.span()
                                  << ") overlap bytes [" << clash->offset
                                  << ", " << clash->offset + clash->span()
                                  << ") of a buffer live at the same time";
        diag.attachNote(clash->op->getLoc()) << "the other buffer";
        return diag;
      }
      live.emplace(buffer.offset, i);
    }
  }
  return success();
}

/// Reads each pool's stride from `pools` (with actions).
LogicalResult readStrides(Lifetimes &lifetimes) {
  ProgramOp program = lifetimes.program;
  auto pools = program->getAttrOfType<ArrayAttr>("pools");
  for (auto [p, pool] : llvm::enumerate(lifetimes.pools)) {
    auto stride = cast<DictionaryAttr>(pools[p]).getAs<IntegerAttr>("stride");
    if (!stride)
      return program.emitError("rt-plan-memory: check-only needs a 'stride' "
                               "on every pool; pool ")
             << p << " is " << pools[p];
    int64_t bytes;
    if (stride.getInt() < 0 || stride.getInt() % kAlignment != 0 ||
        llvm::MulOverflow(pool.slots, stride.getInt(), bytes))
      return program.emitError("rt-plan-memory: pool ")
             << p << ": stride " << stride.getInt()
             << " is not a non-negative multiple of " << kAlignment
             << " (or its " << pool.slots << " slots pass 2^63 bytes)";
    pool.stride = stride.getInt();
  }
  return success();
}

/// Reads the plan in the IR (offsets, arena) into `lifetimes` and checks it.
LogicalResult checkExistingPlan(ModuleOp module, Lifetimes &lifetimes) {
  auto arena =
      module->getAttrOfType<IntegerAttr>(RtDialect::kArenaBytesAttrName);
  if (!arena)
    return module.emitError("rt-plan-memory: check-only needs '")
           << RtDialect::kArenaBytesAttrName << "' on the module";
  for (Buffer &buffer : lifetimes.buffers) {
    auto offset = buffer.op->getAttrOfType<IntegerAttr>("offset");
    if (!offset)
      return buffer.op->emitError("rt-plan-memory: check-only needs an "
                                  "offset on every buffer");
    buffer.offset = offset.getInt();
  }
  if (failed(readStrides(lifetimes)) ||
      failed(checkPlan(lifetimes, arena.getInt())))
    return failure();
  Peaks expected = computePeaks(lifetimes);
  auto peak =
      module->getAttrOfType<IntegerAttr>(RtDialect::kPlannedPeakBytesAttrName);
  if (peak && peak.getInt() != expected.program)
    return module.emitError("rt-plan-memory: '")
           << RtDialect::kPlannedPeakBytesAttrName << "' is " << peak.getInt()
           << " but the buffers live at one kernel add up to at most "
           << expected.program;
  auto peaks = module->getAttrOfType<DenseI64ArrayAttr>(
      RtDialect::kStagePlannedPeakBytesAttrName);
  if (peaks && !lifetimes.stageKernels.empty()) {
    if (peaks.asArrayRef() != ArrayRef(expected.stages)) {
      InFlightDiagnostic diag = module.emitError("rt-plan-memory: '")
                                << RtDialect::kStagePlannedPeakBytesAttrName
                                << "' is " << peaks
                                << " but the stages' peaks are [";
      llvm::interleaveComma(expected.stages, diag);
      return diag << "]";
    }
  }
  return success();
}

/// Writes each pool's stride into `pools`.
void writeStrides(const Lifetimes &lifetimes) {
  ProgramOp program = lifetimes.program;
  auto pools = program->getAttrOfType<ArrayAttr>("pools");
  if (!pools || !lifetimes.schedule)
    return;
  Builder builder(program);
  SmallVector<Attribute> entries;
  for (auto [entry, pool] : llvm::zip_equal(pools, lifetimes.pools)) {
    NamedAttrList fields(cast<DictionaryAttr>(entry));
    fields.set("stride", builder.getI64IntegerAttr(pool.stride));
    entries.push_back(fields.getDictionary(program.getContext()));
  }
  program->setAttr("pools", builder.getArrayAttr(entries));
}

} // namespace

MemoryStats mlir::rt::computeMemoryStats(ProgramOp program,
                                         std::optional<unsigned> stage) {
  Block &body = program.getBody().front();
  FailureOr<Lifetimes> computed = computeLifetimes(program);
  if (failed(computed))
    return {};
  Lifetimes &lifetimes = *computed;
  const std::optional<ActionSchedule> &schedule = lifetimes.schedule;
  size_t numStages =
      schedule ? schedule->stageActions.size() : lifetimes.stageKernels.size();
  if (stage && *stage >= numStages)
    return {};
  if (stage && !lifetimes.stageKernels.empty()) {
    // The stage's kernels and the buffers they use.
    std::vector<Buffer> kept;
    for (const Buffer &buffer : lifetimes.buffers)
      if (buffer.stages & (uint64_t(1) << *stage))
        kept.push_back(buffer);
    lifetimes.buffers = std::move(kept);
  }
  DenseSet<Value> grads, paramCopies;
  for (auto grad : body.getOps<GradOp>())
    grads.insert(grad.getBuffer());
  // The sums a gradient accumulates, and each microbatch's share of it.
  DenseSet<Value> gradientParts = grads;
  SmallVector<KernelOp> kernels(body.getOps<KernelOp>());
  for (KernelOp kernel : llvm::reverse(kernels))
    if (kernel.getOpcode() == OpCode::Add &&
        gradientParts.contains(kernel.getOutputs()[0]))
      for (Value operand : kernel.getInputs())
        if (operand.getDefiningOp<AllocOp>())
          gradientParts.insert(operand);
  // The 16-bit copies of the f32 master weights of a mixed-precision model.
  for (KernelOp kernel : kernels)
    if (kernel.getOpcode() == OpCode::Cast &&
        kernel.getInputs()[0].getDefiningOp<ParamOp>())
      paramCopies.insert(kernel.getOutputs()[0]);
  MemoryStats stats;
  // (With a stage, the other stages' buffers are gone: their kernels add
  // nothing to the peaks below.)
  for (const Buffer &buffer : lifetimes.buffers) {
    Value value = buffer.op->getResult(0);
    if (isa<ParamOp>(buffer.op))
      stats.paramBytes += buffer.bytes;
    else if (isa<StateOp>(buffer.op))
      stats.stateBytes += buffer.bytes;
    else if (isa<InputOp>(buffer.op))
      stats.inputBytes += buffer.bytes;
    else if (grads.contains(value))
      stats.gradBytes += buffer.bytes;
    else if (paramCopies.contains(value) && buffer.isLive())
      stats.paramCopyBytes += buffer.bytes;
  }
  auto isActivation = [&](Value value) {
    return value.getDefiningOp<AllocOp>() && !gradientParts.contains(value) &&
           !paramCopies.contains(value);
  };
  if (schedule) {
    // The stage's peaks over its runs, or the largest stage's.
    auto peak = [&](function_ref<bool(Value)> counts) {
      if (stage)
        return computeActionPeak(program, *schedule, *stage, counts);
      return *llvm::max_element(computeActionPeaks(program, *schedule, counts));
    };
    stats.peakBytes = peak(nullptr);
    stats.peakActivationBytes = peak(isActivation);
    return stats;
  }
  stats.peakBytes =
      stage ? stagePeaks(lifetimes)[*stage] : computePeaks(lifetimes).program;
  stats.peakActivationBytes = plannedPeak(lifetimes, [&](const Buffer &buffer) {
    return isActivation(buffer.op->getResult(0));
  });
  return stats;
}

FailureOr<SmallVector<int64_t>> mlir::rt::readPlannedPeaks(ModuleOp module,
                                                         unsigned numStages) {
  if (auto stages = module->getAttrOfType<DenseI64ArrayAttr>(
          RtDialect::kStagePlannedPeakBytesAttrName)) {
    if (stages.size() != numStages)
      return module.emitError("'")
             << RtDialect::kStagePlannedPeakBytesAttrName << "' has "
             << stages.size() << " entries, expected " << numStages;
    return SmallVector<int64_t>(stages.asArrayRef());
  }
  auto peak =
      module->getAttrOfType<IntegerAttr>(RtDialect::kPlannedPeakBytesAttrName);
  if (!peak || numStages != 1)
    return module.emitError("no planned peak per stage (run rt-plan-memory)");
  return SmallVector<int64_t>{peak.getInt()};
}

namespace {

struct PlanMemoryPass : public rt::impl::RtPlanMemoryBase<PlanMemoryPass> {
  using RtPlanMemoryBase::RtPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto programs = module.getOps<ProgramOp>();
    if (!llvm::hasSingleElement(programs)) {
      module.emitError("rt-plan-memory: expected exactly one rt.program, "
                       "found ")
          << llvm::range_size(programs);
      return signalPassFailure();
    }
    FailureOr<Lifetimes> computed = computeLifetimes(*programs.begin());
    if (failed(computed))
      return signalPassFailure();
    Lifetimes &lifetimes = *computed;
    if (checkOnly) {
      if (failed(checkExistingPlan(module, lifetimes)))
        signalPassFailure();
      return;
    }
    if (failed(addPoolRegions(lifetimes)))
      return signalPassFailure();
    // Offsets, the arena and the peak stay below the aligned total.
    int64_t total = 0;
    for (const Buffer &buffer : lifetimes.buffers)
      if (!buffer.inRegion() &&
          (buffer.bytes > std::numeric_limits<int64_t>::max() / 2 ||
           llvm::AddOverflow(total, alignUp(buffer.span()), total))) {
        buffer.op->emitError("rt-plan-memory: the buffers need more than "
                             "2^63 bytes");
        return signalPassFailure();
      }
    int64_t arenaBytes = assignOffsets(lifetimes);
    placePooledBuffers(lifetimes);
    for (const Buffer &buffer : lifetimes.buffers)
      setOffset(buffer.op, buffer.offset);
    writeStrides(lifetimes);
    Builder builder(module);
    module->setAttr(RtDialect::kArenaBytesAttrName,
                    builder.getI64IntegerAttr(arenaBytes));
    Peaks peaks = computePeaks(lifetimes);
    module->setAttr(RtDialect::kPlannedPeakBytesAttrName,
                    builder.getI64IntegerAttr(peaks.program));
    if (!lifetimes.stageKernels.empty())
      module->setAttr(RtDialect::kStagePlannedPeakBytesAttrName,
                      builder.getDenseI64ArrayAttr(peaks.stages));
    if (check && failed(checkPlan(lifetimes, arenaBytes)))
      return signalPassFailure();
  }
};

} // namespace
