//===- BucketReductions.cpp - small all_reduces joined into runs ----------===//
//
// rt-issue-reductions-early places each gradient's all_reduce just after
// its last writer: a GPT-2 layer's twelve gradients are reduced by about
// as many collectives, half of them a norm's or a bias's few kilobytes,
// each paying the collective's latency. The CUDA device issues a run of
// consecutive all_reduces of one communicator as one NCCL group, which
// NCCL aggregates into one launch. This pass makes such runs: each
// all_reduce moves down to just before the next one of its group when
// nothing between them touches its buffers and the run stays within the
// bucket's bytes (PyTorch DDP's 25 MiB by default). Reductions are visited
// last to first, so a run grows at its front and each moved reduction
// joins the run that already formed after it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/Passes.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTBUCKETREDUCTIONS
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

int64_t operandBytes(KernelOp reduction) {
  return getBufferBytes(cast<MemRefType>(reduction.getInputs()[0].getType()));
}

struct BucketReductions
    : public mlir::rt::impl::RtBucketReductionsBase<BucketReductions> {
  using RtBucketReductionsBase::RtBucketReductionsBase;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    getOperation().walk([&](ProgramOp program) { runOn(program); });
  }

  void runOn(ProgramOp program) {
    Block &body = program.getBody().front();
    std::optional<KernelFunctions> functions = KernelFunctions::read(program);
    auto functionOf = [&](Operation *op) -> int64_t {
      if (!functions)
        return -1;
      auto it = functions->functionOf.find(op);
      return it == functions->functionOf.end() ? -1 : it->second;
    };
    // Members of one run: the same group and stage, the same function.
    auto sameGroup = [&](KernelOp a, KernelOp b) {
      return a.getInts() == b.getInts() && a.getStage() == b.getStage() &&
             functionOf(a) == functionOf(b);
    };

    SmallVector<KernelOp> reductions;
    for (Operation &op : body)
      if (isAllReduce(&op))
        reductions.push_back(cast<KernelOp>(op));
    for (KernelOp reduction : llvm::reverse(reductions)) {
      int64_t bytes = operandBytes(reduction);
      if (bytes > bucketBytes)
        continue;
      // The next all_reduce; nothing between may read or write this one's
      // buffers (a kernel's results are among its operands).
      Value operand = reduction.getInputs()[0];
      Value result = reduction.getOutputs()[0];
      Operation *next = reduction->getNextNode();
      bool blocked = false;
      for (; next && !isAllReduce(next); next = next->getNextNode())
        if (llvm::is_contained(next->getOperands(), operand) ||
            llvm::is_contained(next->getOperands(), result)) {
          blocked = true;
          break;
        }
      if (blocked || !next || next == reduction->getNextNode())
        continue;
      auto head = cast<KernelOp>(next);
      if (!sameGroup(reduction, head))
        continue;
      // The run that starts at `head`: its consecutive members' bytes.
      int64_t run = 0;
      for (Operation *op = head;
           op && isAllReduce(op) && sameGroup(head, cast<KernelOp>(op));
           op = op->getNextNode())
        run += operandBytes(cast<KernelOp>(op));
      if (bytes + run > bucketBytes)
        continue;
      reduction->moveBefore(head);
    }
  }
};

} // namespace
