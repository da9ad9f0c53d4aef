//===- FoldPadSums.cpp - pads added up become one concat ------------------===//
//
// The backward of slices that cover a dimension (GPT-2's fused q, k and v
// projection cut into its three parts, Llama's gate and up) pads each
// piece's gradient with zeros to the whole and adds the pads up: three
// pads and two adds each writing the whole tensor, where one concat writes
// it once. This pass finds such sums, a tree of `add` kernels whose leaves
// are `pad` kernels that tile one dimension of the sum exactly, and puts
// a `concat` of the pieces, in offset order, in place of the tree's root.
// The values are the same: x + 0 = x in every float format, so each element
// of the sum is its piece's (a -0 piece element stays -0, where the adds
// made it +0).
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/KernelUses.h"
#include "dialects/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTFOLDPADSUMS
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

/// A sum to fold: its adds (root last) and its pads.
struct PadSum {
  SmallVector<KernelOp> adds, pads;
};

/// Collects the tree of adds under `add` whose leaves are pads; false when
/// some leaf is not a pad written for this sum alone.
bool collect(const KernelUses &uses, KernelOp add, PadSum &sum) {
  for (Value operand : add.getInputs()) {
    KernelOp writer = uses.soleWriter(operand);
    if (!writer || !uses.readOnlyBy(operand, add) ||
        writer->getBlock() != add->getBlock())
      return false;
    if (writer.getOpcode() == OpCode::Pad) {
      sum.pads.push_back(writer);
    } else if (writer.getOpcode() == OpCode::Add) {
      if (!collect(uses, writer, sum))
        return false;
    } else {
      return false;
    }
  }
  sum.adds.push_back(add);
  return true;
}

/// The pieces of `sum` (the pads' inputs) in offset order when the pads,
/// all along one dimension, tile the result's dimension exactly, and each
/// piece is written once before its pad; else empty.
SmallVector<Value> piecesOf(const KernelUses &uses, const PadSum &sum,
                            Value result,
                            int64_t &dim) {
  auto type = cast<MemRefType>(result.getType());
  SmallVector<std::pair<int64_t, KernelOp>> byOffset;
  for (KernelOp pad : sum.pads) {
    ArrayRef<int64_t> ints = pad.getInts();
    auto padType = cast<MemRefType>(pad.getOutputs()[0].getType());
    auto pieceType = cast<MemRefType>(pad.getInputs()[0].getType());
    if (ints.size() != 2 || padType != type ||
        pieceType.getElementType() != type.getElementType() ||
        (!byOffset.empty() && ints[0] != dim))
      return {};
    dim = ints[0];
    Value piece = pad.getInputs()[0];
    KernelOp writer = uses.soleWriter(piece);
    if (!writer || uses.position.lookup(writer) >= uses.position.lookup(pad))
      return {};
    byOffset.push_back({ints[1], pad});
  }
  llvm::sort(byOffset, [](const auto &a, const auto &b) {
    return a.first < b.first;
  });
  SmallVector<Value> pieces;
  int64_t next = 0;
  for (auto [offset, pad] : byOffset) {
    if (offset != next)
      return {};
    Value piece = pad.getInputs()[0];
    next += cast<MemRefType>(piece.getType()).getDimSize(dim);
    pieces.push_back(piece);
  }
  if (next != type.getDimSize(dim))
    return {};
  return pieces;
}

struct FoldPadSums
    : public mlir::rt::impl::RtFoldPadSumsBase<FoldPadSums> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      if (failed(runOn(program)))
        signalPassFailure();
    });
  }

  LogicalResult runOn(ProgramOp program) {
    KernelUses uses = KernelUses::of(program);
    SmallVector<KernelOp> adds;
    for (auto kernel : program.getBody().front().getOps<KernelOp>())
      if (kernel.getOpcode() == OpCode::Add)
        adds.push_back(kernel);
    std::optional<KernelFunctions> functions = KernelFunctions::read(program);
    DenseSet<Operation *> folded;
    OpBuilder b(program.getContext());
    bool changed = false;
    // Roots last in program order come first: a tree's inner adds are
    // visited after its root and skipped.
    for (KernelOp root : llvm::reverse(adds)) {
      if (folded.contains(root))
        continue;
      Value result = root.getOutputs()[0];
      if (llvm::is_contained(root.getInputs(), result))
        continue; // an accumulator
      PadSum sum;
      if (!collect(uses, root, sum) || sum.pads.size() < 2)
        continue;
      int64_t dim = 0;
      SmallVector<Value> pieces = piecesOf(uses, sum, result, dim);
      if (pieces.empty())
        continue;
      // One function and one stage for all of them (ranges stay whole).
      auto sameRange = [&](KernelOp k) {
        return k.getStage() == root.getStage() &&
               (!functions || functions->functionOf.lookup(k) ==
                                  functions->functionOf.lookup(root));
      };
      if (!llvm::all_of(sum.adds, sameRange) ||
          !llvm::all_of(sum.pads, sameRange))
        continue;
      b.setInsertionPoint(root);
      auto concat = KernelOp::create(
          b, root.getLoc(), OpCodeAttr::get(b.getContext(), OpCode::Concat),
          pieces, ValueRange{result}, b.getDenseI64ArrayAttr({dim}),
          b.getDenseF64ArrayAttr({}), b.getUI32IntegerAttr(0),
          /*splits=*/nullptr, root.getStageAttr());
      for (const NamedAttribute &attr : root->getDiscardableAttrs())
        concat->setAttr(attr.getName(), attr.getValue());
      if (functions)
        functions->functionOf[concat] = functions->functionOf.lookup(root);
      SmallVector<Value> dead;
      for (KernelOp kernel : llvm::concat<KernelOp>(sum.adds, sum.pads)) {
        folded.insert(kernel);
        if (functions)
          functions->functionOf.erase(kernel);
        if (kernel != root)
          dead.push_back(kernel.getOutputs()[0]);
        kernel->erase();
      }
      for (Value buffer : dead)
        if (buffer.use_empty())
          buffer.getDefiningOp()->erase();
      changed = true;
    }
    if (!changed || !functions)
      return success();
    return functions->writeWithActions(program, "rt-fold-pad-sums");
  }
};

} // namespace
