//===- PrefetchGathers.cpp - each all_gather one collective early ---------===//
//
// With sequence parallelism a layer's weight gradients gather their
// sharded inputs again (and, where W is deferred past B, the row-parallel
// output gradients too): all_gathers whose operands were written long
// before, each placed just before the kernel that reads its result. A
// device that runs collectives on streams of their own (the CUDA device)
// overlaps a collective only with the kernels after it in the program, so
// this pass moves each all_gather up to just after the communication
// before it (in the program as it was): the gather then runs while the
// kernels between them do, the previous gather's readers among them
// (Megatron's overlap of the input's all-gather with the input gradient's
// GEMM). One collective ahead only: where one gathered result was live at
// a time, two are.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/Communicates.h"
#include "dialects/Rt/Transforms/FusionCandidates.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/Passes.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTPREFETCHGATHERS
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

bool uses(Operation &op, Value buffer) {
  return llvm::is_contained(op.getOperands(), buffer);
}

/// Moves `gather` up to just after `limit` (the communication before it),
/// or less far: not past a kernel that writes its operand or touches its
/// result, another function's kernel, its operand's definition or a
/// binding of its result; and not into a fused run. The result's alloc
/// comes along where it comes later. Returns whether it moved.
bool prefetch(KernelOp gather, Operation *limit,
              const std::optional<KernelFunctions> &functions) {
  Value operand = gather.getInputs()[0];
  Value result = gather.getOutputs()[0];
  auto functionOf = [&](Operation *kernel) -> int64_t {
    if (!functions)
      return -1;
    auto it = functions->functionOf.find(kernel);
    return it == functions->functionOf.end() ? -2 : it->second;
  };
  int64_t function = functionOf(gather);
  Operation *anchor = nullptr;
  for (Operation *op = gather->getPrevNode(); op && !anchor;
       op = op->getPrevNode()) {
    if (op == limit || op == operand.getDefiningOp()) {
      anchor = op;
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      if (functionOf(kernel) != function || communicates(kernel) ||
          llvm::is_contained(kernel.getOutputs(), operand) ||
          uses(*kernel, result))
        anchor = op;
    } else if (op != result.getDefiningOp() && uses(*op, result)) {
      anchor = op; // a binding of the result stays after its writer
    }
  }
  return moveUpAfter(gather, anchor);
}

struct RtPrefetchGathersPass
    : public rt::impl::RtPrefetchGathersBase<RtPrefetchGathersPass> {
  void runOnOperation() override {
    for (ProgramOp program : getOperation().getOps<ProgramOp>()) {
      std::optional<KernelFunctions> functions = KernelFunctions::read(program);
      // Each gather with the communication before it, in the program as
      // it is now; the last first, so that the one before it is still
      // there (each goes up to where that one was, not past where it goes).
      SmallVector<std::pair<KernelOp, Operation *>> gathers;
      Operation *previous = nullptr;
      for (KernelOp kernel : program.getBody().front().getOps<KernelOp>()) {
        if (!communicates(kernel))
          continue;
        if (kernel.getOpcode() == OpCode::AllGather &&
            kernel.getInputs()[0] != kernel.getOutputs()[0])
          gathers.push_back({kernel, previous});
        previous = kernel;
      }
      bool moved = false;
      for (auto [gather, limit] : llvm::reverse(gathers))
        moved |= prefetch(gather, limit, functions);
      // Each gather stayed in its function: the ranges are rewritten as
      // they were, kernel for kernel (a check that they still hold).
      if (moved && functions &&
          failed(functions->write(program, "rt-prefetch-gathers")))
        return signalPassFailure();
    }
  }
};

} // namespace
