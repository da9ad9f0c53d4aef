//===- ReduceGradientsInBf16.cpp - gradients reduced in bf16 --------------===//
//
// tpc-compile --grad-reduce-dtype bf16: every all_reduce of an f32 gradient
// (its result bound by an rt.grad, or the gradient operand of an optimizer
// update, directly or through adds) is cast to bf16 before and back to f32
// after, so half the bytes cross the wire. In a program of functions the
// new kernels join the all_reduce's function and the ranges are renumbered.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTREDUCEGRADIENTSINBF16
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

bool isUpdate(OpCode op) {
  return op == OpCode::AdamWUpdate || op == OpCode::SgdUpdate ||
         op == OpCode::SgdUpdatePlain;
}

/// Whether `buffer` holds a gradient: bound by an rt.grad, the gradient
/// operand (1) of an optimizer update, or summed by an add into one.
bool isGradient(Value buffer, unsigned depth = 0) {
  if (depth > 8)
    return false;
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (isa<GradOp>(user))
      return true;
    auto kernel = dyn_cast<KernelOp>(user);
    if (!kernel || use.getOperandNumber() >= kernel.getInputs().size())
      continue;
    if (isUpdate(kernel.getOpcode()) && use.getOperandNumber() == 1)
      return true;
    if (kernel.getOpcode() == OpCode::Add &&
        isGradient(kernel.getOutputs()[0], depth + 1))
      return true;
  }
  return false;
}

/// A copy of `alloc` holding `type`, just before `before`.
Value allocLike(AllocOp alloc, MemRefType type, OpBuilder &b) {
  Operation *copy = b.clone(*alloc);
  copy->getResult(0).setType(type);
  return copy->getResult(0);
}

/// `reduction` as a copy of itself with opcode `op`, operand `in` and
/// result `out` and no ints (a cast), at the builder's point.
KernelOp castLike(KernelOp reduction, Value in, Value out, OpBuilder &b) {
  auto cast = cast_if_present<KernelOp>(b.clone(*reduction));
  cast.setOpcode(OpCode::Cast);
  cast->setOperands({in, out});
  cast.setInts(ArrayRef<int64_t>{});
  return cast;
}

struct ReduceGradientsInBf16
    : public mlir::rt::impl::RtReduceGradientsInBf16Base<
          ReduceGradientsInBf16> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      if (failed(runOn(program)))
        signalPassFailure();
    });
  }

  LogicalResult runOn(ProgramOp program) {
    Block &body = program.getBody().front();
    // The function of each kernel (programs run by actions).
    std::optional<KernelFunctions> functions = KernelFunctions::read(program);
    SmallVector<KernelOp> reductions;
    for (auto kernel : body.getOps<KernelOp>()) {
      if (kernel.getOpcode() != OpCode::AllReduce)
        continue;
      auto type = cast<MemRefType>(kernel.getInputs()[0].getType());
      Value result = kernel.getOutputs()[0];
      if (type.getElementType().isF32() && type.getNumElements() > 1 &&
          result.getDefiningOp<AllocOp>() &&
          kernel.getInputs()[0].getDefiningOp<AllocOp>() && isGradient(result))
        reductions.push_back(kernel);
    }
    if (reductions.empty())
      return success();

    // Each reduction's run of consecutive all_reduces (rt-bucket-reductions:
    // the CUDA device issues it as one NCCL group), found before any cast
    // goes in: the casts to bf16 go before the run's first member, the casts
    // back after its last (after the casts back placed so far).
    DenseMap<Operation *, Operation *> runFirst, runEnd;
    for (KernelOp reduction : reductions) {
      Operation *first = reduction, *last = reduction;
      while (first->getPrevNode() && isAllReduce(first->getPrevNode()))
        first = first->getPrevNode();
      while (last->getNextNode() && isAllReduce(last->getNextNode()))
        last = last->getNextNode();
      runFirst[reduction] = first;
      runEnd.try_emplace(first, last);
    }
    OpBuilder b(program.getContext());
    for (KernelOp reduction : reductions) {
      Value grad = reduction.getInputs()[0], result = reduction.getOutputs()[0];
      auto type = cast<MemRefType>(grad.getType());
      MemRefType narrow =
          MemRefType::get(type.getShape(), b.getBF16Type());
      Operation *first = runFirst[reduction];
      b.setInsertionPoint(first);
      Value gradBf16 = allocLike(grad.getDefiningOp<AllocOp>(), narrow, b);
      KernelOp down = castLike(reduction, grad, gradBf16, b);
      Value sumBf16 = allocLike(result.getDefiningOp<AllocOp>(), narrow, b);
      reduction->setOperands({gradBf16, sumBf16});
      Operation *&end = runEnd[first];
      b.setInsertionPointAfter(end);
      KernelOp up = castLike(reduction, sumBf16, result, b);
      end = up;
      if (functions)
        if (auto it = functions->functionOf.find(reduction);
            it != functions->functionOf.end()) {
          int64_t f = it->second;
          functions->functionOf[down] = f;
          functions->functionOf[up] = f;
        }
    }
    // The ranges again: each function's kernels are still contiguous, in
    // the same order.
    if (functions &&
        failed(functions->write(program, "rt-reduce-gradients-in-bf16")))
      return failure();
    return success();
  }
};

} // namespace
