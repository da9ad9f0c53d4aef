//===- PlanMemory.cpp - rt-plan-memory ------------------------------------===//
//
// Lifetimes in kernel indices, then one sweep over the kernels that frees
// the buffers that died at the previous kernel and places the ones born at
// this one, with a best-fit, address-ordered, coalescing free list. Both the
// sweep and the free list are O(log n) per buffer, so a model of thousands of
// layers plans in well under a second.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/Transforms/PlanMemory.h"
#include "dialects/Rt/IR/RtOps.h"
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
  bool isLive() const { return first <= last; }
  int64_t span() const { return extent ? extent : bytes; }
};

/// The program's buffers in program order and its kernel count.
struct Lifetimes {
  std::vector<Buffer> buffers;
  int64_t numKernels = 0;
  /// Pipeline programs: each stage's kernels, [first, last]; empty without
  /// stages.
  std::vector<std::pair<int64_t, int64_t>> stageKernels;
};

constexpr unsigned kMaxStages = 64;

/// The lifetimes of the buffers of `program`. A pipeline program's stages
/// run on different ranks, each from its first kernel to its last: a
/// buffer that persists (a param, an input, a state, an output, a
/// gradient) is live over the kernels of the stages that use it, not the
/// whole program, so buffers of different stages share arena bytes.
FailureOr<Lifetimes> computeLifetimes(ProgramOp program) {
  Lifetimes result;
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
      if (!isa<AllocOp>(op))
        info.first = -1;
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
      for (Value buffer : op.getOperands()) {
        Buffer &info = result.buffers[index.lookup(buffer)];
        info.first = std::min(info.first, k);
        info.last = std::max(info.last, k);
        if (stage)
          info.stages |= uint64_t(1) << *stage;
      }
      ++k;
    }
  }
  result.numKernels = k;
  // A program of actions runs some functions once per microbatch: a value
  // that flows into such a function from before it is read by every run,
  // so it lives to the function's end (its last file-order read may be in
  // the first run's middle).
  if (auto functions = program->getAttrOfType<ArrayAttr>("functions")) {
    DenseMap<int64_t, int64_t> runs;
    if (auto actions = program->getAttrOfType<ArrayAttr>("actions"))
      for (auto action : actions.getAsRange<DenseI64ArrayAttr>())
        ++runs[action[0]];
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
    if (!persists && !bound.contains(info.op->getResult(0)))
      continue;
    if (result.stageKernels.empty() || info.stages == 0) {
      info.last = k;
      continue;
    }
    // Over its stages' kernels.
    int64_t first = kNever, last = -1;
    for (auto [stage, range] : llvm::enumerate(result.stageKernels))
      if (info.stages & (uint64_t(1) << stage)) {
        first = std::min(first, range.first);
        last = std::max(last, range.second);
      }
    if (persists)
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

/// Places every buffer; returns the arena size.
int64_t assignOffsets(Lifetimes &lifetimes) {
  std::vector<Buffer> &buffers = lifetimes.buffers;
  int64_t numKernels = lifetimes.numKernels;
  FreeList arena;
  // Allocs by first and by last kernel; params and inputs go first.
  std::vector<SmallVector<size_t, 2>> bornAt(numKernels), diedAt(numKernels);
  int64_t unusedBytes = 0;
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    if (!buffer.isLive() || buffer.bytes == 0) {
      // Nothing else is live while it is, so any offset will do.
      buffer.offset = 0;
      unusedBytes = std::max(unusedBytes, buffer.span());
    } else if (buffer.first < 0) {
      buffer.offset = arena.allocate(alignUp(buffer.span()));
    } else {
      bornAt[buffer.first].push_back(i);
      if (buffer.last < numKernels)
        diedAt[buffer.last].push_back(i);
    }
  }
  for (int64_t k = 0; k < numKernels; ++k) {
    if (k > 0)
      for (size_t i : diedAt[k - 1])
        arena.release(buffers[i].offset, alignUp(buffers[i].span()));
    for (size_t i : bornAt[k])
      buffers[i].offset = arena.allocate(alignUp(buffers[i].span()));
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
/// kernels.
SmallVector<int64_t> stagePeaks(const Lifetimes &lifetimes) {
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

/// rt.planned_peak_bytes: with stages, the largest stage's (each runs on
/// its own ranks).
int64_t programPeak(const Lifetimes &lifetimes) {
  if (lifetimes.stageKernels.empty())
    return plannedPeak(lifetimes);
  SmallVector<int64_t> peaks = stagePeaks(lifetimes);
  return *llvm::max_element(peaks);
}

void setOffset(Operation *op, int64_t offset) {
  auto attr = Builder(op->getContext()).getI64IntegerAttr(offset);
  llvm::TypeSwitch<Operation *>(op).Case<ParamOp, InputOp, StateOp, AllocOp>(
      [&](auto op) { op.setOffsetAttr(attr); });
}

/// Checks the plan independently of how it was made: sweeping time from
/// before the first kernel to after the last with the live buffers ordered
/// by offset, a buffer becoming live must not share a byte with its
/// neighbours, and every buffer must be aligned and inside the arena.
LogicalResult checkPlan(const Lifetimes &lifetimes, int64_t arenaBytes) {
  const std::vector<Buffer> &buffers = lifetimes.buffers;
  int64_t numKernels = lifetimes.numKernels;
  // Time t is stored at slot t + 1 (t = -1 is before the first kernel).
  std::vector<SmallVector<size_t, 2>> born(numKernels + 2),
      died(numKernels + 2);
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    if (buffer.offset % kAlignment != 0 || buffer.offset < 0 ||
        buffer.span() > arenaBytes - buffer.offset)
      return buffer.op->emitError()
             << "rt-plan-memory: buffer at offset " << buffer.offset << " ("
             << buffer.span() << " bytes) is misaligned or outside the arena of "
             << arenaBytes << " bytes";
    if (buffer.isLive() && buffer.span() > 0) {
      born[buffer.first + 1].push_back(i);
      died[buffer.last + 1].push_back(i);
    }
  }
  std::map<int64_t, size_t> live; // offset -> buffer
  for (int64_t slot = 0; slot < numKernels + 2; ++slot) {
    if (slot > 0)
      for (size_t i : died[slot - 1])
        live.erase(buffers[i].offset);
    for (size_t i : born[slot]) {
      const Buffer &buffer = buffers[i];
      auto next = live.lower_bound(buffer.offset);
      const Buffer *clash = nullptr;
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
  if (failed(checkPlan(lifetimes, arena.getInt())))
    return failure();
  auto peak =
      module->getAttrOfType<IntegerAttr>(RtDialect::kPlannedPeakBytesAttrName);
  if (peak && peak.getInt() != programPeak(lifetimes))
    return module.emitError("rt-plan-memory: '")
           << RtDialect::kPlannedPeakBytesAttrName << "' is " << peak.getInt()
           << " but the buffers live at one kernel add up to at most "
           << programPeak(lifetimes);
  return success();
}

} // namespace

MemoryStats mlir::rt::computeMemoryStats(ProgramOp program,
                                         std::optional<unsigned> stage) {
  Block &body = program.getBody().front();
  FailureOr<Lifetimes> computed = computeLifetimes(program);
  if (failed(computed))
    return {};
  Lifetimes &lifetimes = *computed;
  if (stage) {
    // The stage's kernels and the buffers they use.
    if (*stage >= lifetimes.stageKernels.size())
      return {};
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
  stats.peakBytes = stage ? stagePeaks(lifetimes)[*stage]
                          : programPeak(lifetimes);
  stats.peakActivationBytes = plannedPeak(lifetimes, [&](const Buffer &buffer) {
    Value value = buffer.op->getResult(0);
    return isa<AllocOp>(buffer.op) && !gradientParts.contains(value) &&
           !paramCopies.contains(value);
  });
  return stats;
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
    // Offsets, the arena and the peak stay below the aligned total.
    int64_t total = 0;
    for (const Buffer &buffer : lifetimes.buffers)
      if (buffer.bytes > std::numeric_limits<int64_t>::max() / 2 ||
          llvm::AddOverflow(total, alignUp(buffer.span()), total)) {
        buffer.op->emitError("rt-plan-memory: the buffers need more than "
                             "2^63 bytes");
        return signalPassFailure();
      }
    int64_t arenaBytes = assignOffsets(lifetimes);
    for (const Buffer &buffer : lifetimes.buffers)
      setOffset(buffer.op, buffer.offset);
    Builder builder(module);
    module->setAttr(RtDialect::kArenaBytesAttrName,
                    builder.getI64IntegerAttr(arenaBytes));
    module->setAttr(RtDialect::kPlannedPeakBytesAttrName,
                    builder.getI64IntegerAttr(programPeak(lifetimes)));
    if (!lifetimes.stageKernels.empty())
      module->setAttr(RtDialect::kStagePlannedPeakBytesAttrName,
                      builder.getDenseI64ArrayAttr(stagePeaks(lifetimes)));
    if (check && failed(checkPlan(lifetimes, arenaBytes)))
      return signalPassFailure();
  }
};

} // namespace
