//===- Partition.cpp - dist-partition -------------------------------------===//
//
// Rewrites each function for one device: local types, and the collectives
// that take every operand from its layout to the one its op needs. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

SmallVector<Layout> layoutsOf(Operation *op, StringRef name) {
  SmallVector<Layout> layouts;
  if (auto list = op->getAttrOfType<ArrayAttr>(name))
    for (Attribute attr : list)
      layouts.push_back(Layout::fromAttr(cast<ShardingAttr>(attr)));
  return layouts;
}

AxisList minus(ArrayRef<StringRef> all, ArrayRef<StringRef> removed) {
  AxisList rest;
  for (StringRef axis : all)
    if (!llvm::is_contained(removed, axis))
      rest.push_back(axis);
  return rest;
}

bool drawsDropout(Operation *op) {
  return isa<tpc::TpcDropoutDrawOpInterface>(op);
}

class FunctionPartition {
public:
  FunctionPartition(func::FuncOp func, const MeshInfo &mesh)
      : func(func), mesh(mesh), context(func.getContext()) {}

  LogicalResult run();

private:
  func::FuncOp func;
  const MeshInfo &mesh;
  MLIRContext *context;
  /// The global layout of every local value.
  DenseMap<Value, Layout> layouts;
  /// Reductions done, shared by later readers: (value, layout after).
  DenseMap<std::pair<Value, Attribute>, Value> reductions;
  /// Gathers and slices done, shared by later readers of the same phase
  /// (`sharingPhase`): (value, target, phase). A forward and a backward
  /// reader do not share one, so the stash keeps the shard and the backward
  /// gathers it again.
  DenseMap<std::tuple<Value, Attribute, Attribute>, Value> moves;

  /// The phase whose readers share a gather (`tpc.phase` of the unrolled
  /// step): the forward (F) apart, the backward's input and weight
  /// gradients (B, W) together: tpc-unroll-train-step runs each layer's W
  /// right after its B, so a row-parallel matmul's gathered output gradient
  /// serves both, as in Megatron, without living across other layers.
  Attribute sharingPhase(Operation *user) {
    auto phase = user->getAttrOfType<StringAttr>(tpc::kPhaseAttrName);
    if (!phase)
      return phase;
    return StringAttr::get(context,
                           tpc::phaseSharingCollectives(phase.getValue()));
  }

  Layout layoutOf(Value value) {
    auto it = layouts.find(value);
    if (it != layouts.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(value.getType());
    return Layout::replicated(type ? type.getRank() : 0);
  }
  ArrayAttr axesAttr(ArrayRef<StringRef> axes) {
    Builder builder(context);
    return builder.getStrArrayAttr(llvm::to_vector_of<StringRef>(axes));
  }
  RankedTensorType withDim(Value value, int64_t dim, int64_t size) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = size;
    return type.clone(shape);
  }
  FailureOr<Value> reshard(Operation *user, unsigned operand, Value value,
                           const Layout &to);
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionSumsApart(Operation *op);
  LogicalResult partitionSlice(tensor::ExtractSliceOp op);
};

FailureOr<Value> FunctionPartition::reshard(Operation *user, unsigned operand,
                                            Value value, const Layout &to) {
  Layout from = layoutOf(value);
  if (from == to)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  // A partial sum the value is not yet can only come from its own splits.
  AxisList pad = minus(to.partial, from.partial);
  if (from.dims.size() != to.dims.size() ||
      !minus(pad, from.splitAxes()).empty())
    return user->emitError() << "operand " << operand << " cannot go from "
                             << from.str() << " to " << to.str();
  std::string why;
  llvm::raw_string_ostream(why) << user->getName() << " operand " << operand
                                << ": " << from.str() << " -> " << to.str();
  Location loc = NameLoc::get(StringAttr::get(context, why), user->getLoc());
  OpBuilder builder(user);
  FlatSymbolRefAttr meshRef = mesh.symbol();
  Layout current = from;
  Value local = value;

  // Partial sums: reduce-scatter into a dimension the target splits further,
  // all-reduce the rest.
  AxisList reduce = minus(from.partial, to.partial);
  if (!reduce.empty()) {
    Layout reduced = current;
    reduced.partial = to.partial;
    std::optional<std::pair<unsigned, AxisList>> scatter =
        reductionScatter(current, to, reduce);
    if (scatter)
      reduced.dims[scatter->first] = to.dims[scatter->first];
    auto key = std::make_pair(value, Attribute(reduced.toAttr(context, meshRef)));
    if (Value done = reductions.lookup(key)) {
      local = done;
    } else {
      if (scatter) {
        auto [dim, axes] = *scatter;
        int64_t size = type.getDimSize(dim) / mesh.groupSize(axes);
        local = ReduceScatterOp::create(builder, loc,
                                        withDim(local, dim, size), local,
                                        meshRef, axesAttr(axes), builder.getI64IntegerAttr(dim))
                    .getResult();
        reduce = minus(reduce, axes);
      }
      if (!reduce.empty()) {
        mesh.sortAxes(reduce);
        local = AllReduceOp::create(builder, loc, local.getType(), local,
                                    meshRef, axesAttr(reduce))
                    .getResult();
      }
      reductions[key] = local;
    }
    current = reduced;
  }
  auto moveKey = std::make_tuple(value, Attribute(to.toAttr(context, meshRef)),
                                 sharingPhase(user));
  if (Value done = moves.lookup(moveKey))
    return done;
  // Splits the target holds as partial sums: each device pads its piece
  // with zeros.
  for (auto [d, axes] : llvm::enumerate(current.dims)) {
    size_t keep = axes.size();
    while (keep > 0 && llvm::is_contained(pad, axes[keep - 1]))
      --keep;
    if (keep == axes.size())
      continue;
    AxisList extra(ArrayRef<StringRef>(axes).drop_front(keep));
    int64_t size = cast<RankedTensorType>(local.getType()).getDimSize(d) *
                   mesh.groupSize(extra);
    local = ShardPadOp::create(builder, loc, withDim(local, d, size), local,
                               meshRef, axesAttr(extra),
                               builder.getI64IntegerAttr(d))
                .getResult();
    axes.resize(keep);
    llvm::append_range(current.partial, extra);
    mesh.sortAxes(current.partial);
  }
  // Splits the target does not have: gather them back.
  for (auto [d, axes] : llvm::enumerate(to.dims)) {
    ArrayRef<StringRef> have = current.dims[d];
    size_t common = 0;
    while (common < have.size() && common < axes.size() &&
           have[common] == axes[common])
      ++common;
    if (common == have.size())
      continue;
    AxisList extra(have.drop_front(common));
    int64_t size = cast<RankedTensorType>(local.getType()).getDimSize(d) *
                   mesh.groupSize(extra);
    local = AllGatherOp::create(builder, loc, withDim(local, d, size), local,
                                meshRef, axesAttr(extra), builder.getI64IntegerAttr(d))
                .getResult();
    current.dims[d].resize(common);
  }
  // Splits the value lacks: keep this device's piece.
  for (auto [d, axes] : llvm::enumerate(to.dims)) {
    size_t have = current.dims[d].size();
    if (axes.size() == have)
      continue;
    AxisList extra(ArrayRef<StringRef>(axes).drop_front(have));
    int64_t size = cast<RankedTensorType>(local.getType()).getDimSize(d) /
                   mesh.groupSize(extra);
    local = ShardSliceOp::create(builder, loc, withDim(local, d, size), local,
                                 meshRef, axesAttr(extra), builder.getI64IntegerAttr(d))
                .getResult();
    current.dims[d] = axes;
  }
  layouts[local] = to;
  moves[moveKey] = local;
  return local;
}

/// The mesh axes that split the rule's block factor: those of the first
/// operand dimension it leads, else of the first result dimension (an
/// embedding gradient's rows); none if nothing carries it split.
static AxisList blockAxes(const tpc::ShardingRule &rule,
                          ArrayRef<Layout> operands, ArrayRef<Layout> results) {
  for (auto [tensors, layouts] : {std::pair(ArrayRef(rule.operands), operands),
                                  std::pair(ArrayRef(rule.results), results)})
    for (auto [factors, layout] : llvm::zip(tensors, layouts))
      for (auto [dim, axes] : llvm::zip(factors, layout.dims))
        if (!dim.empty() && dim.front() == *rule.blockFactor)
          return axes;
  return {};
}

/// An op that sums its operands apart (the global norm's sum of squares):
/// each group of operands with the same split is summed by a copy of the op
/// on its own and its partial sum reduced, so a replicated gradient is
/// counted once, not once per device.
LogicalResult FunctionPartition::partitionSumsApart(Operation *op) {
  SmallVector<std::pair<AxisList, SmallVector<Value>>> groups;
  for (Value input : op->getOperands()) {
    AxisList axes = layoutOf(input).splitAxes();
    mesh.sortAxes(axes);
    auto it = llvm::find_if(groups, [&](auto &g) { return g.first == axes; });
    if (it == groups.end()) {
      groups.push_back({axes, {}});
      it = std::prev(groups.end());
    }
    it->second.push_back(input);
  }
  if (groups.size() == 1 && groups.front().first.empty())
    return success();
  OpBuilder builder(op);
  Value total;
  for (auto &[axes, inputs] : groups) {
    Operation *part = builder.clone(*op);
    part->setOperands(inputs);
    Value sum = part->getResult(0);
    if (!axes.empty()) {
      std::string why;
      llvm::raw_string_ostream os(why);
      os << op->getName() << " of the gradients split over [";
      llvm::interleaveComma(axes, os);
      os << "]: partial -> []";
      Location loc = NameLoc::get(StringAttr::get(context, why), op->getLoc());
      sum = AllReduceOp::create(builder, loc, sum.getType(), sum,
                                mesh.symbol(), axesAttr(axes))
                .getResult();
    }
    total = total ? tpc::AddOp::create(builder, op->getLoc(), total, sum)
                        .getResult()
                  : sum;
  }
  op->getResult(0).replaceAllUsesWith(total);
  op->erase();
  return success();
}

/// A slice cuts only whole dimensions (dist-propagate made sure), so the
/// split ones are taken entirely: their local extent.
LogicalResult FunctionPartition::partitionSlice(tensor::ExtractSliceOp op) {
  auto source = cast<RankedTensorType>(op.getSource().getType());
  auto result = cast<RankedTensorType>(op.getResult().getType());
  SmallVector<int64_t> sizes(op.getStaticSizes());
  SmallVector<int64_t> offsets(op.getStaticOffsets());
  if (ShapedType::isDynamicShape(sizes) ||
      ShapedType::isDynamicShape(offsets) || source.getRank() != result.getRank())
    return op.emitError() << "only static slices of the same rank can be "
                             "partitioned";
  Layout layout = layoutOf(op.getSource());
  for (auto [d, axes] : llvm::enumerate(layout.dims))
    if (!axes.empty())
      sizes[d] = source.getDimSize(d);
  OpBuilder builder(op);
  auto slice = tensor::ExtractSliceOp::create(
      builder, op.getLoc(), result.clone(sizes), op.getSource(),
      ValueRange{}, ValueRange{}, ValueRange{}, offsets, sizes,
      op.getStaticStrides());
  layouts[slice.getResult()] = layout;
  op.getResult().replaceAllUsesWith(slice.getResult());
  op.erase();
  return success();
}

LogicalResult FunctionPartition::partitionOp(Operation *op) {
  SmallVector<Layout> needed = layoutsOf(op, kOperandShardingsAttr);
  SmallVector<Layout> produced = layoutsOf(op, kResultShardingsAttr);
  op->removeAttr(kOperandShardingsAttr);
  op->removeAttr(kResultShardingsAttr);
  if (auto shard = dyn_cast<ShardOp>(op)) {
    FailureOr<Value> value = reshard(
        op, 0, shard.getInput(), Layout::fromAttr(shard.getSharding()));
    if (failed(value))
      return failure();
    shard.getResult().replaceAllUsesWith(*value);
    op->erase();
    return success();
  }
  if (needed.size() != op->getNumOperands())
    return op->emitError() << "has no sharding decision (run dist-propagate "
                              "first)";
  // The op's rule, on the whole shapes: whether it sums its operands apart,
  // and which of them carry the factor whose blocks it must be told of.
  auto sharded = dyn_cast<tpc::TpcShardingOpInterface>(op);
  std::optional<tpc::ShardingRule> rule;
  if (sharded)
    rule = sharded.getShardingRule();
  for (auto [i, layout] : llvm::enumerate(needed)) {
    Value operand = op->getOperand(i);
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    FailureOr<Value> value = reshard(op, i, operand, layout);
    if (failed(value))
      return failure();
    op->setOperand(i, *value);
  }
  if (rule && rule->sumsOperandsApart)
    return partitionSumsApart(op);
  int64_t blocks = 1;
  if (rule && rule->blockFactor) {
    AxisList axes = blockAxes(*rule, needed, produced);
    if (!axes.empty()) {
      // The kernel finds its block from the axes (the vocabulary's).
      op->setAttr(kVocabAxesAttr, axesAttr(axes));
      blocks = mesh.groupSize(axes);
    }
  }
  // The slice's result layout is its source's (dims it cuts are whole).
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return partitionSlice(slice);
  for (auto [result, layout] : llvm::zip(op->getResults(), produced)) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    RankedTensorType local = mesh.localType(type, layout);
    if (!local)
      return op->emitError() << "result layout " << layout.str()
                             << " does not divide " << type;
    result.setType(local);
    layouts[result] = layout;
  }
  if (sharded)
    sharded.adaptToShard(blocks);
  if (drawsDropout(op) && !produced.empty() &&
      !produced.front().withoutPartial().isReplicated())
    op->setAttr(kShardingAttr, produced.front().withoutPartial().toAttr(
                                   context, mesh.symbol()));
  return success();
}

LogicalResult FunctionPartition::run() {
  func->setAttr(DistDialect::kPartitionedAttrName, UnitAttr::get(context));
  for (BlockArgument arg : func.getArguments()) {
    auto attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                    kShardingAttr);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!attr || !type)
      continue;
    Layout layout = Layout::fromAttr(attr);
    RankedTensorType local = mesh.localType(type, layout);
    if (!local)
      return func.emitError() << "argument " << arg.getArgNumber()
                              << ": sharding " << attr << " does not fit "
                              << type;
    arg.setType(local);
    layouts[arg] = layout;
  }
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(partitionOp(op)))
      return failure();
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  func.setFunctionType(FunctionType::get(
      context, func.getBody().front().getArgumentTypes(),
      ret.getOperandTypes()));
  return success();
}

struct DistPartitionPass
    : public dist::impl::DistPartitionBase<DistPartitionPass> {
  void runOnOperation() override {
    if (failed(forEachMeshFunction(
            getOperation(), [](func::FuncOp func, const MeshInfo &mesh) {
              return FunctionPartition(func, mesh).run();
            })))
      signalPassFailure();
  }
};

} // namespace
