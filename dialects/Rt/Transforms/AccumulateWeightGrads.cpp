//===- AccumulateWeightGrads.cpp - weight grads summed by their GEMM ------===//
//
// With microbatches, each microbatch's weight gradient is a share that
// tpc-lower-to-rt adds into the gradient's sum right after it is computed:
// a `linear_weight_grad` writes the share into a buffer of its own, then an
// `add` reads the sum and the share and writes the sum. This pass makes the
// GEMM add into the sum itself (`linear_weight_grad_accumulate`, beta = 1),
// so that the share is neither written nor read and needs no buffer: per
// microbatch and weight, one weight-sized write and two reads less, one
// kernel less, and the largest share's bytes off the memory plan. An
// `embedding_grad` and its add become `embedding_grad_accumulate` the same
// way, which reads and writes only the rows the ids hit (a 1T model's
// first pipeline stage spent a fifth of its step writing, reading and
// adding 655 MB tables per microbatch). Its values are the pair's: each
// hit row's sum of dY rows from 0, added to the sum; a row no id hits is
// left as it is, where the add turned a -0 into +0.
//
// The values: the add computed round(sum + round(share)). A GEMM that sums
// the microbatch's tokens in one block computes the same, bit for bit
// (test/Compile/train-actions.test: the actions' gradients equal the
// unrolled step's, which has no accumulating GEMM); one that sums them in
// blocks (OpenBLAS past a few hundred tokens, cuBLASLt's split-K) adds each
// block's partial product into the sum in turn: the same float32 additions
// in another order, within float32's bound for them (OpenBLAS's sgemm of a
// [96, 120] sum over 2000 rows: about half its elements differ in the last
// bits from the add's).
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/KernelUses.h"
#include "dialects/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTACCUMULATEWEIGHTGRADS
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

/// The kernel that adds `opcode`'s result into a sum, if there is one.
std::optional<OpCode> accumulatingForm(OpCode opcode) {
  switch (opcode) {
  case OpCode::LinearWeightGrad:
    return OpCode::LinearWeightGradAccumulate;
  case OpCode::EmbeddingGrad:
    return OpCode::EmbeddingGradAccumulate;
  default:
    return std::nullopt;
  }
}

/// Whether a kernel strictly between `from` and `to` (one block) reads or
/// writes `buffer`.
bool touchedBetween(KernelOp from, KernelOp to, Value buffer) {
  for (Operation *op = from->getNextNode(); op && op != to.getOperation();
       op = op->getNextNode())
    if (llvm::is_contained(op->getOperands(), buffer))
      return true;
  return false;
}

/// The `linear_weight_grad` or `embedding_grad` whose share `add` adds into
/// its sum, when the pair folds: the add is an accumulator (`sum = sum +
/// share`, one f32 type), the share an rt.alloc written by that GEMM alone and
/// read by the add alone, before it in the same block, stage and function, and
/// the sum untouched between them.
KernelOp foldableShare(const KernelUses &uses,
                       const std::optional<KernelFunctions> &functions,
                       KernelOp add) {
  if (add.getInputs().size() != 2 || add.getOutputs().size() != 1)
    return nullptr;
  Value sum = add.getInputs()[0], share = add.getInputs()[1];
  if (add.getOutputs()[0] != sum || share == sum ||
      sum.getType() != share.getType() ||
      !cast<MemRefType>(sum.getType()).getElementType().isF32())
    return nullptr;
  KernelOp gemm = uses.soleWriter(share);
  if (!gemm || !accumulatingForm(gemm.getOpcode()) ||
      !uses.readOnlyBy(share, add) || gemm->getBlock() != add->getBlock() ||
      !gemm->isBeforeInBlock(add) || gemm.getStage() != add.getStage() ||
      gemm.getSplitsAttr() || llvm::is_contained(gemm.getInputs(), sum))
    return nullptr;
  if (functions && functions->functionOf.lookup(gemm) !=
                       functions->functionOf.lookup(add))
    return nullptr;
  if (touchedBetween(gemm, add, sum))
    return nullptr;
  return gemm;
}

struct AccumulateWeightGrads
    : public mlir::rt::impl::RtAccumulateWeightGradsBase<
          AccumulateWeightGrads> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      if (failed(runOn(program)))
        signalPassFailure();
    });
  }

  LogicalResult runOn(ProgramOp program) {
    KernelUses uses = KernelUses::of(program);
    std::optional<KernelFunctions> functions = KernelFunctions::read(program);
    SmallVector<std::pair<KernelOp, KernelOp>> pairs;
    for (auto add : program.getBody().front().getOps<KernelOp>())
      if (add.getOpcode() == OpCode::Add)
        if (KernelOp gemm = foldableShare(uses, functions, add))
          pairs.push_back({gemm, add});
    if (pairs.empty())
      return success();
    OpBuilder b(program.getContext());
    for (auto [gemm, add] : pairs) {
      Value sum = add.getInputs()[0], share = gemm.getOutputs()[0];
      // Where the GEMM ran: its inputs are live there (the memory plan
      // comes later); the sum is untouched until the add.
      b.setInsertionPoint(gemm);
      SmallVector<Value> inputs(gemm.getInputs());
      inputs.push_back(sum);
      auto fused = KernelOp::create(
          b, gemm.getLoc(),
          OpCodeAttr::get(b.getContext(), *accumulatingForm(gemm.getOpcode())),
          inputs, ValueRange{sum}, gemm.getIntsAttr(), gemm.getFloatsAttr(),
          gemm.getFlagsAttr(), /*splits=*/nullptr, gemm.getStageAttr());
      for (const NamedAttribute &attr : gemm->getDiscardableAttrs())
        fused->setAttr(attr.getName(), attr.getValue());
      if (functions) {
        functions->functionOf[fused] = functions->functionOf.lookup(gemm);
        functions->functionOf.erase(gemm);
        functions->functionOf.erase(add);
      }
      add->erase();
      gemm->erase();
      if (share.use_empty())
        share.getDefiningOp()->erase();
    }
    if (!functions)
      return success();
    return functions->writeWithActions(program, "rt-accumulate-weight-grads");
  }
};

} // namespace
