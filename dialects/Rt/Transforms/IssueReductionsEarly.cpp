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
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/Passes.h"

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
/// the last op before it that writes or defines its operand; with it, its
/// result's rt.alloc when that comes later. Returns whether it moved.
bool issueEarly(KernelOp reduction) {
  Value operand = reduction.getInputs()[0];
  Value result = reduction.getOutputs()[0];
  if (operand == result)
    return false;
  Operation *anchor = nullptr;
  for (Operation *op = reduction->getPrevNode(); op && !anchor;
       op = op->getPrevNode()) {
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      if (writes(kernel, operand) || writes(kernel, result) ||
          uses(*op, result))
        anchor = op;
      continue;
    }
    if (op == operand.getDefiningOp())
      anchor = op;
    else if (op != result.getDefiningOp() && uses(*op, result))
      anchor = op; // a binding of the result stays after its writer
  }
  if (!anchor || anchor->getNextNode() == reduction.getOperation())
    return false;
  Operation *alloc = result.getDefiningOp();
  if (alloc && alloc->getBlock() == reduction->getBlock() &&
      anchor->isBeforeInBlock(alloc)) {
    alloc->moveAfter(anchor);
    anchor = alloc;
  }
  reduction->moveAfter(anchor);
  return true;
}

struct IssueReductionsEarly
    : public mlir::rt::impl::RtIssueReductionsEarlyBase<IssueReductionsEarly> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      // A program of functions and actions runs kernel ranges; with stages
      // each stage's kernels are one range: moving a kernel would cross them.
      if (program->hasAttr("functions") || program->hasAttr("actions") ||
          program->hasAttr("stage_actions"))
        return;
      SmallVector<KernelOp> reductions;
      for (Operation &op : program.getBody().front())
        if (auto kernel = dyn_cast<KernelOp>(op))
          if (kernel.getOpcode() == OpCode::AllReduce && !kernel.getStage())
            reductions.push_back(kernel);
      for (KernelOp reduction : reductions)
        issueEarly(reduction);
    });
  }
};

} // namespace
