//===- AnnotateMegatron.cpp - dist-annotate-megatron ----------------------===//
//
// Megatron-LM's layouts as annotations: column- and row-parallel weights
// found from the dataflow around attention and the MLP activation, batch-split
// inputs, and sequence-parallel boundaries. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTANNOTATEMEGATRON
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

bool isAttention(Operation *op) {
  return isa<tpc::AttentionOp, tpc::BatchMatmulOp>(op);
}

/// The heads dimension of an attention reader's 4-d operands: that of
/// tpc.attention's layout; 1 for the batch matmuls of unfused attention
/// ([b, heads, s, d]).
unsigned headsDimOf(Operation *reader) {
  if (auto attention = dyn_cast<tpc::AttentionOp>(reader))
    return attention.getHeadsDim();
  return 1;
}
bool isActivation(Operation *op) {
  return isa<tpc::GeluOp, tpc::SiluOp, tpc::MulOp>(op);
}

/// A first non-view reader of a value, with the operand it reads and the
/// group of the grouped-query `tpc.repeat`s on the way: a key or value of
/// unfused attention repeats each kv-head `group` times along the heads
/// dimension (dim 1 of [b, heads, s, d]), so the reader sees `group` times the
/// heads the projection computes.
struct ViewReader {
  OpOperand *use;
  int64_t group;
};

/// The first non-view readers of `value`.
void readersThroughViews(Value value, SmallVectorImpl<ViewReader> &readers,
                         int64_t group = 1) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (!isView(user)) {
      readers.push_back({&use, group});
      continue;
    }
    int64_t next = group;
    if (auto repeat = dyn_cast<tpc::RepeatOp>(user);
        repeat && repeat.getDim() == 1)
      next *= repeat.getRepeats();
    readersThroughViews(user->getResult(0), readers, next);
  }
}

int64_t product(ArrayRef<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t s : sizes)
    p *= s;
  return p;
}

class Annotator {
public:
  Annotator(func::FuncOp func, const MeshInfo &mesh, StringRef tp, StringRef dp,
            bool sequenceParallel, bool splitVocab)
      : func(func), mesh(mesh), tp(tp), dp(dp), tpSize(mesh.sizes.lookup(tp)),
        dpSize(mesh.sizes.lookup(dp)), sequenceParallel(sequenceParallel),
        splitVocab(splitVocab) {}

  LogicalResult run();

private:
  func::FuncOp func;
  const MeshInfo &mesh;
  StringRef tp, dp;
  int64_t tpSize, dpSize; // 0 when the mesh lacks the axis
  bool sequenceParallel, splitVocab;
  /// Annotated parameter layouts, by argument number.
  DenseMap<unsigned, Layout> params;

  LogicalResult divisible(Operation *op, int64_t size, int64_t parts,
                          StringRef what, StringRef axis);
  tpc::RepeatOp replicatedKvHeads(Value weight);
  LogicalResult splitParam(tpc::LinearOp linear, Value weight, int64_t dim,
                           StringRef what);
  FailureOr<int64_t> headsDim(tpc::LinearOp linear, ArrayRef<int64_t> outDims,
                              const ViewReader &reader);
  LogicalResult columnParallel(tpc::LinearOp linear);
  LogicalResult rowParallel(tpc::LinearOp linear);
  Value activationLayout(OpBuilder &builder, Location loc, Value value);
  LogicalResult annotateInputs();
  LogicalResult vocabParallel();
};

LogicalResult Annotator::divisible(Operation *op, int64_t size, int64_t parts,
                                   StringRef what, StringRef axis) {
  if (parts <= 1 || size % parts == 0)
    return success();
  return op->emitError() << "cannot split over mesh axis '" << axis << "' ("
                         << parts << " devices): the " << what << " (" << size
                         << ") is not divisible by " << parts;
}

/// The kv-heads of a grouped-query K or V projection that
/// dist-replicate-kv-heads repeated up to the tensor-parallel size: its
/// weight (or bias) is a `tpc.repeat` of a parameter; null otherwise.
tpc::RepeatOp Annotator::replicatedKvHeads(Value weight) {
  auto repeat = weight.getDefiningOp<tpc::RepeatOp>();
  if (!repeat)
    return {};
  BlockArgument arg = argumentBehindCasts(repeat.getInput());
  if (!arg || !func.getArgAttr(arg.getArgNumber(), "tpc.param"))
    return {};
  return repeat;
}

/// Splits dimension `dim` of the weight parameter read by `linear` over tp.
/// A parameter whose kv-heads were replicated stays whole: its repeat is
/// split (`dist.shard`), each device slicing its kv-head's copy.
LogicalResult Annotator::splitParam(tpc::LinearOp linear, Value weight,
                                    int64_t dim, StringRef what) {
  auto type = cast<RankedTensorType>(weight.getType());
  if (tpc::RepeatOp repeat = replicatedKvHeads(weight);
      repeat && static_cast<int64_t>(repeat.getDim()) == dim) {
    if (failed(divisible(linear, type.getDimSize(dim), tpSize,
                         "number of replicated kv-heads", tp)))
      return failure();
    Layout layout = Layout::replicated(type.getRank());
    layout.dims[dim] = {tp};
    OpBuilder builder(linear);
    auto shard =
        ShardOp::create(builder, repeat.getLoc(), type, weight,
                        layout.toAttr(func.getContext(), mesh.symbol()));
    linear->replaceUsesOfWith(weight, shard.getResult());
    return success();
  }
  BlockArgument arg = argumentBehindCasts(weight);
  if (!arg || !func.getArgAttr(arg.getArgNumber(), "tpc.param"))
    return linear.emitError()
           << "the " << what << " is not a parameter of the function";
  if (failed(divisible(linear, type.getDimSize(dim), tpSize, what, tp)))
    return failure();
  Layout layout = Layout::replicated(type.getRank());
  layout.dims[dim] = {tp};
  auto [it, inserted] = params.try_emplace(arg.getArgNumber(), layout);
  if (!inserted && it->second != layout)
    return linear.emitError()
           << "parameter " << arg.getArgNumber()
           << " is used with two tensor-parallel layouts: " << it->second.str()
           << " and " << layout.str();
  return success();
}

/// The heads dimension among a projection's output dimensions. The import
/// exposes a projection's outputs as [..., heads, head_dim] (GPT-2's fused
/// c_attn as [3, heads, head_dim]), so the heads are the dimension before the
/// last, whatever the sizes; the model's recorded heads, kv-heads and head_dim
/// (`tpc.model`) confirm it. The query (operand 0 of attention or of the
/// scores' matmul) has the model's heads, a key or value its kv-heads: in
/// unfused attention the operand has the query's heads and the repeat on the
/// way names the group.
FailureOr<int64_t> Annotator::headsDim(tpc::LinearOp linear,
                                       ArrayRef<int64_t> outDims,
                                       const ViewReader &reader) {
  auto operand = cast<RankedTensorType>(reader.use->get().getType());
  bool query = reader.use->getOperandNumber() == 0;
  const unsigned headsDim = headsDimOf(reader.use->getOwner());
  int64_t heads = operand.getDimSize(headsDim) / reader.group;
  int64_t headDim = operand.getDimSize(3);
  if (auto model =
          func->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
              "tpc.model")) {
    auto get = [&](StringRef key) -> int64_t {
      auto attr = model.getAs<IntegerAttr>(key);
      return attr ? attr.getInt() : 0;
    };
    int64_t expected = get(query ? "heads" : "kv_heads");
    if (expected == 0)
      expected = get("heads");
    if (tpc::RepeatOp repeat = replicatedKvHeads(linear.getWeight());
        repeat && !query)
      expected *= repeat.getRepeats();
    if (get("head_dim"))
      headDim = get("head_dim");
    if (expected && heads != expected)
      return linear.emitError()
             << "feeds attention as its " << (query ? "query" : "key or value")
             << " with " << heads << " heads, but the model (tpc.model) has "
             << expected << (query ? " heads" : " kv-heads");
  }
  int64_t numOut = outDims.size();
  if (numOut < 2 || outDims[numOut - 1] != headDim ||
      outDims[numOut - 2] != heads) {
    InFlightDiagnostic diag = linear.emitError()
                              << "feeds attention as its "
                              << (query ? "query" : "key or value")
                              << ", but its weight's output dimensions [";
    llvm::interleaveComma(outDims, diag);
    diag << "] do not end with its " << (query ? "heads" : "kv-heads")
         << " and head size [" << heads << ", " << headDim << "]";
    return diag;
  }
  // Grouped-query attention: K and V have fewer heads than Q.
  auto first =
      cast<RankedTensorType>(reader.use->getOwner()->getOperand(0).getType());
  bool kvHeads =
      !query && first.getRank() == 4 && first.getDimSize(headsDim) != heads;
  if (failed(divisible(linear, heads, tpSize,
                       kvHeads ? "number of kv-heads" : "number of heads", tp)))
    return failure();
  return numOut - 2;
}

LogicalResult Annotator::columnParallel(tpc::LinearOp linear) {
  SmallVector<ViewReader> readers;
  readersThroughViews(linear.getResult(), readers);
  // The forward's reader decides (the operand numbers of a training step's
  // backward matmuls say nothing about query and key).
  llvm::stable_sort(readers, [](const ViewReader &a, const ViewReader &b) {
    Operation *x = a.use->getOwner(), *y = b.use->getOwner();
    if (x == y)
      return a.use->getOperandNumber() < b.use->getOperandNumber();
    return x->getBlock() == y->getBlock() && x->isBeforeInBlock(y);
  });
  auto weightType = cast<RankedTensorType>(linear.getWeight().getType());
  bool outIn = linear.getLayout() == tpc::WeightLayout::OutIn;
  int64_t firstOut = outIn ? 0 : 1;
  int64_t numOut = weightType.getRank() - 1;
  ArrayRef<int64_t> outDims = weightType.getShape().slice(firstOut, numOut);
  for (const ViewReader &viewReader : readers) {
    Operation *reader = viewReader.use->getOwner();
    std::optional<int64_t> outDim;
    if (isAttention(reader)) {
      // q, k, v are [b, heads, s, d]: split the weight's heads, never the
      // head size.
      auto operand = cast<RankedTensorType>(viewReader.use->get().getType());
      if (operand.getRank() != 4)
        continue;
      FailureOr<int64_t> dim = headsDim(linear, outDims, viewReader);
      if (failed(dim))
        return failure();
      outDim = *dim;
    } else if (isActivation(reader)) {
      outDim = 0;
      if (failed(divisible(linear, product(outDims), tpSize, "FFN size", tp)))
        return failure();
    } else {
      continue;
    }
    if (failed(splitParam(linear, linear.getWeight(), firstOut + *outDim,
                          "weight")))
      return failure();
    if (Value bias = linear.getBias())
      if (failed(splitParam(linear, bias, *outDim, "bias")))
        return failure();
    return success();
  }
  return success();
}

LogicalResult Annotator::rowParallel(tpc::LinearOp linear) {
  Operation *producer = producerThroughViews(linear.getInput());
  if (!producer || !(isAttention(producer) || isActivation(producer)))
    return success();
  auto weightType = cast<RankedTensorType>(linear.getWeight().getType());
  bool outIn = linear.getLayout() == tpc::WeightLayout::OutIn;
  int64_t inDim = outIn ? weightType.getRank() - 1 : 0;
  if (failed(divisible(linear, weightType.getDimSize(inDim), tpSize,
                       isAttention(producer) ? "hidden size" : "FFN size",
                       tp)) ||
      failed(splitParam(linear, linear.getWeight(), inDim, "weight")))
    return failure();
  OpBuilder builder(linear);
  builder.setInsertionPointAfter(linear);
  Value result = linear.getResult();
  if (Value bias = linear.getBias()) {
    // Added once, after the reduction: a partial sum must not meet it.
    auto matmul =
        tpc::LinearOp::create(builder, linear.getLoc(), linear.getInput(),
                              linear.getWeight(), Value(), linear.getLayout());
    matmul->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
    Value sum = activationLayout(builder, linear.getLoc(), matmul.getResult());
    auto add = tpc::AddOp::create(builder, linear.getLoc(), sum, bias);
    add->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
    linear.getResult().replaceAllUsesWith(add.getResult());
    linear.erase();
    return success();
  }
  Value sharded = activationLayout(builder, linear.getLoc(), result);
  result.replaceAllUsesExcept(sharded, sharded.getDefiningOp());
  return success();
}

/// With sequence parallelism, a [b, s, h] activation of the residual stream
/// is split along s over tp (and b over dp).
Value Annotator::activationLayout(OpBuilder &builder, Location loc,
                                  Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!sequenceParallel || tpSize <= 1 || type.getRank() != 3)
    return value;
  Layout layout = Layout::replicated(3);
  if (dpSize > 1)
    layout.dims[0] = {dp};
  layout.dims[1] = {tp};
  return ShardOp::create(builder, loc, value.getType(), value,
                         layout.toAttr(func.getContext(), mesh.symbol()))
      .getResult();
}

/// Splits the batch over dp. The microbatches of the training step are
/// slices of the global batch: each is split (its block per rank, so a rank
/// draws the dropout masks of the very rows the single device gives that
/// microbatch), and the whole input, a few integers per token, stays
/// replicated. Without slices the input itself is split.
LogicalResult Annotator::annotateInputs() {
  if (dpSize <= 1)
    return success();
  auto batchSplit = [&](Operation *at, RankedTensorType type,
                        StringRef what) -> FailureOr<Layout> {
    if (type.getDimSize(0) % dpSize != 0)
      return at->emitError()
             << "cannot split over mesh axis '" << dp << "' (" << dpSize
             << " devices): the batch of " << what << " (" << type.getDimSize(0)
             << ") is not divisible by " << dpSize;
    Layout layout = Layout::replicated(type.getRank());
    layout.dims[0] = {dp};
    return layout;
  };
  MLIRContext *context = func.getContext();
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0 ||
        !func.getArgAttr(arg.getArgNumber(), "tpc.input"))
      continue;
    SmallVector<tensor::ExtractSliceOp> microbatches;
    for (Operation *user : arg.getUsers())
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user))
        microbatches.push_back(slice);
    if (microbatches.empty()) {
      FailureOr<Layout> layout = batchSplit(func, type, "an input");
      if (failed(layout))
        return failure();
      func.setArgAttr(arg.getArgNumber(), kShardingAttr,
                      layout->toAttr(context, mesh.symbol()));
      continue;
    }
    for (tensor::ExtractSliceOp slice : microbatches) {
      FailureOr<Layout> layout =
          batchSplit(slice, slice.getResultType(), "a microbatch");
      if (failed(layout))
        return failure();
      OpBuilder builder(slice);
      builder.setInsertionPointAfter(slice);
      auto shard = ShardOp::create(builder, slice.getLoc(), slice.getType(),
                                   slice.getResult(),
                                   layout->toAttr(context, mesh.symbol()));
      slice.getResult().replaceAllUsesExcept(shard.getResult(), shard);
    }
  }
  return success();
}

/// The vocab-parallel embedding and LM head: the tables of the embeddings
/// and the weight of the matmul computing a cross-entropy's logits split the
/// vocabulary over tp (dist-pad-vocab makes it divisible).
LogicalResult Annotator::vocabParallel() {
  auto split = [&](Operation *op, Value weight, unsigned dim) -> LogicalResult {
    BlockArgument arg = argumentBehindCasts(weight);
    if (!arg || !func.getArgAttr(arg.getArgNumber(), "tpc.param"))
      return success();
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getDimSize(dim) % tpSize != 0)
      return op->emitError() << "cannot split over mesh axis '" << tp << "' ("
                             << tpSize << " devices): the vocabulary ("
                             << type.getDimSize(dim) << ") is not divisible by "
                             << tpSize << " (dist-pad-vocab pads it)";
    Layout layout = Layout::replicated(type.getRank());
    layout.dims[dim] = {tp};
    params[arg.getArgNumber()] = layout;
    return success();
  };
  for (auto embedding : func.getOps<tpc::EmbeddingOp>())
    if (failed(split(embedding, embedding.getTable(), 0)))
      return failure();
  for (auto loss : func.getOps<tpc::CrossEntropyOp>()) {
    auto head = loss.getLogits().getDefiningOp<tpc::LinearOp>();
    if (!head || head.getBias())
      continue;
    auto weight = cast<RankedTensorType>(head.getWeight().getType());
    unsigned dim =
        head.getLayout() == tpc::WeightLayout::OutIn ? 0 : weight.getRank() - 1;
    if (failed(split(head, head.getWeight(), dim)))
      return failure();
  }
  return success();
}

LogicalResult Annotator::run() {
  if (failed(annotateInputs()))
    return failure();
  if (tpSize > 1) {
    if (splitVocab && failed(vocabParallel()))
      return failure();
    SmallVector<tpc::LinearOp> linears(func.getOps<tpc::LinearOp>());
    for (tpc::LinearOp linear : linears)
      if (failed(columnParallel(linear)) || failed(rowParallel(linear)))
        return failure();
    if (sequenceParallel) {
      for (auto embedding : llvm::to_vector(func.getOps<tpc::EmbeddingOp>())) {
        auto type = cast<RankedTensorType>(embedding.getType());
        if (failed(divisible(embedding, type.getDimSize(1), tpSize,
                             "sequence length", tp)))
          return failure();
        OpBuilder builder(embedding);
        builder.setInsertionPointAfter(embedding);
        Value sharded =
            activationLayout(builder, embedding.getLoc(), embedding);
        embedding.getResult().replaceAllUsesExcept(sharded,
                                                   sharded.getDefiningOp());
      }
    }
    if (params.size() <= 1 && !func.getOps<tpc::LinearOp>().empty())
      func.emitWarning() << "no column- or row-parallel matmul found: the "
                            "function runs replicated over '"
                         << tp << "'";
  }
  for (auto &[argNumber, layout] : params)
    func.setArgAttr(argNumber, kShardingAttr,
                    layout.toAttr(func.getContext(), mesh.symbol()));
  return success();
}

struct DistAnnotateMegatronPass
    : public dist::impl::DistAnnotateMegatronBase<DistAnnotateMegatronPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(forEachMeshFunction(
            getOperation(), [&](func::FuncOp func, const MeshInfo &mesh) {
              return Annotator(func, mesh, tpAxis, dpAxis, sequenceParallel,
                               vocabParallel)
                  .run();
            })))
      signalPassFailure();
  }
};

} // namespace
