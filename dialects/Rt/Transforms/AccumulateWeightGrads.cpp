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
// An embedding's share may also be added to another buffer into a buffer
// of its own, `out = add(head, share)`: a tied embedding's gradient (the
// LM head's share plus the embedding's; with microbatches then added into
// the sum), or, unrolled, the microbatches' running sum (`t1 = add(t0,
// share1)`). Where `head` is read by that add alone and written before the
// scatter, the scatter adds into it in place (`embedding_grad_accumulate`)
// and `head` takes `out`'s place: the same two-way sum, so the association
// is unchanged and the values are the pair's as above. One microbatch (the
// MFU model): two vocabulary-sized f32 tables neither written nor read, nor
// planned.
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

/// Whether `first` runs before `second` in every run of them: one block,
/// stage and function (an action list runs a function's kernels in order).
bool runsBefore(KernelOp first, KernelOp second,
                const std::optional<KernelFunctions> &functions) {
  if (first->getBlock() != second->getBlock() ||
      !first->isBeforeInBlock(second) || first.getStage() != second.getStage())
    return false;
  return !functions || functions->functionOf.lookup(first) ==
                           functions->functionOf.lookup(second);
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
      !uses.readOnlyBy(share, add) || !runsBefore(gemm, add, functions) ||
      gemm.getSplitsAttr() || llvm::is_contained(gemm.getInputs(), sum))
    return nullptr;
  if (touchedBetween(gemm, add, sum))
    return nullptr;
  return gemm;
}

/// An embedding's share added to another buffer into one of their own:
/// `out = add(head, share)` (either order, one f32 type), where `share` is an
/// embedding_grad's as in foldableShare and `head` an unbound rt.alloc read
/// by the add alone and written only before the scatter (in its block, stage
/// and function), so that the scatter can add into it in place.
struct TiedShares {
  KernelOp scatter, add;
  Value head;
};

std::optional<TiedShares>
foldableTiedShares(const KernelUses &uses,
                   const std::optional<KernelFunctions> &functions,
                   KernelOp add) {
  if (add.getInputs().size() != 2 || add.getOutputs().size() != 1)
    return std::nullopt;
  Value out = add.getOutputs()[0];
  if (!out.getDefiningOp<AllocOp>() ||
      !cast<MemRefType>(out.getType()).getElementType().isF32() ||
      uses.writers.lookup(out).size() != 1)
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    Value share = add.getInputs()[i], head = add.getInputs()[1 - i];
    if (share == head || share == out || head == out ||
        share.getType() != out.getType() || head.getType() != out.getType())
      continue;
    KernelOp scatter = uses.soleWriter(share);
    if (!scatter || scatter.getOpcode() != OpCode::EmbeddingGrad ||
        scatter.getSplitsAttr() || !uses.readOnlyBy(share, add) ||
        !runsBefore(scatter, add, functions) ||
        llvm::is_contained(scatter.getInputs(), head))
      continue;
    if (!head.getDefiningOp<AllocOp>() || uses.bound.contains(head) ||
        !uses.readOnlyBy(head, add))
      continue;
    auto headWriters = uses.writers.lookup(head);
    if (headWriters.empty() || !llvm::all_of(headWriters, [&](KernelOp writer) {
          return runsBefore(writer, scatter, functions);
        }))
      continue;
    return TiedShares{scatter, add, head};
  }
  return std::nullopt;
}

/// `kernel` in its accumulating form, adding into `sum`, where it was.
KernelOp createAccumulating(OpBuilder &b, KernelOp kernel, Value sum) {
  b.setInsertionPoint(kernel);
  SmallVector<Value> inputs(kernel.getInputs());
  inputs.push_back(sum);
  auto fused = KernelOp::create(
      b, kernel.getLoc(),
      OpCodeAttr::get(b.getContext(), *accumulatingForm(kernel.getOpcode())),
      inputs, ValueRange{sum}, kernel.getIntsAttr(), kernel.getFloatsAttr(),
      kernel.getFlagsAttr(), /*splits=*/nullptr, kernel.getStageAttr());
  for (const NamedAttribute &attr : kernel->getDiscardableAttrs())
    fused->setAttr(attr.getName(), attr.getValue());
  return fused;
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
    SmallVector<TiedShares> tied;
    for (auto add : program.getBody().front().getOps<KernelOp>()) {
      if (add.getOpcode() != OpCode::Add)
        continue;
      if (KernelOp gemm = foldableShare(uses, functions, add))
        pairs.push_back({gemm, add});
      else if (std::optional<TiedShares> shares =
                   foldableTiedShares(uses, functions, add))
        tied.push_back(*shares);
    }
    if (pairs.empty() && tied.empty())
      return success();
    OpBuilder b(program.getContext());
    // Where the GEMM (or scatter) ran: its inputs are live there (the memory
    // plan comes later); the sum is untouched until the add.
    auto fold = [&](KernelOp kernel, KernelOp add, Value sum) {
      Value share = kernel.getOutputs()[0];
      KernelOp fused = createAccumulating(b, kernel, sum);
      if (functions) {
        functions->functionOf[fused] = functions->functionOf.lookup(kernel);
        functions->functionOf.erase(kernel);
        functions->functionOf.erase(add);
      }
      add->erase();
      kernel->erase();
      if (share.use_empty())
        share.getDefiningOp()->erase();
    };
    for (auto [gemm, add] : pairs)
      fold(gemm, add, add.getInputs()[0]);
    // A chain (the unrolled microbatches' `t1 = add(t0, share1)`): t0 is
    // gone by the time its successor folds, replaced by the head it became.
    DenseMap<Value, Value> becameHead;
    for (TiedShares &shares : tied) {
      Value out = shares.add.getOutputs()[0];
      Value head = becameHead.lookup(shares.head);
      if (!head)
        head = shares.head;
      fold(shares.scatter, shares.add, head);
      out.replaceAllUsesWith(head);
      out.getDefiningOp()->erase();
      becameHead[out] = head;
    }
    if (!functions)
      return success();
    return functions->writeWithActions(program, "rt-accumulate-weight-grads");
  }
};

} // namespace
