//===- FusionCandidates.h - kernels the CUDA device may run as one -*- C++
//-*-===//
//
// The CUDA device fuses some runs of consecutive kernels at load time
// (runtime/cuda/FusionPlan.h, which decides on the decoded executable and
// may still refuse a candidate). Passes that move kernels or place buffers
// keep such runs fusible: rt-issue-reductions-early inserts no reduction
// inside one, and rt-plan-memory places no result of one on bytes the run
// still reads. The candidates' shapes, by opcode and hand-over alone:
//
//   linear -> gelu (tanh) of its result             bias + GeLU epilogue
//   linear_input_grad -> gelu_grad (tanh) of it     DGELU epilogue
//   linear (no bias), linear_input_grad -> add of   the add's other operand
//     its result and another tensor                 as C (beta = 1)
//   linear_weight_grad(_accumulate) -> sum_to of dY bias-gradient epilogue
//   apply_mask -> add reading its result            dropout + residual add
//   cross_entropy -> cross_entropy_grad of logits   loss with its gradient
//   {layer,rms}_norm_param_grad -> _input_grad of   the norm backward, and
//     the same dY and x (-> add of the input grad)  its residual add, and the
//     (-> apply_mask of the add's, else dX)         dropout of the result
//   add -> apply_mask of its result -> add of that  bias + dropout + residual
//     (or add -> add of its result)                 add (tp > 1's row bias)
//   ... add (the three above, or an add alone)      the residual add with the
//     -> {layer,rms}_norm of the add's result       next norm: one row kernel
//   adamw_update run -> sum_squares of some of      the squares summed in the
//     their gradients                               updates' pass
//   silu -> mul of its result and another tensor    SwiGLU's forward
//   mul -> silu_grad of its result (dY)             SwiGLU's backward
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_RT_TRANSFORMS_FUSIONCANDIDATES_H
#define DIALECTS_RT_TRANSFORMS_FUSIONCANDIDATES_H

#include "dialects/Rt/IR/RtOps.h"

namespace mlir::rt {

/// The kernel after `op` in its block (other ops skipped), or null.
inline KernelOp nextKernelAfter(Operation *op) {
  for (op = op->getNextNode(); op; op = op->getNextNode())
    if (auto kernel = dyn_cast<KernelOp>(op))
      return kernel;
  return nullptr;
}

/// The kernels right after `head` that the CUDA device may run as one with
/// it (the shapes above), in order; empty where `head` heads no candidate.
inline SmallVector<KernelOp, 3> fusionPartners(KernelOp head) {
  SmallVector<KernelOp, 3> partners;
  KernelOp next = nextKernelAfter(head);
  if (!next)
    return partners;
  auto reads = [](KernelOp kernel, Value buffer, size_t operand) {
    return kernel && kernel.getInputs().size() > operand &&
           kernel.getInputs()[operand] == buffer;
  };
  auto readsResult = [&](KernelOp kernel, OpCode opcode) {
    return kernel.getOpcode() == opcode && head.getOutputs().size() == 1 &&
           reads(kernel, head.getOutputs()[0], 0);
  };
  // An add of the product and another tensor (not the product twice).
  auto addsResult = [&](KernelOp kernel) {
    return kernel.getOpcode() == OpCode::Add && head.getOutputs().size() == 1 &&
           llvm::count(kernel.getInputs(), head.getOutputs()[0]) == 1;
  };
  // A forward norm of `kernel`'s result.
  auto normOf = [&](KernelOp kernel, KernelOp add) {
    return kernel &&
           (kernel.getOpcode() == OpCode::LayerNorm ||
            kernel.getOpcode() == OpCode::RmsNorm) &&
           add.getOutputs().size() == 1 &&
           reads(kernel, add.getOutputs()[0], 0);
  };
  // The norm after the group's residual add (its last partner) joins it.
  auto withNorm = [&](SmallVector<KernelOp, 3> &group) {
    if (group.empty() || group.back().getOpcode() != OpCode::Add)
      return;
    KernelOp norm = nextKernelAfter(group.back());
    if (normOf(norm, group.back()))
      group.push_back(norm);
  };
  switch (head.getOpcode()) {
  case OpCode::Linear:
    if ((readsResult(next, OpCode::Gelu) && (next.getFlags() & 1)) ||
        (head.getInputs().size() == 2 && addsResult(next)))
      partners.push_back(next);
    break;
  case OpCode::LinearInputGrad:
    if ((readsResult(next, OpCode::GeluGrad) && (next.getFlags() & 1)) ||
        addsResult(next))
      partners.push_back(next);
    break;
  case OpCode::ApplyMask:
    if (next.getOpcode() == OpCode::Add && head.getOutputs().size() == 1 &&
        llvm::is_contained(next.getInputs(), head.getOutputs()[0]))
      partners.push_back(next);
    withNorm(partners);
    break;
  case OpCode::Add:
    // A bias add and the branch's dropout and residual add (or the add).
    if (readsResult(next, OpCode::ApplyMask)) {
      partners.push_back(next);
      KernelOp add = nextKernelAfter(next);
      if (add && add.getOpcode() == OpCode::Add &&
          llvm::count(add.getInputs(), next.getOutputs()[0]) == 1)
        partners.push_back(add);
      else
        partners.clear();
    } else if (addsResult(next)) {
      partners.push_back(next);
    } else if (normOf(next, head)) {
      // A residual add alone and the norm of its result.
      partners.push_back(next);
      break;
    }
    withNorm(partners);
    break;
  case OpCode::LinearWeightGrad:
  case OpCode::LinearWeightGradAccumulate:
    if (next.getOpcode() == OpCode::SumTo && head.getInputs().size() > 1 &&
        reads(next, head.getInputs()[1], 0))
      partners.push_back(next);
    break;
  case OpCode::Silu:
    if (next.getOpcode() == OpCode::Mul && head.getOutputs().size() == 1 &&
        llvm::count(next.getInputs(), head.getOutputs()[0]) == 1)
      partners.push_back(next);
    break;
  case OpCode::Mul:
    if (readsResult(next, OpCode::SiluGrad))
      partners.push_back(next);
    break;
  case OpCode::CrossEntropy:
    if (next.getOpcode() == OpCode::CrossEntropyGrad &&
        reads(next, head.getInputs()[0], 0))
      partners.push_back(next);
    break;
  case OpCode::LayerNormParamGrad:
  case OpCode::RmsNormParamGrad: {
    OpCode input = head.getOpcode() == OpCode::LayerNormParamGrad
                       ? OpCode::LayerNormInputGrad
                       : OpCode::RmsNormInputGrad;
    if (next.getOpcode() != input || head.getInputs().size() < 2 ||
        !reads(next, head.getInputs()[0], 0) ||
        !reads(next, head.getInputs()[1], 1))
      break;
    partners.push_back(next);
    KernelOp add = nextKernelAfter(next);
    if (add && add.getOpcode() == OpCode::Add &&
        llvm::is_contained(add.getInputs(), next.getOutputs()[0]))
      partners.push_back(add);
    // The dropout of the group's result.
    KernelOp last = partners.back();
    KernelOp mask = nextKernelAfter(last);
    if (mask && mask.getOpcode() == OpCode::ApplyMask &&
        mask.getInputs().size() == 2 &&
        mask.getInputs()[0] == last.getOutputs()[0])
      partners.push_back(mask);
    break;
  }
  default:
    break;
  }
  return partners;
}

/// The adamw_update kernels right before `squares` (a sum_squares), in
/// order, where one of them updates with a gradient it sums: the CUDA
/// device's optimizer batch may then sum its squares in its own pass
/// (runtime/cuda/KernelBatches.h squaresAfterBatch, which decides). Empty
/// otherwise.
inline SmallVector<KernelOp> updatesBeforeSquares(KernelOp squares) {
  SmallVector<KernelOp> updates;
  if (squares.getOpcode() != OpCode::SumSquares)
    return updates;
  bool sums = false;
  for (Operation *op = squares->getPrevNode(); op; op = op->getPrevNode()) {
    if (isa<AllocOp>(op))
      continue;
    auto update = dyn_cast<KernelOp>(op);
    if (!update || update.getOpcode() != OpCode::AdamWUpdate ||
        update.getInputs().size() < 2)
      break;
    sums |= llvm::is_contained(squares.getInputs(), update.getInputs()[1]);
    updates.push_back(update);
  }
  if (!sums)
    return {};
  std::reverse(updates.begin(), updates.end());
  return updates;
}

/// The last kernel of the run the CUDA device may fuse that `kernel` is in
/// (as its head or a partner), or `kernel` where it ends none: where a
/// kernel placed just after `kernel` keeps the run whole. Null where one of
/// the run's kernels after `kernel` touches `operand` or `result` (the
/// placed kernel's), which it cannot then come after.
inline Operation *endOfFusedRun(KernelOp kernel, Value operand, Value result) {
  auto touches = [&](KernelOp other) {
    return llvm::is_contained(other->getOperands(), operand) ||
           llvm::is_contained(other->getOperands(), result);
  };
  KernelOp head = kernel;
  // A run is at most four kernels: its head is kernel or one of the three
  // kernels before it.
  for (int back = 0; back < 4 && head; ++back) {
    SmallVector<KernelOp, 3> partners = fusionPartners(head);
    auto at = llvm::find(partners, kernel);
    if (head == kernel || at != partners.end()) {
      auto after = head == kernel ? partners.begin() : std::next(at);
      if (std::any_of(after, partners.end(), touches))
        return nullptr;
      if (after != partners.end())
        return partners.back().getOperation();
    }
    Operation *previous = head->getPrevNode();
    while (previous && !isa<KernelOp>(previous))
      previous = previous->getPrevNode();
    head = dyn_cast_or_null<KernelOp>(previous);
  }
  return kernel.getOperation();
}

/// Moves `kernel` up to just after `anchor` (an op before it in its block),
/// with the `rt.alloc`s of its results that lie between them (placed first,
/// in their order). Returns `kernel`'s op.
inline Operation *moveUpWithAllocs(KernelOp kernel, Operation *anchor) {
  // The allocs between are found by walking there, not by asking the
  // block's order, which each move invalidates (asked after every move,
  // it is recomputed per move).
  for (Operation *op = anchor->getNextNode();
       op && op != kernel.getOperation();) {
    Operation *next = op->getNextNode();
    if (isa<AllocOp>(op) && llvm::any_of(op->getResults(), [&](Value v) {
          return llvm::is_contained(kernel.getOutputs(), v);
        })) {
      op->moveAfter(anchor);
      anchor = op;
    }
    op = next;
  }
  kernel->moveAfter(anchor);
  return kernel.getOperation();
}

/// The nearest op above `collective` (of input 0 into output 0) that it
/// may not move up past: a kernel that writes its operand or touches its
/// result, the op defining its operand, or an op `stops` holds for. Null
/// where there is none.
inline Operation *writerAbove(KernelOp collective,
                              llvm::function_ref<bool(Operation *)> stops) {
  Value operand = collective.getInputs()[0];
  Value result = collective.getOutputs()[0];
  for (Operation *op = collective->getPrevNode(); op; op = op->getPrevNode()) {
    if (op == operand.getDefiningOp() || stops(op))
      return op;
    if (auto kernel = dyn_cast<KernelOp>(op);
        kernel && (llvm::is_contained(kernel.getOutputs(), operand) ||
                   llvm::is_contained(kernel->getOperands(), result)))
      return op;
  }
  return nullptr;
}

/// Moves `collective` (of input 0 into output 0) up to just after
/// `anchor` (an op before it in its block; null: it stays), and past the
/// rest of a fused run that `anchor` is in (it stays where that run
/// touches its operand or result), with the `rt.alloc` of its result
/// where that comes later. Returns whether it moved.
inline bool moveUpAfter(KernelOp collective, Operation *anchor) {
  Value operand = collective.getInputs()[0];
  Value result = collective.getOutputs()[0];
  if (auto kernel = dyn_cast_or_null<KernelOp>(anchor))
    anchor = endOfFusedRun(kernel, operand, result);
  if (!anchor || anchor == collective.getOperation() ||
      anchor->getNextNode() == collective.getOperation())
    return false;
  moveUpWithAllocs(collective, anchor);
  return true;
}

} // namespace mlir::rt

#endif // DIALECTS_RT_TRANSFORMS_FUSIONCANDIDATES_H
