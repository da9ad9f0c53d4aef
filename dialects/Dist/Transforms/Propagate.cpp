//===- Propagate.cpp - dist-propagate -------------------------------------===//
//
// Decides every value's sharding from the annotated ones with the ops'
// sharding rules; see Passes.td for the policy.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/ShardingRule.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPROPAGATE
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

unsigned rankOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type ? type.getRank() : 0;
}

class FunctionPropagation {
public:
  FunctionPropagation(func::FuncOp func, const MeshInfo &mesh,
                      bool gatherParameters)
      : func(func), mesh(mesh), gatherParameters(gatherParameters) {}

  LogicalResult run();

private:
  func::FuncOp func;
  const MeshInfo &mesh;
  bool gatherParameters;
  DenseMap<Value, Layout> layouts;
  DenseSet<Value> pinnedValues;
  /// Annotated parameters, and their casts to the model's precision and
  /// views, with the parameter's name: pinned, never gathered.
  DenseMap<Value, StringAttr> parameters;
  DenseMap<Operation *, OpPlan> plans;
  /// Layouts of the results of operand-less ops, from their readers.
  DenseMap<Operation *, Layout> fromReaders;
  /// Partial operands of ops that sum their operands apart (the gradient
  /// norm's sum_squares), reduced into the split another reader of the
  /// value needs (the optimizer's shard): one reduction serves both.
  DenseMap<std::pair<Operation *, unsigned>, Layout> sumOperandsFromReaders;
  /// Results of ops whose block factor is theirs alone (an embedding
  /// gradient's vocabulary), computed in the blocks a reader needs.
  DenseMap<Operation *, Layout> blocksForReaders;
  /// Partial or sequence-split values that a bias gradient (sum_to) reads
  /// and another reader of the same phase all-reduces or gathers anyway:
  /// read as that reader does.
  DenseMap<Operation *, Layout> sumToReadsReduced;

  Layout layoutOf(Value value) const {
    auto it = layouts.find(value);
    return it != layouts.end() ? it->second : Layout::replicated(rankOf(value));
  }
  LogicalResult seedArguments();
  LogicalResult sweep();
  FailureOr<OpPlan> planFor(Operation *op);
  LogicalResult checkParameters(Operation *op, const OpPlan &plan);
  void sumSplitGroups(tpc::SumGroupsOp op, const Layout &input, OpPlan &plan);
  void followParameter(Operation *op);
  OpPlan returnPlan(func::ReturnOp op);
  bool takeLayoutsFromReaders();
  bool sumOperandsAsReadersReduce();
  std::optional<Layout> splitWantedOf(Value value, unsigned depth) const;
  bool computeBlocksForReaders();
  bool sumToAsReadersReduce();
  void writeAttributes();
};

LogicalResult FunctionPropagation::seedArguments() {
  llvm::StringMap<BlockArgument> params;
  for (BlockArgument arg : func.getArguments())
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      "tpc.param"))
      params[name.getValue()] = arg;
  auto given = [&](BlockArgument arg) -> FailureOr<std::optional<Layout>> {
    auto attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                    kShardingAttr);
    if (!attr)
      return std::optional<Layout>();
    Layout layout = Layout::fromAttr(attr);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || layout.hasPartial() || !mesh.localType(type, layout))
      return func.emitError() << "argument " << arg.getArgNumber()
                              << ": sharding " << attr << " does not fit "
                              << arg.getType();
    return std::optional<Layout>(layout);
  };
  for (BlockArgument arg : func.getArguments()) {
    FailureOr<std::optional<Layout>> layout = given(arg);
    if (failed(layout))
      return failure();
    if (*layout) {
      layouts[arg] = **layout;
      pinnedValues.insert(arg);
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "tpc.param"))
        parameters[arg] = name;
    }
  }
  // Optimizer state is laid out like its parameter.
  for (BlockArgument arg : func.getArguments()) {
    auto state = func.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(),
                                                       "tpc.state");
    auto param = state ? state.getAs<StringAttr>("param") : StringAttr();
    if (!param || layouts.count(arg))
      continue;
    auto it = params.find(param.getValue());
    if (it == params.end())
      continue;
    // Padded like its parameter (dist-pad-vocab ran before the optimizer
    // made the state).
    if (Attribute unpadded = func.getArgAttr(it->second.getArgNumber(),
                                             kUnpaddedShapeAttr))
      func.setArgAttr(arg.getArgNumber(), kUnpaddedShapeAttr, unpadded);
    if (layouts.count(it->second)) {
      // A copy: inserting `arg` may move the map's entries.
      Layout layout = layouts.lookup(it->second);
      layouts[arg] = layout;
      pinnedValues.insert(arg);
    }
  }
  return success();
}

FailureOr<OpPlan> FunctionPropagation::planFor(Operation *op) {
  SmallVector<Layout> current;
  SmallVector<Hold> hold;
  for (Value operand : op->getOperands()) {
    current.push_back(layoutOf(operand));
    Hold firmness = Hold::Derived;
    if (parameters.count(operand))
      firmness = Hold::Parameter;
    else if (pinnedValues.contains(operand))
      firmness = Hold::Annotated;
    hold.push_back(firmness);
  }
  if (auto shard = dyn_cast<ShardOp>(op)) {
    OpPlan plan{current, {Layout::fromAttr(shard.getSharding())}};
    return plan;
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    // A dimension that is cut must be whole; the others keep their split.
    Layout layout = current.front().withoutPartial();
    ArrayRef<int64_t> source = slice.getSourceType().getShape();
    ArrayRef<int64_t> sizes = slice.getStaticSizes();
    for (auto [d, axes] : llvm::enumerate(layout.dims))
      if (sizes[d] != source[d])
        axes.clear();
    OpPlan plan{{layout}, {layout}};
    for (size_t i = 1; i < current.size(); ++i)
      plan.operands.push_back(current[i].withoutPartial());
    return plan;
  }
  if (auto sharded = dyn_cast<tpc::TpcShardingOpInterface>(op)) {
    tpc::ShardingRule rule = sharded.getShardingRule();
    if (rule.sumsOperandsApart) {
      // Each operand keeps its split; dist-partition sums the groups apart.
      OpPlan plan;
      for (auto [i, layout] : llvm::enumerate(current)) {
        auto wanted = sumOperandsFromReaders.find({op, i});
        plan.operands.push_back(wanted != sumOperandsFromReaders.end()
                                    ? wanted->second
                                    : layout.withoutPartial());
      }
      for (Value result : op->getResults())
        plan.results.push_back(Layout::replicated(rankOf(result)));
      return plan;
    }
    if (auto reduced = sumToReadsReduced.find(op);
        reduced != sumToReadsReduced.end())
      current.front() = reduced->second;
    auto wanted = blocksForReaders.find(op);
    FailureOr<OpPlan> plan =
        planOp(op, rule, current, hold, mesh,
               wanted != blocksForReaders.end() ? &wanted->second : nullptr);
    if (failed(plan) || failed(checkParameters(op, *plan)))
      return failure();
    if (auto sum = dyn_cast<tpc::SumGroupsOp>(op))
      sumSplitGroups(sum, current.front(), *plan);
    if (fromReaders.count(op))
      plan->results.front() = fromReaders.lookup(op);
    return plan;
  }
  // Ops without a rule (constants) work on whole values.
  OpPlan plan;
  for (Value operand : op->getOperands()) {
    if (!layoutOf(operand).isReplicated())
      return op->emitError() << "has no sharding rule and reads a sharded "
                                "value (" << layoutOf(operand).str() << ")";
    plan.operands.push_back(Layout::replicated(rankOf(operand)));
  }
  for (Value result : op->getResults())
    plan.results.push_back(Layout::replicated(rankOf(result)));
  return plan;
}

/// A `tpc.sum_groups` whose grouped dimension is split finer than its
/// groups (the copies of replicated kv-heads, one per device: the groups'
/// factor cannot take the axes) sums partial sums instead of gathering its
/// input: each device pads its piece with zeros (`dist.shard_pad`, no
/// communication) and the smaller result is reduced where it is needed.
void FunctionPropagation::sumSplitGroups(tpc::SumGroupsOp op,
                                         const Layout &input, OpPlan &plan) {
  unsigned dim = op.getDim();
  const AxisList &split = input.dims[dim];
  Layout &need = plan.operands.front();
  if (split.empty() || !need.dims[dim].empty())
    return;
  AxisList used = need.splitAxes();
  llvm::append_range(used, need.partial);
  if (llvm::any_of(split,
                   [&](StringRef axis) { return is_contained(used, axis); }))
    return;
  for (Layout *layout : {&need, &plan.results.front()}) {
    llvm::append_range(layout->partial, split);
    mesh.sortAxes(layout->partial);
  }
}

/// A parameter's annotated split is undone only where the pass is told to
/// (`gather-parameters`): an op that cannot keep it is an error naming the
/// parameter, never an all-gather chosen by the propagation.
LogicalResult FunctionPropagation::checkParameters(Operation *op,
                                                   const OpPlan &plan) {
  if (gatherParameters)
    return success();
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto it = parameters.find(operand);
    if (it == parameters.end() || i >= plan.operands.size())
      continue;
    Layout have = layoutOf(operand);
    const Layout &need = plan.operands[i];
    for (auto [haveAxes, needAxes] : llvm::zip(have.dims, need.dims))
      if (llvm::any_of(haveAxes, [&](StringRef axis) {
            return !llvm::is_contained(needAxes, axis);
          }))
        return op->emitError()
               << "operand " << i << " would gather parameter '"
               << it->second.getValue() << "' from " << have.str() << " to "
               << need.str()
               << " (a parameter's split is kept; gather-parameters allows "
                  "this)";
  }
  return success();
}

/// A cast or view of a parameter is the parameter in another type: held
/// like it, so that a conflicting activation is resharded instead.
void FunctionPropagation::followParameter(Operation *op) {
  if (!isa<tpc::CastOp, tpc::ReshapeOp, tpc::TransposeOp>(op) ||
      op->getNumOperands() != 1 || !parameters.count(op->getOperand(0)))
    return;
  StringAttr name = parameters.lookup(op->getOperand(0));
  parameters[op->getResult(0)] = name;
}

/// Outputs are whole; gradients, updated parameters and state keep their
/// parameter's layout.
OpPlan FunctionPropagation::returnPlan(func::ReturnOp op) {
  llvm::StringMap<Layout> paramLayouts;
  for (BlockArgument arg : func.getArguments())
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      "tpc.param"))
      paramLayouts[name.getValue()] = layoutOf(arg).withoutPartial();
  OpPlan plan;
  for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
    StringAttr param;
    for (StringRef key : {"tpc.grad", "tpc.update"})
      if (!param)
        param = func.getResultAttrOfType<StringAttr>(i, key);
    if (auto state = func.getResultAttrOfType<DictionaryAttr>(i, "tpc.state"))
      param = state.getAs<StringAttr>("param");
    Layout layout = Layout::replicated(rankOf(operand));
    if (param && paramLayouts.count(param.getValue()) &&
        paramLayouts[param.getValue()].dims.size() == layout.dims.size())
      layout = paramLayouts[param.getValue()];
    plan.operands.push_back(layout);
  }
  return plan;
}

LogicalResult FunctionPropagation::sweep() {
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      plans[&op] = returnPlan(ret);
      continue;
    }
    FailureOr<OpPlan> plan = planFor(&op);
    if (failed(plan))
      return failure();
    for (auto [result, layout] : llvm::zip(op.getResults(), plan->results)) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (type && !mesh.localType(type, layout))
        return op.emitError() << "result sharding " << layout.str()
                              << " does not divide " << type;
      layouts[result] = layout;
    }
    if (isa<ShardOp>(op))
      pinnedValues.insert(op.getResult(0));
    followParameter(&op);
    plans[&op] = std::move(*plan);
  }
  return success();
}

/// An op that reads no tensor (a dropout mask) is laid out as its first reader
/// needs it, rather than drawn whole and sliced. Returns whether anything
/// changed.
bool FunctionPropagation::takeLayoutsFromReaders() {
  bool changed = false;
  for (Operation &op : func.getBody().front()) {
    // Whole scalar operands (a dropout block) say nothing about the layout;
    // a partial one (a microbatch's loss sum) does.
    bool readsTensors = llvm::any_of(op.getOperands(), [&](Value operand) {
      return rankOf(operand) != 0 || !layoutOf(operand).isReplicated();
    });
    if (readsTensors || op.getNumResults() != 1 ||
        !isa<tpc::TpcShardingOpInterface>(op))
      continue;
    Value result = op.getResult(0);
    Operation *reader = nullptr;
    for (Operation *user : result.getUsers())
      if (!reader || user->isBeforeInBlock(reader))
        reader = user;
    if (!reader || !plans.count(reader))
      continue;
    Layout wanted;
    for (OpOperand &use : result.getUses())
      if (use.getOwner() == reader)
        wanted = plans[reader].operands[use.getOperandNumber()];
    wanted = wanted.withoutPartial();
    if (wanted != layoutOf(result)) {
      fromReaders[&op] = wanted;
      changed = true;
    }
  }
  return changed;
}

/// Replaces `decided` by `chosen`; returns whether they differed.
template <typename Map> static bool replaceIfChanged(Map &decided, Map chosen) {
  bool changed = chosen.size() != decided.size() ||
                 llvm::any_of(chosen, [&](const auto &entry) {
                   auto it = decided.find(entry.first);
                   return it == decided.end() || it->second != entry.second;
                 });
  decided = std::move(chosen);
  return changed;
}

/// Whether `to` is what reducing `from`'s partial sums gives when they are
/// scattered into one dim (dist-partition's reduce_scatter, all-reducing
/// the rest): `from`'s splits, one dim split further by partial axes, no
/// partial sum left.
static bool reducesInto(const Layout &from, const Layout &to) {
  if (to.hasPartial() || !from.hasPartial() ||
      from.dims.size() != to.dims.size())
    return false;
  auto scatter = reductionScatter(from, to, from.partial);
  if (!scatter)
    return false;
  for (auto [d, have, want] : llvm::enumerate(from.dims, to.dims))
    if (d != scatter->first && have != want)
      return false;
  return true;
}

/// A partial sum that an op summing its operands apart reads (the gradient
/// norm) and another reader needs reduce-scattered (the optimizer's shard
/// of a vocabulary-parallel embedding's gradient, computed over the whole
/// vocabulary): the sum reads that shard, so that one reduction serves
/// both, instead of an all-reduce of the whole value beside it. Returns
/// whether anything changed.
bool FunctionPropagation::sumOperandsAsReadersReduce() {
  DenseMap<std::pair<Operation *, unsigned>, Layout> chosen;
  for (Operation &op : func.getBody().front()) {
    auto sharded = dyn_cast<tpc::TpcShardingOpInterface>(op);
    if (!sharded || !sharded.getShardingRule().sumsOperandsApart)
      continue;
    for (OpOperand &operand : op.getOpOperands()) {
      Layout from = layoutOf(operand.get());
      // The first other reader (in program order of its uses) that
      // reduce-scatters the value.
      for (OpOperand &use : operand.get().getUses()) {
        if (use.getOwner() == &op || !plans.count(use.getOwner()))
          continue;
        const Layout &wanted =
            plans[use.getOwner()].operands[use.getOperandNumber()];
        if (reducesInto(from, wanted)) {
          chosen[{&op, operand.getOperandNumber()}] = wanted;
          break;
        }
      }
    }
  }
  return replaceIfChanged(sumOperandsFromReaders, std::move(chosen));
}

/// The phase whose readers of `op`'s operands share their gathers and
/// reductions in dist-partition ("" where it has none).
static std::string sharingPhaseOf(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>(tpc::kPhaseAttrName);
  return phase ? tpc::phaseSharingCollectives(phase.getValue()) : "";
}

/// A bias gradient (sum_to over the leading dims) of a row-parallel
/// linear's output gradient, which tensor parallelism leaves a partial sum
/// (sequence parallelism: split along the sequence) that the weight
/// gradient reads all-reduced (all-gathered) in the same phase: the sum_to
/// reads that value too, so that one collective serves both, the bias
/// gradient is whole (no reduction of its own), and a device may compute
/// it in the weight gradient's product (the CUDA device's bias-gradient
/// epilogue needs both to read the same dY). Only a partial sum reduced and
/// splits of the summed dims gathered: the rest of the layout stays.
/// Returns whether anything changed.
bool FunctionPropagation::sumToAsReadersReduce() {
  DenseMap<Operation *, Layout> chosen;
  for (Operation &op : func.getBody().front()) {
    auto sum = dyn_cast<tpc::SumToOp>(op);
    if (!sum)
      continue;
    Value input = sum.getInput();
    Layout from = layoutOf(input);
    size_t summed = rankOf(input) - rankOf(sum.getResult());
    // Whether `to` is `from` with its partial sums reduced and some splits
    // of the summed dims gathered, and differs.
    auto reducesOrGathers = [&](const Layout &to) {
      if (to.hasPartial() || to.dims.size() != from.dims.size())
        return false;
      bool moves = from.hasPartial();
      for (auto [d, have, want] : llvm::enumerate(from.dims, to.dims)) {
        if (have == want)
          continue;
        if (d >= summed || want.size() > have.size() ||
            !std::equal(want.begin(), want.end(), have.begin()))
          return false;
        moves = true;
      }
      return moves;
    };
    std::string phase = sharingPhaseOf(&op);
    for (OpOperand &use : input.getUses()) {
      Operation *reader = use.getOwner();
      auto plan = plans.find(reader);
      if (reader == &op || plan == plans.end() ||
          use.getOperandNumber() >= plan->second.operands.size() ||
          sharingPhaseOf(reader) != phase)
        continue;
      const Layout &wanted = plan->second.operands[use.getOperandNumber()];
      if (reducesOrGathers(wanted)) {
        chosen[&op] = wanted;
        break;
      }
    }
  }
  return replaceIfChanged(sumToReadsReduced, std::move(chosen));
}

/// The split the readers of `value` need, looking through same-shaped adds
/// and casts that need it whole (a gradient summed over microbatches or
/// with a tied table's other gradient on its way to the optimizer, which
/// needs the parameter's split); none when every reader takes it whole.
std::optional<Layout> FunctionPropagation::splitWantedOf(Value value,
                                                         unsigned depth) const {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return std::nullopt;
  SmallVector<OpOperand *> uses =
      llvm::map_to_vector(value.getUses(), [](OpOperand &use) { return &use; });
  llvm::sort(uses, [](OpOperand *a, OpOperand *b) {
    return a->getOwner()->isBeforeInBlock(b->getOwner());
  });
  for (OpOperand *use : uses) {
    Operation *reader = use->getOwner();
    auto plan = plans.find(reader);
    if (plan == plans.end() ||
        use->getOperandNumber() >= plan->second.operands.size())
      continue;
    Layout need = plan->second.operands[use->getOperandNumber()];
    if (!need.withoutPartial().isReplicated())
      return need.withoutPartial();
    if (depth == 0 || !isa<tpc::AddOp, tpc::CastOp>(reader) ||
        reader->getNumResults() != 1)
      continue;
    auto next = dyn_cast<RankedTensorType>(reader->getResult(0).getType());
    if (next && next.getShape() == type.getShape())
      if (std::optional<Layout> wanted =
              splitWantedOf(reader->getResult(0), depth - 1))
        return wanted;
  }
  return std::nullopt;
}

/// An op whose block factor appears in its result alone (embedding_grad:
/// the table's rows) computes the block of the result its readers need,
/// instead of the whole result and a slice or reduce-scatter of it. Where
/// an operand is split or partial over the block's axes it is gathered or
/// reduced over them first, which the op does only when each device's
/// operand (split by the other axes: dp's share of the tokens) has at most
/// the whole result's elements, i.e. moves fewer bytes (a vocabulary at
/// least as large as a device's tokens of dY). Returns whether anything
/// changed.
bool FunctionPropagation::computeBlocksForReaders() {
  DenseMap<Operation *, Layout> chosen;
  for (Operation &op : func.getBody().front()) {
    auto sharded = dyn_cast<tpc::TpcShardingOpInterface>(op);
    if (!sharded || op.getNumResults() != 1)
      continue;
    tpc::ShardingRule rule = sharded.getShardingRule();
    if (!rule.blockFactor || rule.results.empty() ||
        !resultOnlyFactors(rule)[*rule.blockFactor])
      continue;
    std::optional<Layout> wanted = splitWantedOf(op.getResult(0), 8);
    if (!wanted)
      continue;
    Layout blocks = Layout::replicated(wanted->dims.size());
    for (auto [d, dim] : llvm::enumerate(rule.results.front()))
      if (!dim.empty() && dim.front() == *rule.blockFactor)
        blocks.dims[d] = wanted->dims[d];
    if (blocks.isReplicated())
      continue;
    int64_t resultElements =
        cast<RankedTensorType>(op.getResult(0).getType()).getNumElements();
    AxisList axes = blocks.splitAxes();
    bool moves = false, cheaper = true;
    auto inBlocks = [&](StringRef axis) { return is_contained(axes, axis); };
    for (Value operand : op.getOperands()) {
      Layout layout = layoutOf(operand);
      AxisList used = layout.splitAxes();
      llvm::append_range(used, layout.partial);
      if (llvm::none_of(used, inBlocks))
        continue;
      moves = true;
      AxisList others = llvm::to_vector(llvm::make_filter_range(
          layout.splitAxes(), [&](StringRef axis) { return !inBlocks(axis); }));
      auto type = cast<RankedTensorType>(operand.getType());
      cheaper &=
          type.getNumElements() / mesh.groupSize(others) <= resultElements;
    }
    if (!moves || cheaper)
      chosen[&op] = blocks;
  }
  return replaceIfChanged(blocksForReaders, std::move(chosen));
}

void FunctionPropagation::writeAttributes() {
  MLIRContext *context = func.getContext();
  auto attrs = [&](ArrayRef<Layout> list) {
    return ArrayAttr::get(context,
                          llvm::map_to_vector(list, [&](const Layout &l) {
                            return Attribute(l.toAttr(context, mesh.symbol()));
                          }));
  };
  for (Operation &op : func.getBody().front()) {
    const OpPlan &plan = plans[&op];
    op.setAttr(kOperandShardingsAttr, attrs(plan.operands));
    if (op.getNumResults() != 0)
      op.setAttr(kResultShardingsAttr, attrs(plan.results));
  }
  for (BlockArgument arg : func.getArguments()) {
    Layout layout = layoutOf(arg);
    if (!layout.isReplicated())
      func.setArgAttr(arg.getArgNumber(), kShardingAttr,
                      layout.toAttr(context, mesh.symbol()));
  }
}

LogicalResult FunctionPropagation::run() {
  if (failed(seedArguments()))
    return failure();
  // A second sweep lets operand-less ops take their readers' layouts, the
  // gradient norm read the optimizer's shards and an embedding gradient
  // compute the optimizer's block.
  for (int round = 0; round < 4; ++round) {
    if (failed(sweep()))
      return failure();
    bool fromReadersChanged = takeLayoutsFromReaders();
    bool blocksChanged = computeBlocksForReaders();
    bool sumToChanged = sumToAsReadersReduce();
    if (!sumOperandsAsReadersReduce() && !fromReadersChanged &&
        !blocksChanged && !sumToChanged)
      break;
  }
  writeAttributes();
  return success();
}

struct DistPropagatePass
    : public dist::impl::DistPropagateBase<DistPropagatePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(forEachMeshFunction(
            getOperation(), [&](func::FuncOp func, const MeshInfo &mesh) {
              return FunctionPropagation(func, mesh, gatherParameters).run();
            })))
      signalPassFailure();
  }
};

} // namespace
