//===- PadVocab.cpp - dist-pad-vocab --------------------------------------===//
//
// Pads the vocabulary of the LM head and the embedding tables to a multiple
// of the tensor-parallel size; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPADVOCAB
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

LogicalResult padFunction(func::FuncOp func, int64_t multiple) {
  SmallVector<tpc::CrossEntropyOp> losses(func.getOps<tpc::CrossEntropyOp>());
  DenseMap<unsigned, std::pair<unsigned, int64_t>> padded; // arg -> dim, size
  DenseMap<Operation *, int64_t> vocabOf;
  for (tpc::CrossEntropyOp loss : losses) {
    auto logits = cast<RankedTensorType>(loss.getLogits().getType());
    int64_t vocab = logits.getShape().back();
    if (vocab % multiple == 0)
      continue;
    int64_t size = (vocab + multiple - 1) / multiple * multiple;
    auto head = loss.getLogits().getDefiningOp<tpc::LinearOp>();
    BlockArgument weight =
        head ? argumentBehindCasts(head.getWeight()) : nullptr;
    if (!weight || head.getBias())
      return loss.emitError() << "cannot pad the vocabulary (" << vocab
                              << ") to a multiple of " << multiple
                              << ": the logits do not come from a bias-free "
                                 "tpc.linear of a parameter";
    unsigned dim = head.getLayout() == tpc::WeightLayout::OutIn
                       ? 0
                       : cast<RankedTensorType>(weight.getType()).getRank() - 1;
    padded[weight.getArgNumber()] = {dim, size};
    vocabOf[loss] = vocab;
    // Embedding tables of the same vocabulary (tied or not).
    for (auto embedding : func.getOps<tpc::EmbeddingOp>())
      if (BlockArgument table = argumentBehindCasts(embedding.getTable());
          table &&
          cast<RankedTensorType>(table.getType()).getDimSize(0) == vocab)
        padded[table.getArgNumber()] = {0, size};
  }
  if (padded.empty())
    return success();
  Builder builder(func.getContext());
  SmallVector<Type> returned(func.getResultTypes());
  for (auto &[argNumber, dimSize] : padded) {
    BlockArgument arg = func.getArgument(argNumber);
    auto type = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> shape(type.getShape());
    func.setArgAttr(argNumber, kUnpaddedShapeAttr,
                    builder.getDenseI64ArrayAttr(shape));
    shape[dimSize.first] = dimSize.second;
    arg.setType(type.clone(shape));
  }
  if (failed(inferTypesAgain(func)))
    return failure();
  for (auto &[op, vocab] : vocabOf)
    op->setAttr("vocab", builder.getI64IntegerAttr(vocab));
  // What the function returns keeps its size: cut the padding off again.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder cutter(ret);
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    auto want = cast<RankedTensorType>(returned[i]);
    auto have = cast<RankedTensorType>(operand.getType());
    if (want == have)
      continue;
    int64_t last = have.getRank() - 1;
    Value cut = tpc::SliceOp::create(cutter, ret.getLoc(), operand, last, 0,
                                     want.getShape().back());
    ret.setOperand(i, cut);
  }
  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getBody().front().getArgumentTypes(), returned));
  return success();
}

struct DistPadVocabPass
    : public dist::impl::DistPadVocabBase<DistPadVocabPass> {
  using Base::Base;
  void runOnOperation() override {
    if (multiple < 1) {
      getOperation().emitError()
          << "dist-pad-vocab: multiple " << static_cast<int64_t>(multiple)
          << " must be positive";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock() &&
          failed(padFunction(func, multiple)))
        return signalPassFailure();
  }
};

} // namespace
