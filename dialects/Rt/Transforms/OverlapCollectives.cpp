//===- OverlapCollectives.cpp - work a collective does not wait for, after it
//-===//
//
// A device that runs collectives on streams of their own (the CUDA device)
// overlaps a collective with the kernels after it in the program, up to
// the first one that reads its result. In a backward the sharding passes
// leave each tensor-parallel reduction of an input gradient right after
// the kernels that make it, and the layer's weight gradients (which it
// does not need) before those: the reduction then runs alone. This pass
// moves the kernels between a collective and the communication before it
// that the collective does not wait for (nor they for it) to just after
// it, so that they run while it does: Megatron's overlap of the input
// gradient's all-reduce (or reduce-scatter) with the weight gradient's
// GEMM. A reduction of what an earlier function computed (a deferred W's
// first) takes the kernels before it behind it alike. The values are unchanged:
// only kernels that share no buffer with what stays behind them move, in their
// own order. The optimizer updates right before a sum_squares that stays (a
// sharded or pipelined gradient norm, reduced after) stay with it: the CUDA
// device sums the squares in the updates' pass, a read of every gradient less
// than the reduction's overlap with the updates saves.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/Communicates.h"
#include "dialects/Rt/Transforms/FusionCandidates.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/Passes.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTOVERLAPCOLLECTIVES
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

/// Kernels that the CUDA device may run as one: they move together.
using Unit = SmallVector<KernelOp, 3>;

bool shares(ValueRange a, ValueRange b) {
  return llvm::any_of(a, [&](Value v) { return llvm::is_contained(b, v); });
}

/// Whether `first` (before `second` in the program) must stay before it:
/// one writes what the other reads or writes.
bool ordered(KernelOp first, KernelOp second) {
  return shares(first.getOutputs(), second.getInputs()) ||
         shares(first.getInputs(), second.getOutputs()) ||
         shares(first.getOutputs(), second.getOutputs());
}

bool ordered(const Unit &unit, ArrayRef<KernelOp> after) {
  return llvm::any_of(unit, [&](KernelOp kernel) {
    return llvm::any_of(after,
                        [&](KernelOp later) { return ordered(kernel, later); });
  });
}

/// Whether `opcode` reduces (all_reduce, reduce_scatter), not gathers.
bool reduces(OpCode opcode) {
  return opcode == OpCode::AllReduce || opcode == OpCode::ReduceScatter;
}

/// What a run with `mark` puts on each kernel it moves.
constexpr llvm::StringLiteral kMovedMark = RtDialect::kOverlapMovedAttrName;

class Overlap {
public:
  Overlap(ProgramOp program, bool mark)
      : functions(KernelFunctions::read(program)), mark(mark) {}

  /// The function (-1 without functions) and stage of `kernel`: a window
  /// stays within one of each.
  std::pair<int64_t, int64_t> placeOf(KernelOp kernel) const {
    int64_t function = -1;
    if (functions) {
      auto it = functions->functionOf.find(kernel);
      function = it == functions->functionOf.end() ? -2 : it->second;
    }
    return {function, kernel.getStage().value_or(-1)};
  }

  /// Moves the kernels of `window` (in program order, right before the
  /// collectives of `run`) that those do not wait for to just after them.
  /// Returns whether any moved.
  bool sink(ArrayRef<KernelOp> run, ArrayRef<KernelOp> window) {
    // The window in units: each fused run whole.
    SmallVector<Unit> units;
    for (size_t k = 0; k < window.size();) {
      Unit unit{window[k]};
      for (KernelOp partner : fusionPartners(window[k]))
        if (k + unit.size() < window.size() &&
            window[k + unit.size()] == partner)
          unit.push_back(partner);
      k += unit.size();
      units.push_back(std::move(unit));
    }
    // From the last: a unit stays where something that stays after it
    // must follow it; a binding or other op among the kernels that uses
    // its buffers keeps it too.
    SmallVector<KernelOp> staying(run.begin(), run.end());
    SmallVector<bool> moves(units.size(), false);
    // Each update that may sum a later sum_squares' squares: that kernel.
    DenseMap<Operation *, Operation *> squaresOf;
    for (const Unit &unit : units)
      for (KernelOp update : updatesBeforeSquares(unit.front()))
        squaresOf[update] = unit.front();
    Operation *end = KernelOp(run.front()).getOperation();
    for (size_t u = units.size(); u-- > 0;) {
      const Unit &unit = units[u];
      bool bound = false;
      for (Operation *op = unit.back()->getNextNode(); op && op != end;
           op = op->getNextNode())
        if (!isa<KernelOp, AllocOp>(op))
          for (KernelOp kernel : unit)
            bound |= shares(op->getOperands(), kernel->getOperands());
      Operation *squares = squaresOf.lookup(unit.front());
      bool summing = squares && llvm::is_contained(staying, KernelOp(squares));
      bool movedBefore = llvm::any_of(
          unit, [](KernelOp kernel) { return kernel->hasAttr(kMovedMark); });
      if (bound || summing || movedBefore || ordered(unit, staying))
        staying.append(unit.begin(), unit.end());
      else
        moves[u] = true;
    }
    SmallVector<KernelOp> moved;
    for (size_t u = 0; u < units.size(); ++u)
      if (moves[u])
        moved.append(units[u].begin(), units[u].end());
    if (moved.empty())
      return false;
    Operation *at = KernelOp(run.back()).getOperation();
    for (KernelOp kernel : moved) {
      kernel->moveAfter(at);
      at = kernel.getOperation();
      if (mark)
        kernel->setAttr(kMovedMark, UnitAttr::get(kernel->getContext()));
    }
    return true;
  }

  /// Moves the kernels that read nothing (dropout masks drawn from the
  /// step's counter) among the first kernels after `run` that read its
  /// results (in its function and stage) up to just after it, where no
  /// kernel they pass touches their results: the forward draws each
  /// branch's mask while the branch's reduction runs, not after the
  /// reduction's reader. Not further: a mask drawn early lives longer.
  /// Returns whether any moved.
  bool hoistGenerators(ArrayRef<KernelOp> run) {
    KernelOp last = run.back();
    Operation *at = last.getOperation();
    SmallVector<KernelOp> passed;
    bool moved = false;
    for (Operation *op = at->getNextNode(); op;) {
      Operation *next = op->getNextNode();
      auto kernel = dyn_cast<KernelOp>(op);
      if (!kernel) {
        op = next;
        continue;
      }
      if (communicates(kernel) || placeOf(kernel) != placeOf(last))
        break;
      bool free = kernel.getInputs().empty() &&
                  llvm::none_of(passed, [&](KernelOp before) {
                    return ordered(before, kernel);
                  });
      bool readsRun = llvm::any_of(run, [&](KernelOp collective) {
        return shares(collective.getOutputs(), kernel.getInputs());
      });
      if (!free && !readsRun)
        break;
      if (free && !passed.empty()) {
        // Its results' allocs come along where they come later.
        at = moveUpWithAllocs(kernel, at);
        moved = true;
      } else if (free) {
        at = op;
      } else {
        passed.push_back(kernel);
      }
      op = next;
    }
    return moved;
  }

  /// Moves `collective` (an all_reduce or reduce_scatter into a buffer of
  /// its own) up to just after the last kernel that writes its operand or
  /// touches its result, in its function and stage, past no kernel that
  /// communicates and no binding: a recomputed forward's reduction, left
  /// before its reader beside the input gradient's (one run), then runs
  /// behind the backward between. Returns whether it moved.
  bool hoistToWriter(KernelOp collective) {
    if (!reduces(collective.getOpcode()) ||
        collective.getInputs()[0] == collective.getOutputs()[0])
      return false;
    // Past allocs (its result's comes along), not bindings.
    return moveUpAfter(collective, writerAbove(collective, [&](Operation *op) {
                         auto kernel = dyn_cast<KernelOp>(op);
                         if (!kernel)
                           return !isa<AllocOp>(op);
                         return communicates(kernel) ||
                                placeOf(kernel) != placeOf(collective);
                       }));
  }

  std::optional<KernelFunctions> functions;
  const bool mark;
};

struct RtOverlapCollectivesPass
    : public rt::impl::RtOverlapCollectivesBase<RtOverlapCollectivesPass> {
  using RtOverlapCollectivesBase::RtOverlapCollectivesBase;
  void runOnOperation() override {
    for (ProgramOp program : getOperation().getOps<ProgramOp>()) {
      Overlap overlap(program, mark);
      SmallVector<KernelOp> kernels(
          program.getBody().front().getOps<KernelOp>());
      // Each run of collectives issued together (rt-bucket-reductions
      // makes runs of the reductions) with the kernels since the
      // communication before it (of its function and stage), in the
      // program as it is now; the last first, so that what moves past one
      // run is not moved again.
      SmallVector<std::pair<ArrayRef<KernelOp>, ArrayRef<KernelOp>>> windows;
      size_t start = 0;
      for (size_t k = 0; k < kernels.size();) {
        if (!communicates(kernels[k])) {
          ++k;
          continue;
        }
        size_t first = k;
        while (first > start && overlap.placeOf(kernels[first - 1]) ==
                                    overlap.placeOf(kernels[k]))
          --first;
        size_t end = k + 1;
        if (isCollective(kernels[k].getOpcode()))
          while (end < kernels.size() &&
                 isCollective(kernels[end].getOpcode()) &&
                 overlap.placeOf(kernels[end]) == overlap.placeOf(kernels[k]))
            ++end;
        ArrayRef<KernelOp> run = ArrayRef(kernels).slice(k, end - k);
        ArrayRef<KernelOp> window = ArrayRef(kernels).slice(first, k - first);
        // A run that reduces what the window computes (an input gradient),
        // or reductions of what an earlier function computed (a deferred
        // W's first: the embedding's input gradient, which B leaves
        // partial; the window then runs behind it, its result taking the
        // place its input leaves); not gathers of buffers written long
        // before (issued early by rt-prefetch-gathers, they already run
        // behind the kernels after them: moving those further would keep
        // more gathered results live at once).
        bool computed = llvm::any_of(run, [&](KernelOp collective) {
          return llvm::any_of(window, [&](KernelOp kernel) {
            return shares(kernel.getOutputs(), collective.getInputs());
          });
        });
        bool reductions = llvm::all_of(run, [](KernelOp collective) {
          return reduces(collective.getOpcode());
        });
        if (isCollective(kernels[k].getOpcode()) && (computed || reductions))
          windows.push_back({run, window});
        start = k = end;
      }
      bool moved = false;
      for (auto [run, window] : llvm::reverse(windows))
        moved |= overlap.sink(run, window);
      for (auto [run, window] : windows)
        moved |= overlap.hoistGenerators(run);
      // Last (the flow's last run): each reduction that the moves left
      // after kernels it does not wait for goes up to its writer.
      if (!mark)
        for (KernelOp kernel : kernels)
          moved |= overlap.hoistToWriter(kernel);
      // Each kernel stayed in its function: the ranges are rewritten as
      // they were, kernel for kernel (a check that they still hold).
      if (moved && overlap.functions &&
          failed(overlap.functions->write(program, "rt-overlap-collectives")))
        return signalPassFailure();
      if (!mark)
        for (KernelOp kernel : program.getBody().front().getOps<KernelOp>())
          kernel->removeAttr(kMovedMark);
    }
  }
};

} // namespace
