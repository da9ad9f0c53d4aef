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
// The sum may also be a buffer of its own: `out = add(t, share)`, where `t`
// is used by nothing after the share's first writer but the add (unrolled
// microbatches' running sum `t1 = add(t0, share1)`; a tied table's
// `add(head, share)`, the LM head's share plus the embedding's). The
// share's writers then add into `t`, which takes `out`'s place. And a share
// may have been written by its GEMM and then added into by an accumulating
// kernel (the tied head's share, once the embedding's scatter adds into
// it): all its writers then add into the sum, the GEMM first. Folds make
// folds (the tied pair, then its add into the sum), so the pass works in
// rounds; a running sum an add wrote waits for that add to fold, so that
// the unrolled sums associate as the microbatch functions' in-place ones.
// One microbatch (the MFU model): two vocabulary-sized f32 tables neither
// written nor read, nor planned. With microbatches, a tied table on one
// stage: the head's V·h f32 share neither written nor read per microbatch.
//
// The values: the add computed round(sum + round(share)). A GEMM that sums
// the microbatch's tokens in one block computes the same where beta = 1
// adds the rounded product into the sum (OpenBLAS's: until 2026-12-05
// test/Compile/train-actions.test compared its actions against an unrolled
// step of plain GEMMs and adds, bit for bit); one that sums them in blocks
// (OpenBLAS past a few hundred tokens, cuBLASLt's split-K) adds each
// block's partial product into the sum in turn: the same float32 additions
// in another order, within float32's bound for them (OpenBLAS's sgemm of a
// [96, 120] sum over 2000 rows: about half its elements differ in the last
// bits from the add's). A tied share written by the head's GEMM and the
// embedding's scatter was rounded once more: sum + (head + rows) is now
// (sum + head) + rows. The unrolled step and the microbatch functions fold
// alike, so they still train bit for bit the same
// (test/Compile/train-actions.test).
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

/// The kernels with a form that adds their result into a sum (its last
/// input), and that form.
constexpr std::pair<OpCode, OpCode> kAccumulatingForms[] = {
    {OpCode::LinearWeightGrad, OpCode::LinearWeightGradAccumulate},
    {OpCode::EmbeddingGrad, OpCode::EmbeddingGradAccumulate}};

/// The kernel that adds `opcode`'s result into a sum, if there is one.
std::optional<OpCode> accumulatingForm(OpCode opcode) {
  for (auto [plain, accumulating] : kAccumulatingForms)
    if (opcode == plain)
      return accumulating;
  return std::nullopt;
}

/// Whether `opcode` adds into its last input, its result.
bool isAccumulating(OpCode opcode) {
  return llvm::any_of(kAccumulatingForms,
                      [&](auto forms) { return forms.second == opcode; });
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
bool runsBefore(const KernelUses &uses, KernelOp first, KernelOp second,
                const std::optional<KernelFunctions> &functions) {
  if (first->getBlock() != second->getBlock() ||
      uses.position.lookup(first) >= uses.position.lookup(second) ||
      first.getStage() != second.getStage())
    return false;
  return !functions || functions->functionOf.lookup(first) ==
                           functions->functionOf.lookup(second);
}

/// A share's writers when they can write into another buffer instead: the
/// share is an unbound rt.alloc written first by a kernel with an
/// accumulating form, then only by accumulating kernels adding into it (a
/// tied table's head GEMM, then the embedding's scatter), each before `add`
/// in its block, stage and function; and read by those and `add` alone.
std::optional<SmallVector<KernelOp>>
shareWriters(const KernelUses &uses,
             const std::optional<KernelFunctions> &functions, Value share,
             KernelOp add) {
  if (!share.getDefiningOp<AllocOp>() || uses.bound.contains(share) ||
      llvm::count(add.getInputs(), share) != 1)
    return std::nullopt;
  SmallVector<KernelOp> writers(uses.writers.lookup(share));
  if (writers.empty())
    return std::nullopt;
  KernelOp first = writers.front();
  if (!accumulatingForm(first.getOpcode()) ||
      llvm::is_contained(first.getInputs(), share))
    return std::nullopt;
  for (KernelOp writer : llvm::drop_begin(writers))
    if (!isAccumulating(writer.getOpcode()) ||
        writer.getInputs().back() != share ||
        llvm::count(writer.getInputs(), share) != 1)
      return std::nullopt;
  for (KernelOp writer : writers)
    if (writer.getSplitsAttr() || writer.getOutputs().size() != 1 ||
        !runsBefore(uses, writer, add, functions))
      return std::nullopt;
  for (KernelOp reader : uses.readers.lookup(share))
    if (reader != add && !llvm::is_contained(writers, reader))
      return std::nullopt;
  return writers;
}

/// `out = add(sum, share)` where the share's writers can add into `sum`
/// instead, `out` then being `sum`.
struct ShareFold {
  KernelOp add;
  Value sum, share;
  SmallVector<KernelOp> writers;
};

/// The fold of `add`, if it has one: f32 operands of one type, either order;
/// the share's writers as in shareWriters, none reading `sum`; and either
/// the add accumulates in place (`out` is `sum`, untouched from the share's
/// first writer to the add), or `out` is an rt.alloc of its own (the add its
/// one writer) and `sum` an unbound rt.alloc used by nothing from the
/// share's first writer on but the add (a running sum: `t1 = add(t0, s1)`;
/// a tied table's `add(head, share)`; the two in one pool or none), so that
/// `sum` can take `out`'s place.
/// A running sum that an add wrote waits until that add has folded (a later
/// round): the sums then associate as the in-place adds of the microbatch
/// functions do, (((0 + a) + b) + c), whatever order the folds become
/// possible in.
std::optional<ShareFold>
foldableShare(const KernelUses &uses,
              const std::optional<KernelFunctions> &functions, KernelOp add) {
  if (add.getInputs().size() != 2 || add.getOutputs().size() != 1)
    return std::nullopt;
  Value out = add.getOutputs()[0];
  if (!cast<MemRefType>(out.getType()).getElementType().isF32())
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    Value sum = add.getInputs()[i], share = add.getInputs()[1 - i];
    if (share == sum || share == out || sum.getType() != out.getType() ||
        share.getType() != out.getType())
      continue;
    std::optional<SmallVector<KernelOp>> writers =
        shareWriters(uses, functions, share, add);
    if (!writers || llvm::any_of(*writers, [&](KernelOp writer) {
          return llvm::is_contained(writer.getInputs(), sum);
        }))
      continue;
    KernelOp first = writers->front();
    if (out == sum) {
      if (touchedBetween(first, add, sum))
        continue;
      return ShareFold{add, sum, share, std::move(*writers)};
    }
    // (`sum` takes `out`'s place in every run: one pool, or none, for both.)
    auto outAlloc = out.getDefiningOp<AllocOp>();
    auto sumAlloc = sum.getDefiningOp<AllocOp>();
    if (!outAlloc || uses.writers.lookup(out).size() != 1 || !sumAlloc ||
        uses.bound.contains(sum) ||
        outAlloc.getPoolAttr() != sumAlloc.getPoolAttr())
      continue;
    auto usedBeforeFirst = [&](KernelOp kernel) {
      return kernel == add || runsBefore(uses, kernel, first, functions);
    };
    auto isAdd = [](KernelOp kernel) {
      return kernel.getOpcode() == OpCode::Add;
    };
    if (!llvm::all_of(uses.readers.lookup(sum), usedBeforeFirst) ||
        !llvm::all_of(uses.writers.lookup(sum), usedBeforeFirst) ||
        llvm::any_of(uses.writers.lookup(sum), isAdd))
      continue;
    return ShareFold{add, sum, share, std::move(*writers)};
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
    std::optional<KernelFunctions> functions = KernelFunctions::read(program);
    OpBuilder b(program.getContext());
    // In rounds: a fold can make another (a tied table's scatter adds into
    // the head's share, which can then add into the microbatches' sum; an
    // unrolled running sum's next add reads the last one's result). Within a
    // round no two folds share a buffer.
    bool folded = false;
    while (true) {
      KernelUses uses = KernelUses::of(program);
      SmallVector<ShareFold> folds;
      DenseSet<Value> claimed;
      for (auto add : program.getBody().front().getOps<KernelOp>()) {
        if (add.getOpcode() != OpCode::Add)
          continue;
        std::optional<ShareFold> fold = foldableShare(uses, functions, add);
        if (!fold)
          continue;
        Value buffers[] = {fold->sum, fold->share, add.getOutputs()[0]};
        if (llvm::any_of(buffers, [&](Value v) { return claimed.contains(v); }))
          continue;
        claimed.insert(std::begin(buffers), std::end(buffers));
        folds.push_back(std::move(*fold));
      }
      if (folds.empty())
        break;
      for (ShareFold &fold : folds)
        applyFold(b, functions, fold);
      folded = true;
    }
    if (!folded || !functions)
      return success();
    return functions->writeWithActions(program, "rt-accumulate-weight-grads");
  }

  /// The share's first writer adds into the sum where it ran (its inputs are
  /// live there; the memory plan comes later), the others add into the sum
  /// instead of the share, and the add and the share go; `sum` takes the
  /// add's result's place.
  static void applyFold(OpBuilder &b, std::optional<KernelFunctions> &functions,
                        ShareFold &fold) {
    KernelOp first = fold.writers.front();
    KernelOp fused = createAccumulating(b, first, fold.sum);
    if (functions) {
      functions->functionOf[fused] = functions->functionOf.lookup(first);
      functions->functionOf.erase(first);
      functions->functionOf.erase(fold.add);
    }
    first->erase();
    for (KernelOp writer : llvm::drop_begin(fold.writers))
      writer->replaceUsesOfWith(fold.share, fold.sum);
    Value out = fold.add.getOutputs()[0];
    fold.add->erase();
    if (out != fold.sum) {
      out.replaceAllUsesWith(fold.sum);
      out.getDefiningOp()->erase();
    }
    if (fold.share.use_empty())
      fold.share.getDefiningOp()->erase();
  }
};

} // namespace
