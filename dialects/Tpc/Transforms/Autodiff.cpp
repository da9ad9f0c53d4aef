//===- Autodiff.cpp - tpc-autodiff ----------------------------------------===//
//
// Builds the per-microbatch training functions and their driver from
// @forward (docs/design/training.md):
//
//   @train_F(params, ids, labels, microbatch) -> (loss_sum, count, stash...)
//   @train_B(params, ids, labels, microbatch, dloss_sum, stash_B...) -> dYs
//   @train_W(forward args W reads, stash_W..., dYs...) -> grads (f32)
//   @train_step(params (f32), input_ids, labels) -> (loss, grads...)
//
// The derivative of each op comes from TpcDerivativeOpInterface; this file
// only decides which operand gradients are wanted where (B: activations, W:
// parameters and their views), what crosses from F to B and W (the stash,
// each value once), and how microbatches are sliced and accumulated.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/Transforms/Autodiff.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCAUTODIFF
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// Ops whose result is a view of their operand: on a parameter they run in
/// W (recomputed from the parameter where B or W reads the view).
bool isViewOp(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SliceOp, RepeatOp, CastOp>(op);
}

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

int64_t byteSize(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() * ((tensor.getElementTypeBitWidth() + 7) / 8);
}

/// Tags every op a builder inserts with a transformer layer, so that the
/// backward ops of layer N carry `tpc.layer = N` like the forward ones.
struct LayerTagger : public OpBuilder::Listener {
  IntegerAttr layer;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (layer)
      op->setAttr(kLayerAttrName, layer);
  }
};

/// What one differentiated op of @train_F needs.
struct OpPlan {
  Operation *op;
  /// A view of a parameter: differentiated in W only.
  bool paramView = false;
  SmallVector<bool> wantedB, wantedW;
  SmallVector<Value> readsB, readsW;
  /// The parameter gradients are computed in B, right before the input
  /// gradient, and handed to W as they are (see planBackward).
  bool weightsInB = false;
  bool hasB() const { return llvm::is_contained(wantedB, true); }
  bool hasWeightGrads() const { return llvm::is_contained(wantedW, true); }
  /// W applies this op's rule.
  bool hasW() const { return paramView || (hasWeightGrads() && !weightsInB); }
};

class TrainingBuilder {
public:
  /// The whole model: F, B and W of @forward and the driver @train_step.
  TrainingBuilder(ModuleOp module, unsigned microbatches)
      : module(module), microbatches(microbatches),
        builder(module.getContext()), wholeModel(true),
        names{kTrainForwardName.str(), kTrainInputGradName.str(),
              kTrainWeightGradName.str()} {}
  /// One function of the model (a pipeline chunk): its F, B and W, named
  /// `train_F_<suffix>` and so on; no driver.
  TrainingBuilder(func::FuncOp source, unsigned microbatches, StringRef suffix)
      : module(source->getParentOfType<ModuleOp>()),
        microbatches(microbatches), builder(source.getContext()),
        wholeModel(false),
        names{(kTrainForwardName + "_" + suffix).str(),
              (kTrainInputGradName + "_" + suffix).str(),
              (kTrainWeightGradName + "_" + suffix).str()},
        forward(source) {}

  LogicalResult run();
  /// What run() built, and how to call it.
  TrainingFunctions built() const;

private:
  InFlightDiagnostic error(Operation *at) {
    return at->emitError() << "tpc-autodiff: ";
  }

  LogicalResult checkForward();
  LogicalResult checkArguments();
  LogicalResult findOutputs();
  LogicalResult buildForward();
  LogicalResult planBackward();
  /// An attention result that only B reads, where the output projection's
  /// input (its reshape) is stashed anyway: B reads that instead
  /// (reshapedStash), so the stash holds those bytes once.
  void shareAttentionResults();
  /// A silu's result that only B reads, where its input is stashed anyway
  /// (silu_grad reads it): B recomputes it from that input (recomputedSilus)
  /// instead of stashing a second tensor of its size (Llama's MLP: gate,
  /// up and their product are stashed, not silu(gate)).
  void recomputeSilus();
  LogicalResult buildInputGrads();
  LogicalResult buildWeightGrads();
  void finishForward();
  /// Sets `tpc.stash_layer` on the ops of `fwd` that define a layer's stash.
  void markStash();
  void buildDriver();

  /// The value of F's `v` in a backward function mapped by `map`: an
  /// argument or stash value, or a parameter view or reshaped stash value
  /// recomputed there.
  Value lookupIn(IRMapping &map, Value v);
  /// Adds gradient `g` of F's value `v` into `grads`.
  void accumulate(DenseMap<Value, Value> &grads, Value v, Value g);
  /// Calls `build` (the B or W rule of `plan`) with the backward values and
  /// adds the operand gradients it builds into `grads`.
  LogicalResult applyRule(const OpPlan &plan, ArrayRef<bool> wanted,
                          ArrayRef<Value> reads, IRMapping &map,
                          ArrayRef<Value> resultGrads, bool weights,
                          DenseMap<Value, Value> &grads);
  func::FuncOp createFunction(StringRef name, TypeRange inputs,
                              TypeRange results);

  ModuleOp module;
  unsigned microbatches;
  OpBuilder builder;
  LayerTagger tagger;
  bool wholeModel;
  struct {
    std::string forward, inputGrad, weightGrad;
  } names;

  // The function differentiated: @forward, or a chunk of it.
  func::FuncOp forward;
  SmallVector<unsigned> paramArgs;
  /// Arguments that are activations of an earlier chunk (chunks only).
  SmallVector<unsigned> activationArgs;
  std::optional<unsigned> idsArg, labelsArg;
  /// The loss, or null for a chunk that hands activations on.
  CrossEntropyOp loss;
  int64_t batch = 0;

  // @train_F and what the backward reads from it.
  func::FuncOp fwd;
  Value lossSum, count;
  /// F's values the backward starts from: the loss sum, or the activations
  /// a chunk hands on (its results, in order).
  SmallVector<Value> seeds;
  DenseSet<Value> paramViews;
  SmallVector<OpPlan, 0> plans;
  llvm::SetVector<Value> stash;
  DenseSet<Value> stashB, stashW;
  DenseMap<Value, IntegerAttr> stashLayer;
  /// Values B reads as the reshape back of another stash value (an
  /// attention's result, from the output projection's input): stashed once.
  DenseMap<Value, Value> reshapedStash;
  DenseSet<Value> recomputedSilus;
  /// F arguments W reads (directly or to recompute a view), in order.
  llvm::SmallSetVector<unsigned, 4> weightArgs;

  // @train_B / @train_W.
  func::FuncOp bwdInput, bwdWeight;
  /// The F values whose gradient B returns for W (op results W
  /// differentiates from; parameters or views whose gradient B computed),
  /// and the index of that gradient among B's dY results (a gradient two
  /// values share goes once).
  llvm::MapVector<Value, unsigned> dys;
  func::FuncOp driver;
};

} // namespace

//===----------------------------------------------------------------------===//
// @forward
//===----------------------------------------------------------------------===//

LogicalResult TrainingBuilder::checkForward() {
  if (wholeModel) {
    forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return module.emitError("tpc-autodiff: no func.func @forward");
  }
  if (forward.isExternal() || !forward.getBody().hasOneBlock())
    return error(forward) << "@" << forward.getName()
                          << " must have a body of one block";
  SmallVector<StringRef> created = {names.forward, names.inputGrad,
                                    names.weightGrad};
  if (wholeModel)
    created.push_back(kTrainStepName);
  for (StringRef name : created)
    if (Operation *existing = module.lookupSymbol(name))
      return error(existing)
             << "@" << name << " already exists (tpc-autodiff ran before?)";
  if (microbatches < 1)
    return module.emitError("tpc-autodiff: microbatches must be at least 1");
  if (failed(checkArguments()) || failed(findOutputs()))
    return failure();

  // Everything the batch splits leads with the same batch dimension.
  SmallVector<unsigned> batchedArgs(activationArgs);
  for (std::optional<unsigned> input : {idsArg, labelsArg})
    if (input)
      batchedArgs.push_back(*input);
  llvm::sort(batchedArgs);
  if (batchedArgs.empty())
    return error(forward) << "@" << forward.getName()
                          << " reads neither the inputs nor activations: "
                             "there is no batch to split";
  auto describe = [&](unsigned i) -> std::string {
    if (i == idsArg)
      return "input_ids";
    if (i == labelsArg)
      return "labels";
    return "argument " + std::to_string(i);
  };
  unsigned first = batchedArgs.front();
  for (unsigned i : batchedArgs) {
    auto type = cast<RankedTensorType>(forward.getArgument(i).getType());
    auto firstType = cast<RankedTensorType>(forward.getArgument(first).getType());
    if (type.getRank() < 1 || firstType.getRank() < 1 ||
        type.getDimSize(0) != firstType.getDimSize(0))
      return error(forward) << describe(first) << " " << firstType << " and "
                            << describe(i) << " " << type
                            << " must share a leading batch dimension";
  }
  batch = cast<RankedTensorType>(forward.getArgument(first).getType())
              .getDimSize(0);
  if (batch % microbatches != 0)
    return error(forward) << "batch " << batch
                          << " is not divisible by microbatches="
                          << microbatches;
  return success();
}

LogicalResult TrainingBuilder::checkArguments() {
  bool inputsSeen = false;
  for (BlockArgument arg : forward.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (forward.getArgAttr(i, kParamAttrName)) {
      // The driver passes the parameters first.
      if (inputsSeen && wholeModel)
        return error(forward) << "parameter argument " << i
                              << " follows an input; parameters come first";
      if (!isFloatTensor(arg))
        return error(forward) << "parameter argument " << i << " has type "
                              << arg.getType() << ", not a float tensor";
      paramArgs.push_back(i);
      continue;
    }
    inputsSeen = true;
    auto input = forward.getArgAttrOfType<StringAttr>(i, kInputAttrName);
    if (input && input.getValue() == "input_ids")
      idsArg = i;
    else if (input && input.getValue() == "labels")
      labelsArg = i;
    else if (!wholeModel && isFloatTensor(arg))
      activationArgs.push_back(i);
    else if (!wholeModel)
      return error(forward) << "argument " << i << " of type "
                            << arg.getType()
                            << " is neither a parameter, input_ids, labels "
                               "nor an activation (a float tensor)";
    else
      return error(forward) << "argument " << i << " is neither a parameter ('"
                            << kParamAttrName << "') nor input_ids / labels ('"
                            << kInputAttrName << "')";
  }
  if (wholeModel && (!idsArg || !labelsArg))
    return error(forward) << "@forward needs the inputs input_ids and labels";
  return success();
}

LogicalResult TrainingBuilder::findOutputs() {
  // The loss: loss_mean of one cross_entropy's sum and count.
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  for (Value result : ret.getOperands()) {
    auto mean = result.getDefiningOp<LossMeanOp>();
    if (!mean)
      continue;
    auto ce = mean.getSum().getDefiningOp<CrossEntropyOp>();
    if (ce && mean.getCount() == ce.getCount()) {
      loss = ce;
      break;
    }
  }
  if (wholeModel && !loss)
    return error(forward) << "@forward returns no loss: expected a "
                             "tpc.loss_mean of the sum and count of one "
                             "tpc.cross_entropy";
  if (wholeModel)
    return success();
  // A chunk computes the loss (the last one) or hands activations on.
  if (loss && ret.getNumOperands() != 1)
    return error(ret) << "a chunk that computes the loss returns nothing "
                         "else; this one returns "
                      << ret.getNumOperands() << " values";
  if (!loss) {
    if (ret.getNumOperands() == 0)
      return error(ret) << "the chunk returns neither a loss nor activations";
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!isFloatTensor(value) || type.getRank() < 1)
        return error(ret) << "result " << i << " of type " << value.getType()
                          << " is neither the loss nor an activation (a "
                             "float tensor with a batch dimension)";
    }
  }
  return success();
}

func::FuncOp TrainingBuilder::createFunction(StringRef name, TypeRange inputs,
                                             TypeRange results) {
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, forward.getLoc(), name,
                                   builder.getFunctionType(inputs, results));
  func.addEntryBlock();
  return func;
}

/// Fills `resultGrads` with the gradients in `grads` of `op`'s results (null
/// where there is none); returns whether any result has one.
static bool lookupResultGrads(Operation *op,
                              const DenseMap<Value, Value> &grads,
                              SmallVectorImpl<Value> &resultGrads) {
  for (Value result : op->getResults())
    resultGrads.push_back(grads.lookup(result));
  return llvm::any_of(resultGrads, [](Value g) { return g; });
}

/// The type of `type` (a tensor whose leading dimension is the batch) on a
/// microbatch.
static RankedTensorType microbatchType(Type type, int64_t size) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[0] = size;
  return tensor.clone(shape);
}

LogicalResult TrainingBuilder::buildForward() {
  int64_t micro = batch / microbatches;
  SmallVector<Type> inputs(forward.getArgumentTypes());
  // Values that depend on the inputs (or on activations) lead with the
  // batch dimension.
  DenseSet<Value> batched;
  SmallVector<unsigned> batchedArgs(activationArgs);
  for (std::optional<unsigned> input : {idsArg, labelsArg})
    if (input)
      batchedArgs.push_back(*input);
  for (unsigned i : batchedArgs) {
    inputs[i] = microbatchType(inputs[i], micro);
    batched.insert(forward.getArgument(i));
  }
  Type i64Scalar = RankedTensorType::get({}, builder.getI64Type());
  inputs.push_back(i64Scalar);
  fwd = createFunction(names.forward, inputs, {});
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    fwd.setArgAttrs(i, forward.getArgAttrDict(i));
  Value microbatch = fwd.getArguments().back();
  fwd.setArgAttr(cast<BlockArgument>(microbatch).getArgNumber(),
                 kMicrobatchAttrName, builder.getUnitAttr());

  IRMapping map;
  map.map(forward.getArguments(),
          fwd.getArguments().take_front(forward.getNumArguments()));
  builder.setInsertionPointToStart(&fwd.getBody().front());
  for (Operation &op : forward.getBody().front().without_terminator()) {
    bool isBatched = llvm::any_of(op.getOperands(), [&](Value operand) {
      return batched.contains(operand);
    });
    if (isBatched)
      batched.insert(op.getResults().begin(), op.getResults().end());
    // A microbatch draws its block of the whole batch's dropout masks (a
    // dropout of something the batch does not split draws all of it).
    Value block = isBatched ? microbatch : Value();
    Operation *clone;
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      // Split, so that the backward reads the one-byte mask.
      Value x = map.lookup(dropout.getInput());
      auto mask = DropoutMaskOp::create(
          builder, op.getLoc(),
          cast<RankedTensorType>(x.getType()).clone(builder.getI8Type()),
          dropout.getRateAttr(), dropout.getStreamAttr(), block);
      mask->setDiscardableAttrs(op.getDiscardableAttrDictionary());
      clone = ApplyMaskOp::create(builder, op.getLoc(), x, mask,
                                  dropout.getRateAttr());
      clone->setDiscardableAttrs(op.getDiscardableAttrDictionary());
    } else if (auto attention = dyn_cast<AttentionOp>(op);
               attention && !attention.getDropoutRate().isZero()) {
      clone = AttentionOp::create(
          builder, op.getLoc(), map.lookup(attention.getQuery()),
          map.lookup(attention.getKey()), map.lookup(attention.getValue()),
          attention.getCausalAttr(), attention.getScaleAttr(),
          attention.getDropoutRateAttr(), attention.getDropoutStreamAttr(),
          block, attention.getSeqMajorAttr(), attention.getWithLseAttr());
      clone->setDiscardableAttrs(op.getDiscardableAttrDictionary());
    } else {
      clone = builder.clone(op, map);
      if (isBatched && micro != batch) {
        for (OpResult result : clone->getResults()) {
          auto type = dyn_cast<RankedTensorType>(result.getType());
          if (!type || type.getRank() == 0)
            continue;
          if (type.getDimSize(0) != batch)
            return error(&op) << "cannot split '" << op.getName()
                              << "' into microbatches: its result " << type
                              << " does not lead with the batch "
                              << "dimension " << batch;
          result.setType(microbatchType(type, micro));
        }
      }
    }
    map.map(op.getResults(), clone->getResults());
  }
  SmallVector<Value> outputs;
  if (loss) {
    lossSum = map.lookup(loss.getLossSum());
    count = map.lookup(loss.getCount());
    seeds = {lossSum};
    outputs = {lossSum, count};
  } else {
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
      if (!batched.contains(result))
        return error(ret) << "result " << i << " does not depend on the "
                          << "batch: a chunk hands on activations only";
      outputs.push_back(map.lookup(result));
    }
    seeds = outputs;
  }
  func::ReturnOp::create(builder, forward.getLoc(), outputs);
  fwd.setFunctionType(builder.getFunctionType(inputs,
                                              ValueRange(outputs).getTypes()));

  // Keep only what the loss needs (an extra logits output goes).
  SmallVector<Operation *> ops;
  for (Operation &op : fwd.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return verify(fwd);
}

//===----------------------------------------------------------------------===//
// Planning: activity, parameter views, stash
//===----------------------------------------------------------------------===//

/// Every attention the backward differentiates (an active q, k or v and
/// result) also writes its rows' log-sum-exp (`lse`), so that its
/// attention_grad reads that and the result instead of rerunning the
/// forward. Its replacement keeps the old result's place in `onParams` and
/// `toLoss` (whose intersection `active` is).
static void writeAttentionLse(Block &body, function_ref<bool(Value)> active,
                              DenseSet<Value> &onParams,
                              DenseSet<Value> &toLoss) {
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto attention = dyn_cast<AttentionOp>(op);
    if (!attention || attention.getLse() || !active(attention.getResult()) ||
        !llvm::any_of(op.getOperands().take_front(3), active))
      continue;
    OpBuilder builder(attention);
    auto withLse = AttentionOp::create(
        builder, attention.getLoc(), attention.getQuery(), attention.getKey(),
        attention.getValue(), attention.getCausalAttr(),
        attention.getScaleAttr(), attention.getDropoutRateAttr(),
        attention.getDropoutStreamAttr(), attention.getBlock(),
        attention.getSeqMajorAttr(), builder.getUnitAttr());
    withLse->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
    Value old = attention.getResult(), now = withLse.getResult();
    onParams.insert(now);
    toLoss.insert(now);
    old.replaceAllUsesWith(now);
    onParams.erase(old);
    toLoss.erase(old);
    attention.erase();
  }
}

LogicalResult TrainingBuilder::planBackward() {
  Block &body = fwd.getBody().front();
  DenseSet<Value> onParams; // float values computed from a parameter
  for (unsigned i : paramArgs) {
    paramViews.insert(fwd.getArgument(i));
    onParams.insert(fwd.getArgument(i));
  }
  // An earlier chunk's activation: computed from its parameters.
  for (unsigned i : activationArgs)
    onParams.insert(fwd.getArgument(i));
  for (Operation &op : body.without_terminator()) {
    if (isViewOp(&op) && paramViews.contains(op.getOperand(0)))
      paramViews.insert(op.getResult(0));
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return onParams.contains(v); }))
      for (Value result : op.getResults())
        if (isFloatTensor(result))
          onParams.insert(result);
  }
  DenseSet<Value> toLoss(seeds.begin(), seeds.end());
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return toLoss.contains(v); }))
      toLoss.insert(op.getOperands().begin(), op.getOperands().end());
  auto active = [&](Value v) {
    return onParams.contains(v) && toLoss.contains(v);
  };
  writeAttentionLse(body, active, onParams, toLoss);

  // What a phase reads: an F argument, a parameter view (recomputed from
  // its parameter) or a stash value.
  auto noteRead = [&](Value v, bool weights, IntegerAttr layer) {
    while (!isa<BlockArgument>(v) && paramViews.contains(v))
      v = v.getDefiningOp()->getOperand(0);
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (weights)
        weightArgs.insert(arg.getArgNumber());
      return;
    }
    (weights ? stashW : stashB).insert(v);
    stashLayer.try_emplace(v, layer);
  };

  for (Operation &op : body.without_terminator()) {
    if (!llvm::any_of(op.getOperands(), active) ||
        !llvm::any_of(op.getResults(), active))
      continue;
    auto rule = dyn_cast<TpcDerivativeOpInterface>(&op);
    if (!rule)
      return error(&op) << "cannot differentiate '" << op.getName()
                        << "': it has no derivative rule "
                           "(TpcDerivativeOpInterface)";
    OpPlan plan{&op};
    plan.paramView = paramViews.contains(op.getResult(0));
    unsigned n = op.getNumOperands();
    plan.wantedB.assign(n, false);
    plan.wantedW.assign(n, false);
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      if (!active(operand))
        continue;
      (paramViews.contains(operand) ? plan.wantedW : plan.wantedB)[i] = true;
    }
    auto reads = [&](ArrayRef<bool> wanted, SmallVectorImpl<Value> &out) {
      if (!llvm::is_contained(wanted, true))
        return;
      for (unsigned i : rule.getStashedOperands(wanted))
        out.push_back(op.getOperand(i));
      for (unsigned i : rule.getStashedResults(wanted))
        out.push_back(op.getResult(i));
    };
    reads(plan.wantedB, plan.readsB);
    reads(plan.wantedW, plan.readsW);
    // A norm's parameter gradients are row sums of what its input gradient
    // reads (dY, x) and a few hidden-sized vectors: computed in B, they are
    // one fused pass with the input gradient on a CUDA device even where a
    // schedule defers W, and W's stash holds neither dY nor x for them.
    plan.weightsInB = isa<LayerNormOp, RmsNormOp>(op) && plan.hasWeightGrads();
    auto layer = op.getAttrOfType<IntegerAttr>(kLayerAttrName);
    for (Value v : plan.readsB)
      noteRead(v, /*weights=*/false, layer);
    for (Value v : plan.readsW)
      noteRead(v, /*weights=*/!plan.weightsInB, layer);
    plans.push_back(std::move(plan));
  }

  shareAttentionResults();
  recomputeSilus();
  // Each value once, in the order F computes them.
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults())
      if (stashB.contains(result) || stashW.contains(result))
        stash.insert(result);
  return success();
}

void TrainingBuilder::shareAttentionResults() {
  for (const OpPlan &plan : plans) {
    auto attention = dyn_cast<AttentionOp>(plan.op);
    if (!attention || !attention.getLse())
      continue;
    Value result = attention.getResult();
    if (!stashB.contains(result) || stashW.contains(result))
      continue;
    for (Operation *user : result.getUsers()) {
      auto reshape = dyn_cast<ReshapeOp>(user);
      if (!reshape || !(stashB.contains(reshape.getResult()) ||
                        stashW.contains(reshape.getResult())))
        continue;
      stashB.erase(result);
      stashB.insert(reshape.getResult());
      reshapedStash[result] = reshape.getResult();
      break;
    }
  }
}

void TrainingBuilder::recomputeSilus() {
  for (const OpPlan &plan : plans) {
    auto silu = dyn_cast<SiluOp>(plan.op);
    if (!silu)
      continue;
    Value result = silu.getResult(), input = silu.getInput();
    if (!stashB.contains(result) || stashW.contains(result) ||
        !stashB.contains(input))
      continue;
    stashB.erase(result);
    recomputedSilus.insert(result);
  }
}

//===----------------------------------------------------------------------===//
// Backward functions
//===----------------------------------------------------------------------===//

Value TrainingBuilder::lookupIn(IRMapping &map, Value v) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  // An attention's result: the reshape back of what the output projection
  // stashed, right where the attention_grad reads it.
  if (Value stashed = reshapedStash.lookup(v)) {
    Value back = ReshapeOp::create(builder, v.getLoc(), v.getType(),
                                   lookupIn(map, stashed));
    map.map(v, back);
    return back;
  }
  // A silu of a stash value (in the layer), or a parameter view (in no
  // layer): recomputed from its input, right where B reads it.
  Operation *op = v.getDefiningOp();
  bool silu = recomputedSilus.contains(v);
  assert(op && (silu || paramViews.contains(v)) &&
         "backward read an unplanned value");
  Value input = lookupIn(map, op->getOperand(0));
  IntegerAttr layer = tagger.layer;
  if (!silu)
    tagger.layer = nullptr;
  Operation *clone = builder.clone(*op, map);
  tagger.layer = layer;
  clone->setOperand(0, input);
  map.map(v, clone->getResult(0));
  return clone->getResult(0);
}

void TrainingBuilder::accumulate(DenseMap<Value, Value> &grads, Value v,
                                 Value g) {
  Value &sum = grads[v];
  if (!sum) {
    sum = g;
    return;
  }
  Location loc = v.getLoc();
  auto elementOf = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getElementType();
  };
  // Contributions of different precision meet in f32.
  if (elementOf(sum) != elementOf(g)) {
    auto toF32 = [&](Value x) -> Value {
      if (elementOf(x).isF32())
        return x;
      return CastOp::create(
          builder, loc,
          cast<RankedTensorType>(x.getType()).clone(builder.getF32Type()), x);
    };
    sum = toF32(sum);
    g = toF32(g);
  }
  sum = AddOp::create(builder, loc, sum, g);
}

LogicalResult TrainingBuilder::applyRule(const OpPlan &plan,
                                         ArrayRef<bool> wanted,
                                         ArrayRef<Value> reads, IRMapping &map,
                                         ArrayRef<Value> resultGrads,
                                         bool weights,
                                         DenseMap<Value, Value> &grads) {
  Operation *op = plan.op;
  tagger.layer = op->getAttrOfType<IntegerAttr>(kLayerAttrName);
  SmallVector<Value> operands(op->getNumOperands()),
      results(op->getNumResults());
  for (Value v : reads) {
    Value mapped = lookupIn(map, v);
    for (OpOperand &operand : op->getOpOperands())
      if (operand.get() == v)
        operands[operand.getOperandNumber()] = mapped;
    for (OpResult result : op->getResults())
      if (result == v)
        results[result.getResultNumber()] = mapped;
  }
  DerivativeArgs args{operands, results, resultGrads, wanted};
  SmallVector<Value> operandGrads;
  auto rule = cast<TpcDerivativeOpInterface>(op);
  LogicalResult built =
      weights ? rule.buildWeightGradients(builder, args, operandGrads)
              : rule.buildInputGradients(builder, args, operandGrads);
  if (failed(built))
    return error(op) << "the derivative rule of '" << op->getName()
                     << "' failed";
  for (auto [i, want] : llvm::enumerate(wanted))
    if (want && !operandGrads[i])
      return error(op) << "the derivative rule of '" << op->getName()
                       << "' built no gradient for operand " << i;
  tagger.layer = op->getAttrOfType<IntegerAttr>(kLayerAttrName);
  for (auto [i, want] : llvm::enumerate(wanted))
    if (want)
      accumulate(grads, op->getOperand(i), operandGrads[i]);
  return success();
}

LogicalResult TrainingBuilder::buildInputGrads() {
  SmallVector<Type> inputs(fwd.getArgumentTypes());
  for (Value seed : seeds)
    inputs.push_back(seed.getType());
  for (Value v : stash)
    if (stashB.contains(v))
      inputs.push_back(v.getType());
  bwdInput = createFunction(names.inputGrad, inputs, {});
  unsigned numFwdArgs = fwd.getNumArguments();
  for (unsigned i = 0; i < numFwdArgs; ++i)
    bwdInput.setArgAttrs(i, fwd.getArgAttrDict(i));

  IRMapping map;
  map.map(fwd.getArguments(), bwdInput.getArguments().take_front(numFwdArgs));
  unsigned next = numFwdArgs + seeds.size();
  for (Value v : stash)
    if (stashB.contains(v))
      map.map(v, bwdInput.getArgument(next++));

  builder.setInsertionPointToStart(&bwdInput.getBody().front());
  builder.setListener(&tagger);
  DenseMap<Value, Value> grads;
  for (auto [i, seed] : llvm::enumerate(seeds))
    accumulate(grads, seed, bwdInput.getArgument(numFwdArgs + i));
  llvm::SetVector<Value> returned;
  auto returnForW = [&](Value v) {
    Value g = grads.lookup(v);
    if (!g || dys.count(v))
      return;
    returned.insert(g);
    dys[v] = llvm::find(returned, g) - returned.begin();
  };
  // The parameters (or views) whose gradients B computed, returned after
  // every B contribution to them.
  llvm::SetVector<Value> weightsFromB;
  for (const OpPlan &plan : llvm::reverse(plans)) {
    if (plan.paramView)
      continue;
    SmallVector<Value> resultGrads;
    if (!lookupResultGrads(plan.op, grads, resultGrads))
      continue;
    if (plan.hasW())
      for (Value result : plan.op->getResults())
        returnForW(result);
    if (plan.weightsInB) {
      // First, as the device fuses them: parameter sums, input gradient.
      if (failed(applyRule(plan, plan.wantedW, plan.readsW, map, resultGrads,
                           /*weights=*/true, grads)))
        return failure();
      for (auto [i, want] : llvm::enumerate(plan.wantedW))
        if (want)
          weightsFromB.insert(plan.op->getOperand(i));
    }
    if (!plan.hasB())
      continue;
    if (failed(applyRule(plan, plan.wantedB, plan.readsB, map, resultGrads,
                         /*weights=*/false, grads)))
      return failure();
  }
  for (Value v : weightsFromB)
    returnForW(v);
  tagger.layer = nullptr;
  builder.setListener(nullptr);

  // A chunk's B returns the gradients of the activations it received first
  // (zeros where the chunk's outputs do not depend on one), in the
  // arguments' precision, then the dYs.
  SmallVector<Value> results;
  Location loc = bwdInput.getLoc();
  for (unsigned i : activationArgs) {
    auto type = cast<RankedTensorType>(fwd.getArgument(i).getType());
    Value g = grads.lookup(fwd.getArgument(i));
    if (!g)
      g = arith::ConstantOp::create(
          builder, loc, type,
          DenseElementsAttr::get(
              type, builder.getFloatAttr(type.getElementType(), 0.0)));
    else if (g.getType() != type)
      g = CastOp::create(builder, loc, type, g);
    results.push_back(g);
  }
  llvm::append_range(results, returned);
  func::ReturnOp::create(builder, loc, results);
  bwdInput.setFunctionType(
      builder.getFunctionType(inputs, ValueRange(results).getTypes()));
  return success();
}

LogicalResult TrainingBuilder::buildWeightGrads() {
  SmallVector<Type> inputs, results;
  for (unsigned i : weightArgs)
    inputs.push_back(fwd.getArgument(i).getType());
  for (Value v : stash)
    if (stashW.contains(v))
      inputs.push_back(v.getType());
  ArrayRef<Type> dyTypes =
      bwdInput.getFunctionType().getResults().drop_front(activationArgs.size());
  llvm::append_range(inputs, dyTypes);
  for (unsigned i : paramArgs)
    results.push_back(cast<RankedTensorType>(fwd.getArgument(i).getType())
                          .clone(builder.getF32Type()));
  bwdWeight = createFunction(names.weightGrad, inputs, results);

  IRMapping map;
  DenseMap<Value, Value> grads;
  unsigned next = 0;
  for (unsigned i : weightArgs) {
    bwdWeight.setArgAttrs(next, fwd.getArgAttrDict(i));
    map.map(fwd.getArgument(i), bwdWeight.getArgument(next++));
  }
  for (Value v : stash)
    if (stashW.contains(v))
      map.map(v, bwdWeight.getArgument(next++));
  for (auto [result, index] : dys)
    grads[result] = bwdWeight.getArgument(next + index);

  builder.setInsertionPointToStart(&bwdWeight.getBody().front());
  builder.setListener(&tagger);
  for (const OpPlan &plan : llvm::reverse(plans)) {
    if (!plan.hasW())
      continue;
    SmallVector<Value> resultGrads;
    if (!lookupResultGrads(plan.op, grads, resultGrads))
      continue;
    SmallVector<bool> wanted =
        plan.paramView ? SmallVector<bool>{true} : plan.wantedW;
    if (failed(applyRule(plan, wanted, plan.readsW, map, resultGrads,
                         /*weights=*/true, grads)))
      return failure();
  }
  tagger.layer = nullptr;
  builder.setListener(nullptr);

  // One f32 gradient per parameter, in the parameters' order; a parameter
  // the loss does not reach gets zeros.
  SmallVector<Value> returned;
  Location loc = bwdWeight.getLoc();
  for (auto [index, i] : llvm::enumerate(paramArgs)) {
    auto type = cast<RankedTensorType>(results[index]);
    Value g = grads.lookup(fwd.getArgument(i));
    if (!g)
      g = arith::ConstantOp::create(
          builder, loc, type,
          DenseElementsAttr::get(type, builder.getF32FloatAttr(0.0f)));
    else if (g.getType() != type)
      g = CastOp::create(builder, loc, type, g);
    returned.push_back(g);
    bwdWeight.setResultAttr(index, kGradAttrName,
                            fwd.getArgAttr(i, kParamAttrName));
  }
  func::ReturnOp::create(builder, loc, returned);
  return success();
}

void TrainingBuilder::markStash() {
  DenseMap<Operation *, SmallVector<int64_t>> layers;
  for (Value v : stash) {
    IntegerAttr layer = stashLayer.lookup(v);
    auto result = dyn_cast<OpResult>(v);
    if (!layer || !result)
      continue;
    SmallVector<int64_t> &entry = layers[result.getOwner()];
    entry.resize(result.getOwner()->getNumResults(), -1);
    entry[result.getResultNumber()] = layer.getInt();
  }
  for (auto &[op, entry] : layers)
    op->setAttr(kStashLayerAttrName, builder.getDenseI64ArrayAttr(entry));
}

void TrainingBuilder::finishForward() {
  auto ret = cast<func::ReturnOp>(fwd.getBody().front().getTerminator());
  SmallVector<Value> results(ret.getOperands());
  unsigned numOutputs = results.size();
  llvm::append_range(results, stash);
  ret->setOperands(results);
  fwd.setFunctionType(builder.getFunctionType(fwd.getArgumentTypes(),
                                              ValueRange(results).getTypes()));
  for (auto [i, v] : llvm::enumerate(stash)) {
    unsigned index = i + numOutputs;
    StringRef readers =
        stashB.contains(v) ? (stashW.contains(v) ? "BW" : "B") : "W";
    fwd.setResultAttr(index, kStashAttrName, builder.getStringAttr(readers));
    if (IntegerAttr layer = stashLayer.lookup(v))
      fwd.setResultAttr(index, kLayerAttrName, layer);
  }
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

Value mlir::tpc::sliceMicrobatch(OpBuilder &builder, Location loc, Value full,
                                 Value offset, int64_t rows) {
  auto type = cast<RankedTensorType>(full.getType());
  RankedTensorType sliced = microbatchType(type, rows);
  SmallVector<OpFoldResult> offsets(type.getRank(), builder.getIndexAttr(0)),
      sizes, strides(type.getRank(), builder.getIndexAttr(1));
  offsets[0] = offset;
  for (int64_t size : sliced.getShape())
    sizes.push_back(builder.getIndexAttr(size));
  return tensor::ExtractSliceOp::create(builder, loc, sliced, full, offsets,
                                        sizes, strides);
}

void TrainingBuilder::buildDriver() {
  // The whole model's parameters come first (checkArguments).
  unsigned numParams = paramArgs.size();
  Type f32 = builder.getF32Type();
  SmallVector<Type> inputs(forward.getArgumentTypes()), gradTypes;
  for (unsigned i = 0; i < numParams; ++i) {
    // Master weights stay f32 whatever the model's precision.
    inputs[i] = cast<RankedTensorType>(inputs[i]).clone(f32);
    gradTypes.push_back(inputs[i]);
  }
  auto scalarF32 = RankedTensorType::get({}, f32);
  SmallVector<Type> results = {scalarF32};
  llvm::append_range(results, gradTypes);
  driver = createFunction(kTrainStepName, inputs, results);
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    driver.setArgAttrs(i, forward.getArgAttrDict(i));
  driver.setResultAttr(0, kOutputAttrName, builder.getStringAttr("loss"));
  for (unsigned i = 0; i < numParams; ++i)
    driver.setResultAttr(i + 1, kGradAttrName,
                         forward.getArgAttr(i, kParamAttrName));
  driver->setAttr(kMicrobatchesAttrName,
                  builder.getI64IntegerAttr(microbatches));

  Location loc = driver.getLoc();
  builder.setInsertionPointToStart(&driver.getBody().front());
  SmallVector<Value> params;
  for (unsigned i = 0; i < numParams; ++i) {
    Value master = driver.getArgument(i);
    Type model = forward.getArgument(i).getType();
    params.push_back(master.getType() == model
                         ? master
                         : CastOp::create(builder, loc, model, master));
  }
  Value ids = driver.getArgument(*idsArg);
  Value labels = driver.getArgument(*labelsArg);

  // Every microbatch scales by the global target count.
  Value total =
      CountTargetsOp::create(builder, loc, labels, loss.getIgnoreIndexAttr());
  Value dlossSum = InverseCountOp::create(builder, loc, total);
  // Accumulators start at zero (tpc.add folds the first addition away).
  auto zeros = [&](Type type) -> Value {
    auto tensor = cast<RankedTensorType>(type);
    return arith::ConstantOp::create(
        builder, loc, tensor,
        DenseElementsAttr::get(tensor, builder.getF32FloatAttr(0.0f)));
  };
  SmallVector<Value> init = {zeros(scalarF32)};
  for (Type type : gradTypes)
    init.push_back(zeros(type));

  int64_t micro = batch / microbatches;
  Value lower = arith::ConstantIndexOp::create(builder, loc, 0);
  Value upper = arith::ConstantIndexOp::create(builder, loc, microbatches);
  Value step = arith::ConstantIndexOp::create(builder, loc, 1);
  Value microSize = arith::ConstantIndexOp::create(builder, loc, micro);
  auto loop = scf::ForOp::create(
      builder, loc, lower, upper, step, init,
      [&](OpBuilder &b, Location loc, Value iv, ValueRange acc) {
        Value offset = arith::MulIOp::create(b, loc, iv, microSize);
        auto slice = [&](Value full) {
          return sliceMicrobatch(b, loc, full, offset, micro);
        };
        SmallVector<Value> fArgs(params);
        for (unsigned i = numParams, e = forward.getNumArguments(); i < e; ++i)
          fArgs.push_back(i == *idsArg ? slice(ids) : slice(labels));
        Value index = arith::IndexCastOp::create(b, loc, b.getI64Type(), iv);
        fArgs.push_back(tensor::FromElementsOp::create(
            b, loc, RankedTensorType::get({}, b.getI64Type()), index));

        auto f = func::CallOp::create(b, loc, fwd, fArgs);
        SmallVector<Value> bArgs(fArgs), wArgs;
        bArgs.push_back(dlossSum);
        for (unsigned i : weightArgs)
          wArgs.push_back(fArgs[i]);
        for (auto [i, v] : llvm::enumerate(stash)) {
          Value stashed = f.getResult(i + 2);
          if (stashB.contains(v))
            bArgs.push_back(stashed);
          if (stashW.contains(v))
            wArgs.push_back(stashed);
        }
        auto bCall = func::CallOp::create(b, loc, bwdInput, bArgs);
        llvm::append_range(wArgs, bCall.getResults());
        auto wCall = func::CallOp::create(b, loc, bwdWeight, wArgs);

        SmallVector<Value> next = {
            AddOp::create(b, loc, acc[0], f.getResult(0))};
        for (auto [sum, g] : llvm::zip(acc.drop_front(), wCall.getResults()))
          next.push_back(AddOp::create(b, loc, sum, g));
        scf::YieldOp::create(b, loc, next);
      });

  SmallVector<Value> returned = {
      LossMeanOp::create(builder, loc, loop.getResult(0), total)};
  llvm::append_range(returned, loop.getResults().drop_front());
  func::ReturnOp::create(builder, loc, returned);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

LogicalResult TrainingBuilder::run() {
  if (failed(checkForward()))
    return failure();
  auto cleanup = [&] {
    for (func::FuncOp func : {driver, bwdWeight, bwdInput, fwd})
      if (func)
        func.erase();
    return failure();
  };
  if (failed(buildForward()) || failed(planBackward()) ||
      failed(buildInputGrads()) || failed(buildWeightGrads()))
    return cleanup();
  finishForward();
  markStash();
  if (wholeModel)
    buildDriver();
  for (func::FuncOp func : {fwd, bwdInput, bwdWeight, driver})
    if (func && failed(verify(func)))
      return cleanup();
  return success();
}

TrainingFunctions TrainingBuilder::built() const {
  TrainingFunctions functions;
  functions.forward = fwd;
  functions.inputGrad = bwdInput;
  functions.weightGrad = bwdWeight;
  functions.computesLoss = static_cast<bool>(loss);
  if (loss)
    functions.ignoreIndex = CrossEntropyOp(loss).getIgnoreIndexAttr();
  functions.numOutputs = loss ? 2 : seeds.size();
  functions.paramArgs.assign(paramArgs);
  functions.activationArgs.assign(activationArgs);
  functions.idsArg = idsArg;
  functions.labelsArg = labelsArg;
  functions.weightArgs.assign(weightArgs.begin(), weightArgs.end());
  for (auto [i, v] : llvm::enumerate(stash)) {
    if (stashB.contains(v))
      functions.stashB.push_back(functions.numOutputs + i);
    if (stashW.contains(v))
      functions.stashW.push_back(functions.numOutputs + i);
  }
  return functions;
}

LogicalResult mlir::tpc::buildTrainingFunctions(ModuleOp module,
                                                unsigned microbatches) {
  // A no-op inside a pass that declares them (tpc-autodiff does); a tool
  // calling this directly may not have loaded them yet.
  module.getContext()
      ->loadDialect<arith::ArithDialect, func::FuncDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
  // A @forward of calls (pipeline chunks): each callee differentiated on
  // its own.
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward");
      forward && !forward.isExternal() && forward.getBody().hasOneBlock()) {
    Block &body = forward.getBody().front();
    if (!body.without_terminator().empty() &&
        llvm::all_of(body.without_terminator(),
                     [](Operation &op) { return isa<func::CallOp>(op); }))
      return buildChunkedTrainingStep(module, forward, microbatches);
  }
  return TrainingBuilder(module, microbatches).run();
}

FailureOr<TrainingFunctions>
mlir::tpc::buildChunkTrainingFunctions(func::FuncOp chunk,
                                       unsigned microbatches,
                                       StringRef suffix) {
  chunk.getContext()
      ->loadDialect<arith::ArithDialect, func::FuncDialect,
                    tensor::TensorDialect>();
  TrainingBuilder builder(chunk, microbatches, suffix);
  if (failed(builder.run()))
    return failure();
  return builder.built();
}

StashSummary mlir::tpc::summarizeStash(func::FuncOp trainF) {
  StashSummary summary;
  for (unsigned i = 0, e = trainF.getNumResults(); i < e; ++i) {
    if (!trainF.getResultAttr(i, kStashAttrName))
      continue;
    int64_t bytes = byteSize(trainF.getResultTypes()[i]);
    auto layer = trainF.getResultAttrOfType<IntegerAttr>(i, kLayerAttrName);
    StashSummary::Entry &entry =
        layer ? summary.layers[layer.getInt()] : summary.outside;
    for (StashSummary::Entry *e : {&entry, &summary.total}) {
      ++e->values;
      e->bytes += bytes;
    }
  }
  return summary;
}

FailureOr<StashSummary> mlir::tpc::computeStashSummary(ModuleOp module,
                                                       unsigned microbatches) {
  OwningOpRef<ModuleOp> copy = module.clone();
  if (failed(buildTrainingFunctions(*copy, microbatches)))
    return failure();
  return summarizeStash(copy->lookupSymbol<func::FuncOp>(kTrainForwardName));
}

FailureOr<int64_t> mlir::tpc::computeLayerStashBytes(ModuleOp module,
                                                     int64_t layer,
                                                     unsigned microbatches) {
  FailureOr<StashSummary> summary = computeStashSummary(module, microbatches);
  if (failed(summary))
    return failure();
  return summary->layers.lookup(layer).bytes;
}

namespace {
struct AutodiffPass : public tpc::impl::TpcAutodiffBase<AutodiffPass> {
  using TpcAutodiffBase::TpcAutodiffBase;

  void runOnOperation() override {
    if (failed(buildTrainingFunctions(getOperation(), microbatches)))
      signalPassFailure();
  }
};
} // namespace
