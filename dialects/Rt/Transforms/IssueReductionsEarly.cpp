//===- IssueReductionsEarly.cpp - each all_reduce as soon as it can go ----===//
//
// Autodiff and the sharding passes place the data-parallel reduction of
// every gradient after the whole backward, beside the optimizer. A device
// that runs collectives on a stream of their own (the CUDA device) overlaps
// a reduction only with what comes after it in the program, so this pass
// moves each all_reduce up to just after the last kernel that writes its
// operand (its layer's last W): the reductions of the last layers then run
// while the backward of the first ones goes on. Every rank runs the same
// program, so every rank issues the collectives in the same new order; a
// device that runs kernels one at a time (the CPU) computes the same values.
//
// A program run by actions (microbatches > 1, a pipeline) sums each
// gradient over the microbatches in place and reduces the sums in its
// epilogue. There the reduction of a sum goes into the run of the action
// that last touches it (the last microbatch's backward, or W), just after
// that touch, and reduces the sum in place. Other runs of that function
// must not reduce, so that action runs a copy of the function that does
// (with its own temporaries, so that both plan as functions alone do).
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/FusionCandidates.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTISSUEREDUCTIONSEARLY
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

bool writes(KernelOp kernel, Value buffer) {
  return llvm::is_contained(kernel.getOutputs(), buffer);
}

bool uses(Operation &op, Value buffer) {
  return llvm::is_contained(op.getOperands(), buffer);
}

/// Moves `reduction` (an all_reduce of a distinct result) to just after
/// the last op before it that writes or defines its operand (and past the
/// kernels the CUDA device fuses with that one); with it, its result's
/// rt.alloc when that comes later. Returns whether it moved.
bool issueEarly(KernelOp reduction) {
  Value result = reduction.getOutputs()[0];
  if (reduction.getInputs()[0] == result)
    return false;
  // A binding of the result stays after its writer.
  return moveUpAfter(reduction, writerAbove(reduction, [&](Operation *op) {
                       return !isa<KernelOp>(op) &&
                              op != result.getDefiningOp() && uses(*op, result);
                     }));
}

/// Makes `reduction` reduce its operand in place when nothing after it uses
/// the operand (a gradient's last reader is its reduction): the operand
/// then holds the sum to the result's last reader, and the result's buffer
/// goes. Otherwise the plan would hand the operand's bytes to a later
/// kernel of the backward, which a device reducing on a stream of its own
/// must hold back until the reduction is done. Returns whether it did.
bool reduceInPlace(KernelOp reduction) {
  Value operand = reduction.getInputs()[0];
  Value result = reduction.getOutputs()[0];
  auto operandAlloc = operand.getDefiningOp<AllocOp>();
  auto resultAlloc = result.getDefiningOp<AllocOp>();
  if (operand == result || !operandAlloc || !resultAlloc ||
      operandAlloc.getPool() || resultAlloc.getPool())
    return false;
  for (Operation *op = reduction->getNextNode(); op; op = op->getNextNode())
    if (uses(*op, operand))
      return false;
  for (Operation *user : result.getUsers())
    if (auto kernel = dyn_cast<KernelOp>(user);
        kernel && kernel != reduction && writes(kernel, result))
      return false;
  result.replaceAllUsesWith(operand);
  resultAlloc->erase();
  return true;
}

//===----------------------------------------------------------------------===//
// Programs run by actions
//===----------------------------------------------------------------------===//

/// An epilogue's all_reduce that goes into an earlier action's run, just
/// after `anchor`, the run's last kernel touching the sum it reduces.
struct Move {
  KernelOp reduction;
  KernelOp anchor;
};

class ActionProgram {
public:
  ActionProgram(ProgramOp program, KernelFunctions functions,
                ActionLists lists)
      : program(program), functions(std::move(functions)),
        lists(std::move(lists)) {}

  LogicalResult run();

private:
  bool touchesIn(Value buffer, int64_t function) const;
  /// The kernels (indices) of `buffer`'s touches, in order.
  ArrayRef<int64_t> touchesOf(Value buffer) const {
    auto it = touches.find(buffer);
    return it == touches.end() ? ArrayRef<int64_t>() : it->second;
  }
  std::optional<Move> planMove(int64_t reduction, size_t list,
                               size_t epilogue, size_t &action) const;
  void copyForLastRun(int64_t function, int64_t copy,
                      DenseMap<Operation *, Operation *> &copyOf);

  ProgramOp program;
  KernelFunctions functions;
  ActionLists lists;
  SmallVector<KernelOp> kernels;
  /// Each function's first and last kernel (indices).
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  /// The actions running each function, over every list, and the list
  /// (the stage) that does.
  SmallVector<int64_t> runs, listOf;
  DenseMap<Value, SmallVector<int64_t, 4>> touches;
  DenseSet<Value> bound;
  std::optional<unsigned> pipelineAxis;
};

bool ActionProgram::touchesIn(Value buffer, int64_t function) const {
  auto [first, last] = ranges[function];
  ArrayRef<int64_t> at = touchesOf(buffer);
  const int64_t *it = llvm::lower_bound(at, first);
  return it != at.end() && *it <= last;
}

/// Whether the reduction (kernel `here`) of `list`'s action `epilogue` (a
/// function run once) can go into an earlier action's run; `action` is then
/// that action.
std::optional<Move> ActionProgram::planMove(int64_t here, size_t list,
                                            size_t epilogue,
                                            size_t &action) const {
  KernelOp reduction = kernels[here];
  Value sum = reduction.getInputs()[0], result = reduction.getOutputs()[0];
  auto sumAlloc = sum.getDefiningOp<AllocOp>();
  auto resultAlloc = result.getDefiningOp<AllocOp>();
  if (sum == result || !sumAlloc || !resultAlloc || sumAlloc.getPool() ||
      resultAlloc.getPool() || bound.contains(sum))
    return std::nullopt;
  // A group over the pipeline's stages joins ranks that run other action
  // lists: issued elsewhere in one, it would wait for the other's
  // transfers.
  if (pipelineAxis && llvm::is_contained(reduction.getInts(), *pipelineAxis))
    return std::nullopt;
  // The result: written by this reduction alone, used in its function only.
  const auto &actions = lists.lists[list];
  int64_t epilogueFunction = actions[3 * epilogue];
  for (int64_t k : touchesOf(result))
    if (functions.functionOf.lookup(kernels[k]) != epilogueFunction ||
        k < here ||
        (k > here && llvm::is_contained(
                         KernelOp(kernels[k]).getOutputs(), result)))
      return std::nullopt;
  // The sum: touched by this reduction alone in its function, by no later
  // action, and by the kernels of this list's functions only.
  for (int64_t k : touchesOf(sum)) {
    auto it = functions.functionOf.find(kernels[k]);
    if (it == functions.functionOf.end() ||
        (it->second == epilogueFunction && k != here))
      return std::nullopt;
  }
  for (size_t a = epilogue + 1; 3 * a < actions.size(); ++a)
    if (touchesIn(sum, actions[3 * a]))
      return std::nullopt;
  for (size_t a = epilogue; a-- > 0;) {
    int64_t function = actions[3 * a];
    if (!touchesIn(sum, function))
      continue;
    ArrayRef<int64_t> at = touchesOf(sum);
    int64_t last = *std::prev(llvm::upper_bound(at, ranges[function].second));
    KernelOp anchor = kernels[last];
    if (!sumAlloc->isBeforeInBlock(anchor))
      return std::nullopt;
    // Every touch must be on this list: no other stage reads the sum.
    for (int64_t k : at)
      if (listOf[functions.functionOf.lookup(kernels[k])] !=
          static_cast<int64_t>(list))
        return std::nullopt;
    action = a;
    return Move{reduction, anchor};
  }
  return std::nullopt;
}

/// Copies `function`'s kernels just after them as `copy`, each buffer that
/// its kernels alone use (a temporary) copied too; `copyOf` maps each
/// kernel to its copy.
void ActionProgram::copyForLastRun(int64_t function, int64_t copy,
                                   DenseMap<Operation *, Operation *> &copyOf) {
  auto [first, last] = ranges[function];
  auto isTemporary = [&](Value buffer) {
    auto alloc = buffer.getDefiningOp<AllocOp>();
    if (!alloc || alloc.getPool() || bound.contains(buffer))
      return false;
    return llvm::all_of(touchesOf(buffer), [&](int64_t k) {
      return k >= first && k <= last;
    });
  };
  OpBuilder b(program.getContext());
  b.setInsertionPointAfter(kernels[last]);
  IRMapping mapping;
  for (int64_t k = first; k <= last; ++k) {
    for (Value buffer : kernels[k]->getOperands())
      if (!mapping.contains(buffer) && isTemporary(buffer))
        mapping.map(buffer, b.clone(*buffer.getDefiningOp())->getResult(0));
    Operation *kernel = b.clone(*kernels[k], mapping);
    functions.functionOf[kernel] = copy;
    copyOf[kernels[k]] = kernel;
  }
}

LogicalResult ActionProgram::run() {
  Block &body = program.getBody().front();
  for (auto kernel : body.getOps<KernelOp>()) {
    int64_t k = kernels.size();
    kernels.push_back(kernel);
    for (Value buffer : kernel->getOperands()) {
      auto &at = touches[buffer];
      if (at.empty() || at.back() != k)
        at.push_back(k);
    }
  }
  for (Operation &op : body)
    if (isa<OutputOp, GradOp>(op))
      bound.insert(op.getOperand(0));
  if (MeshAttr mesh = program.getMeshAttr())
    pipelineAxis = mesh.getAxisIndex("pp");
  ranges.assign(functions.names.size(), {-1, -1});
  for (auto [k, kernel] : llvm::enumerate(kernels)) {
    auto it = functions.functionOf.find(kernel);
    if (it == functions.functionOf.end())
      return success(); // malformed: rt-plan-memory words it
    auto &range = ranges[it->second];
    if (range.first < 0)
      range.first = k;
    range.second = k;
  }
  runs.assign(functions.names.size(), 0);
  listOf.assign(functions.names.size(), -1);
  for (auto [list, actions] : llvm::enumerate(lists.lists))
    for (size_t a = 0; 3 * a < actions.size(); ++a) {
      int64_t f = actions[3 * a];
      if (f < 0 || f >= static_cast<int64_t>(runs.size()) ||
          ranges[f].first < 0 ||
          (listOf[f] >= 0 && listOf[f] != static_cast<int64_t>(list)))
        return success(); // malformed: rt-plan-memory words it
      ++runs[f];
      listOf[f] = list;
    }

  // The moves, by the action whose run takes them (in list order).
  llvm::MapVector<std::pair<size_t, size_t>, SmallVector<Move>> movesOf;
  for (auto [list, actions] : llvm::enumerate(lists.lists))
    for (size_t e = 0; 3 * e < actions.size(); ++e) {
      int64_t function = actions[3 * e];
      if (runs[function] != 1)
        continue;
      for (int64_t k = ranges[function].first; k <= ranges[function].second;
           ++k) {
        if (kernels[k].getOpcode() != OpCode::AllReduce)
          continue;
        size_t action = 0;
        if (std::optional<Move> move = planMove(k, list, e, action))
          movesOf[{list, action}].push_back(*move);
      }
    }
  if (movesOf.empty())
    return success();

  MLIRContext *context = program.getContext();
  for (auto &[at, moves] : movesOf) {
    auto [list, action] = at;
    int64_t &function = lists.lists[list][3 * action];
    DenseMap<Operation *, Operation *> copyOf;
    int64_t target = function;
    if (runs[function] > 1) {
      target = functions.add(StringAttr::get(
          context, functions.names[function].getValue() + " + reductions"));
      copyForLastRun(function, target, copyOf);
      function = target;
    }
    // Each reduction after its anchor (or the reductions before it there),
    // reducing the sum in place: the result is the sum from then on.
    DenseMap<Operation *, Operation *> lastPlaced;
    for (Move move : moves) {
      Operation *anchor = copyOf.lookup(move.anchor);
      if (!anchor)
        anchor = move.anchor;
      // Past the rest of a run the CUDA device fuses (a weight gradient's
      // bias gradient): a reduction inside would split it. The run's later
      // kernels never touch the sum (its last touch is the anchor).
      Value sum = move.reduction.getInputs()[0];
      if (Operation *end = endOfFusedRun(cast<KernelOp>(anchor), sum, sum))
        anchor = end;
      Operation *&after = lastPlaced.try_emplace(anchor, anchor).first->second;
      move.reduction->moveAfter(after);
      after = move.reduction;
      functions.functionOf[move.reduction] = target;
      Value result = move.reduction.getOutputs()[0];
      Operation *resultAlloc = result.getDefiningOp();
      result.replaceAllUsesWith(sum);
      resultAlloc->erase();
    }
  }
  FailureOr<SmallVector<int64_t>> newIndex =
      functions.write(program, "rt-issue-reductions-early");
  if (failed(newIndex))
    return failure();
  lists.write(program, *newIndex);
  return success();
}

struct IssueReductionsEarly
    : public mlir::rt::impl::RtIssueReductionsEarlyBase<IssueReductionsEarly> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      if (program->hasAttr("functions")) {
        std::optional<KernelFunctions> functions =
            KernelFunctions::read(program);
        std::optional<ActionLists> lists = ActionLists::read(program);
        if (functions && lists &&
            failed(ActionProgram(program, std::move(*functions),
                                 std::move(*lists))
                       .run()))
          signalPassFailure();
        return;
      }
      // Kernels of a pipeline stage run in a stage's order of their own.
      if (program->hasAttr("actions") || program->hasAttr("stage_actions"))
        return;
      SmallVector<KernelOp> reductions;
      for (Operation &op : program.getBody().front())
        if (auto kernel = dyn_cast<KernelOp>(op))
          if (kernel.getOpcode() == OpCode::AllReduce && !kernel.getStage())
            reductions.push_back(kernel);
      for (KernelOp reduction : reductions)
        issueEarly(reduction);
      for (KernelOp reduction : reductions)
        reduceInPlace(reduction);
    });
  }
};

} // namespace
