//===- PackAttentionQkv.cpp - attention reads q, k, v where they lie ------===//
//
// GPT-2's fused projection (c_attn) writes q, k and v as the three parts of
// one [b, s, 3, heads, d] tensor. tpc-lower-to-rt cuts them out (a slice and
// a reshaping copy each) for the sequence-major `attention`, and its
// gradient puts their gradients back together (a reshaping copy each and
// rt-fold-pad-sums' concat). This pass makes the attention kernels read and
// write the parts in place: `attention_qkv` of the projection's result and
// `attention_qkv_grad` into the concat's result, so that per layer three
// slices and a concat, each reading and writing the tensor once, go
// (attention_lse becomes attention_qkv_lse; a gradient that reads the
// forward's output and lse keeps reading them). The values are the same: the
// kernels compute what `attention` and `attention_grad` compute on the parts
// (test/Rt/pack-attention-qkv.mlir, CpuKernelsTest's
// PackedQkvAttentionIsTheSeqMajorOfItsParts: bit for bit).
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/KernelFunctions.h"
#include "dialects/Rt/Transforms/KernelUses.h"
#include "dialects/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::rt {
#define GEN_PASS_DEF_RTPACKATTENTIONQKV
#include "dialects/Rt/Transforms/Passes.h.inc"
} // namespace mlir::rt

using namespace mlir;
using namespace mlir::rt;

namespace {

constexpr int64_t kParts = 3;

/// The parts' dimension in [b, s, 3, heads, d].
constexpr int64_t kPartDim = 2;

MemRefType typeOf(Value v) { return cast<MemRefType>(v.getType()); }

/// Whether `part` ([b, s, heads, d]) is `whole` ([b, s, 3, heads, d])
/// without its parts' dimension, in the same element type.
bool isPartOf(MemRefType part, MemRefType whole) {
  ArrayRef<int64_t> p = part.getShape(), w = whole.getShape();
  return whole.getRank() == 5 && part.getRank() == 4 && w[kPartDim] == kParts &&
         p[0] == w[0] && p[1] == w[1] && p[2] == w[3] && p[3] == w[4] &&
         part.getElementType() == whole.getElementType();
}

/// One set of q, k and v cut out of one tensor, the attention kernels that
/// read them and the kernels that go.
struct Packing {
  /// The projection's result, [b, s, 3, heads, d].
  Value qkv;
  /// The pool q, k and v are in (the stash of a program of actions).
  std::optional<uint64_t> pool;
  SmallVector<KernelOp> forwards, grads;
  /// Per gradient kernel, the concat its results end in.
  SmallVector<KernelOp> concats;
  /// The slices, copies and concats that go with the kernels above.
  SmallVector<KernelOp> dead;
};

struct Matcher {
  const KernelUses &uses;
  const std::optional<KernelFunctions> &functions;

  int64_t functionOf(KernelOp k) const {
    return functions ? functions->functionOf.lookup(k) : 0;
  }
  bool sameRange(KernelOp a, KernelOp b) const {
    return a.getStage() == b.getStage() && functionOf(a) == functionOf(b);
  }

  /// Part `part` of the forward's operand `operand`: a copy (the reshape)
  /// of a slice of the tensor's parts' dimension, each written once and
  /// read by the next alone. Adds the two kernels to `p.dead`.
  bool matchPart(Value operand, int64_t part, Packing &p) const {
    KernelOp reshape = uses.soleWriter(operand);
    if (!reshape || reshape.getOpcode() != OpCode::Copy)
      return false;
    Value piece = reshape.getInputs()[0];
    KernelOp slice = uses.soleWriter(piece);
    if (!slice || slice.getOpcode() != OpCode::Slice ||
        uses.soleReader(piece) != reshape ||
        slice.getInts() != ArrayRef<int64_t>{kPartDim, part, 1})
      return false;
    Value qkv = slice.getInputs()[0];
    if ((p.qkv && qkv != p.qkv) || !isPartOf(typeOf(operand), typeOf(qkv)))
      return false;
    p.qkv = qkv;
    p.dead.append({slice, reshape});
    return true;
  }

  /// The concat that attention_grad `grad`'s results end in: each a copy
  /// (the reshape) into a piece that the concat along the parts' dimension
  /// reads, in part order, each buffer written once and read by the next
  /// alone, all in the gradient kernel's function and stage.
  KernelOp matchConcat(KernelOp grad, Packing &p) const {
    KernelOp concat;
    SmallVector<KernelOp> dead;
    for (auto [part, result] : llvm::enumerate(grad.getOutputs())) {
      KernelOp reshape = uses.soleReader(result);
      if (uses.soleWriter(result) != grad || !reshape ||
          reshape.getOpcode() != OpCode::Copy || !sameRange(reshape, grad))
        return nullptr;
      Value piece = reshape.getOutputs()[0];
      KernelOp reader = uses.soleReader(piece);
      if (uses.soleWriter(piece) != reshape || !reader ||
          reader.getOpcode() != OpCode::Concat || (concat && reader != concat))
        return nullptr;
      concat = reader;
      if (concat.getInputs().size() != kParts ||
          concat.getInputs()[part] != piece)
        return nullptr;
      dead.push_back(reshape);
    }
    Value whole = concat.getOutputs()[0];
    auto writers = uses.writers.find(whole);
    if (concat.getInts() != ArrayRef<int64_t>{kPartDim} ||
        typeOf(whole) != typeOf(p.qkv) || !sameRange(concat, grad) ||
        writers == uses.writers.end() || writers->second.size() != 1 ||
        !whole.getDefiningOp<AllocOp>())
      return nullptr;
    p.dead.append(dead);
    p.dead.push_back(concat);
    return concat;
  }

  /// The packing of attention `forward`'s q, k and v, when every kernel
  /// that reads them is an attention kernel of these q, k, v (the forward,
  /// a recomputation, the gradients) whose gradients end in a concat, and
  /// the projection's result holds its value until the last of them.
  static bool isForward(KernelOp k) {
    return k.getOpcode() == OpCode::Attention ||
           k.getOpcode() == OpCode::AttentionLse;
  }

  std::optional<Packing> match(KernelOp forward) const {
    if (!isForward(forward) || !(forward.getFlags() & 2))
      return std::nullopt;
    ValueRange qkvParts = forward.getInputs();
    Packing p;
    SmallVector<std::optional<uint64_t>> pools;
    for (auto [part, operand] : llvm::enumerate(qkvParts)) {
      if (llvm::count(qkvParts, operand) != 1 || !matchPart(operand, part, p))
        return std::nullopt;
      pools.push_back(operand.getDefiningOp<AllocOp>().getPool());
    }
    if (pools[1] != pools[0] || pools[2] != pools[0])
      return std::nullopt;
    p.pool = pools[0];
    // The readers of q, k and v.
    llvm::SetVector<Operation *> readers;
    for (Value operand : qkvParts)
      for (KernelOp reader : uses.readers.lookup(operand))
        readers.insert(reader);
    for (Operation *op : readers) {
      auto reader = cast<KernelOp>(op);
      bool isGrad = reader.getOpcode() == OpCode::AttentionGrad;
      // A gradient's dO, q, k, v (and the forward's output and lse).
      ValueRange inputs = reader.getInputs();
      if ((!isGrad && !isForward(reader)) || !(reader.getFlags() & 2) ||
          inputs.size() < (isGrad ? 4u : 3u) ||
          inputs.slice(isGrad ? 1 : 0, kParts) != qkvParts ||
          (isGrad && (llvm::is_contained(qkvParts, inputs[0]) ||
                      llvm::any_of(inputs.drop_front(4), [&](Value v) {
                        return llvm::is_contained(qkvParts, v);
                      }))))
        return std::nullopt;
      if (!isGrad) {
        p.forwards.push_back(reader);
        continue;
      }
      KernelOp concat = matchConcat(reader, p);
      if (!concat)
        return std::nullopt;
      p.grads.push_back(reader);
      p.concats.push_back(concat);
    }
    // The projection's result: written once, so it holds its value for
    // the kernels that now read it. In the stash's pool already, or taking
    // it when the slices were its only readers, in its writer's function
    // and stage; a tensor in another pool is left alone.
    KernelOp writer = uses.soleWriter(p.qkv);
    if (!writer)
      return std::nullopt;
    auto alloc = p.qkv.getDefiningOp<AllocOp>();
    if (alloc.getPool() != p.pool) {
      if (alloc.getPool())
        return std::nullopt;
      for (KernelOp reader : uses.readers.lookup(p.qkv))
        if (reader.getOpcode() != OpCode::Slice ||
            !llvm::is_contained(p.dead, reader) || !sameRange(reader, writer))
          return std::nullopt;
    }
    return p;
  }
};

/// `splits` of attention_grad's first result [b, s, heads, d] as those of
/// attention_qkv_grad's [b, s, 3, heads, d] (the parts' dimension whole).
SplitsAttr packedSplits(SplitsAttr splits) {
  if (!splits)
    return nullptr;
  SmallVector<Attribute> dims(splits.getDims().getValue());
  dims.insert(dims.begin() + kPartDim, ArrayAttr::get(splits.getContext(), {}));
  return SplitsAttr::get(splits.getContext(),
                         ArrayAttr::get(splits.getContext(), dims));
}

struct PackAttentionQkv
    : public mlir::rt::impl::RtPackAttentionQkvBase<PackAttentionQkv> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      if (failed(runOn(program)))
        signalPassFailure();
    });
  }

  /// `kernel` replaced by one of `opcode` with `inputs` and `outputs`, its
  /// attributes (the causal flag alone) and its place in the functions.
  KernelOp replace(OpBuilder &b, KernelOp kernel, OpCode opcode,
                   ValueRange inputs, ValueRange outputs, SplitsAttr splits,
                   std::optional<KernelFunctions> &functions) {
    b.setInsertionPoint(kernel);
    auto packed = KernelOp::create(
        b, kernel.getLoc(), OpCodeAttr::get(b.getContext(), opcode), inputs,
        outputs, kernel.getIntsAttr(), kernel.getFloatsAttr(),
        b.getUI32IntegerAttr(kernel.getFlags() & 1), splits,
        kernel.getStageAttr());
    for (const NamedAttribute &attr : kernel->getDiscardableAttrs())
      packed->setAttr(attr.getName(), attr.getValue());
    if (functions) {
      functions->functionOf[packed] = functions->functionOf.lookup(kernel);
      functions->functionOf.erase(kernel);
    }
    return packed;
  }

  LogicalResult runOn(ProgramOp program) {
    KernelUses uses = KernelUses::of(program);
    std::optional<KernelFunctions> functions = KernelFunctions::read(program);
    Matcher matcher{uses, functions};
    SmallVector<Packing, 0> packings;
    DenseSet<Operation *> claimed;
    for (auto kernel : program.getBody().front().getOps<KernelOp>()) {
      if (claimed.contains(kernel))
        continue;
      if (std::optional<Packing> p = matcher.match(kernel)) {
        for (KernelOp k : llvm::concat<KernelOp>(p->forwards, p->grads))
          claimed.insert(k);
        packings.push_back(std::move(*p));
      }
    }
    if (packings.empty())
      return success();
    // The gradients' tensors allocated after their first gradient, asked
    // before anything moves: the block's order, once recomputed, stays
    // valid until the first insertion (asked after each, it is recomputed
    // per attention: quadratic in an unrolled step's kernels).
    DenseSet<Operation *> allocatedLate;
    for (Packing &p : packings)
      for (auto [grad, concat] : llvm::zip_equal(p.grads, p.concats)) {
        Operation *alloc = concat.getOutputs()[0].getDefiningOp();
        if (grad->isBeforeInBlock(alloc))
          allocatedLate.insert(alloc);
      }
    OpBuilder b(program.getContext());
    for (Packing &p : packings) {
      if (p.pool)
        p.qkv.getDefiningOp<AllocOp>().setPool(*p.pool);
      // The allocs of the buffers that may go.
      llvm::SetVector<Operation *> allocs;
      auto mayGo = [&](ValueRange values) {
        for (Value v : values)
          if (auto alloc = v.getDefiningOp<AllocOp>())
            allocs.insert(alloc);
      };
      for (KernelOp forward : p.forwards) {
        mayGo(forward.getInputs());
        replace(b, forward,
                forward.getOpcode() == OpCode::AttentionLse
                    ? OpCode::AttentionQkvLse
                    : OpCode::AttentionQkv,
                {p.qkv}, forward.getOutputs(), forward.getSplitsAttr(),
                functions);
        forward->erase();
      }
      for (auto [grad, concat] : llvm::zip_equal(p.grads, p.concats)) {
        Value whole = concat.getOutputs()[0];
        // The gradients' tensor is now written where the gradients were.
        Operation *alloc = whole.getDefiningOp();
        if (allocatedLate.contains(alloc))
          alloc->moveBefore(grad);
        mayGo(grad.getOutputs());
        SmallVector<Value> inputs = {grad.getInputs()[0], p.qkv};
        llvm::append_range(inputs, grad.getInputs().drop_front(4));
        replace(b, grad, OpCode::AttentionQkvGrad, inputs, whole,
                packedSplits(grad.getSplitsAttr()), functions);
        grad->erase();
      }
      for (KernelOp kernel : p.dead) {
        mayGo(kernel.getOutputs());
        if (functions)
          functions->functionOf.erase(kernel);
        kernel->erase();
      }
      for (Operation *alloc : allocs)
        if (alloc->use_empty())
          alloc->erase();
    }
    if (!functions)
      return success();
    return functions->writeWithActions(program, "rt-pack-attention-qkv");
  }
};

} // namespace
