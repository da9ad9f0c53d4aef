//===- Layout.cpp - shardings as values, per-op plans ---------------------===//

#include "dialects/Dist/Transforms/Layout.h"

#include "dialects/Tpc/IR/ShardingRule.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

static AxisList axesOf(ArrayAttr list) {
  return llvm::map_to_vector<2>(
      list, [](Attribute a) { return cast<StringAttr>(a).getValue(); });
}

static ArrayAttr axesAttr(MLIRContext *context, ArrayRef<StringRef> axes) {
  return ArrayAttr::get(context, llvm::map_to_vector(axes, [&](StringRef a) {
                          return Attribute(StringAttr::get(context, a));
                        }));
}

Layout Layout::fromAttr(ShardingAttr attr) {
  Layout layout;
  for (Attribute dim : attr.getDims())
    layout.dims.push_back(axesOf(cast<ArrayAttr>(dim)));
  layout.partial = axesOf(attr.getPartial());
  return layout;
}

ShardingAttr Layout::toAttr(MLIRContext *context,
                            FlatSymbolRefAttr mesh) const {
  SmallVector<Attribute> dimAttrs =
      llvm::map_to_vector(dims, [&](const AxisList &axes) -> Attribute {
        return axesAttr(context, axes);
      });
  return ShardingAttr::get(context, mesh, ArrayAttr::get(context, dimAttrs),
                           axesAttr(context, partial));
}

bool Layout::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(dims, [](const AxisList &axes) { return axes.empty(); });
}

AxisList Layout::splitAxes() const {
  AxisList axes;
  for (const AxisList &dim : dims)
    axes.append(dim.begin(), dim.end());
  return axes;
}

std::optional<std::pair<unsigned, AxisList>>
mlir::dist::reductionScatter(const Layout &from, const Layout &to,
                             ArrayRef<StringRef> reduce) {
  for (auto [d, axes] : llvm::enumerate(to.dims)) {
    ArrayRef<StringRef> have = from.dims[d];
    if (axes.size() <= have.size() ||
        ArrayRef<StringRef>(axes).take_front(have.size()) != have)
      continue;
    AxisList extra(ArrayRef<StringRef>(axes).drop_front(have.size()));
    if (llvm::all_of(extra, [&](StringRef axis) {
          return llvm::is_contained(reduce, axis);
        }))
      return std::make_pair(static_cast<unsigned>(d), extra);
  }
  return std::nullopt;
}

void Layout::print(raw_ostream &os) const {
  auto list = [&](ArrayRef<StringRef> axes) {
    os << '[';
    llvm::interleaveComma(axes, os);
    os << ']';
  };
  os << '[';
  llvm::interleaveComma(dims, os, [&](const AxisList &axes) { list(axes); });
  os << ']';
  if (!partial.empty()) {
    os << " partial ";
    list(partial);
  }
}

std::string Layout::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  return text;
}

//===----------------------------------------------------------------------===//
// MeshInfo
//===----------------------------------------------------------------------===//

FailureOr<MeshInfo> MeshInfo::get(ModuleOp module) {
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return module.emitError()
           << "expected exactly one dist.mesh in the module, found "
           << meshes.size();
  MeshInfo info;
  info.op = meshes.front();
  for (auto [name, size] :
       llvm::zip(info.op.getAxisNames(), info.op.getAxisSizes())) {
    StringRef axis = cast<StringAttr>(name).getValue();
    info.names.push_back(axis);
    info.sizes[axis] = size;
  }
  return info;
}

FlatSymbolRefAttr MeshInfo::symbol() const {
  return FlatSymbolRefAttr::get(op.getSymNameAttr());
}

int64_t MeshInfo::groupSize(ArrayRef<StringRef> axes) const {
  int64_t size = 1;
  for (StringRef axis : axes)
    size *= sizes.lookup(axis);
  return size;
}

void MeshInfo::sortAxes(AxisList &axes) const {
  auto index = [&](StringRef axis) {
    return llvm::find(names, axis) - names.begin();
  };
  llvm::sort(axes,
             [&](StringRef a, StringRef b) { return index(a) < index(b); });
}

RankedTensorType MeshInfo::localType(RankedTensorType type,
                                     const Layout &layout) const {
  SmallVector<int64_t> shape(type.getShape());
  if (layout.dims.size() != shape.size())
    return {};
  for (auto [size, axes] : llvm::zip(shape, layout.dims)) {
    int64_t pieces = groupSize(axes);
    if (size % pieces != 0)
      return {};
    size /= pieces;
  }
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

LogicalResult mlir::dist::forEachMeshFunction(
    ModuleOp module,
    function_ref<LogicalResult(func::FuncOp, const MeshInfo &)> fn) {
  FailureOr<MeshInfo> mesh = MeshInfo::get(module);
  if (failed(mesh))
    return failure();
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && func.getBody().hasOneBlock() &&
        failed(fn(func, *mesh)))
      return failure();
  return success();
}

BlockArgument mlir::dist::argumentBehindCasts(Value value) {
  while (auto cast = value.getDefiningOp<tpc::CastOp>())
    value = cast.getInput();
  return dyn_cast<BlockArgument>(value);
}

bool mlir::dist::isView(Operation *op) {
  return isa<tpc::ReshapeOp, tpc::TransposeOp, tpc::SliceOp, tpc::RotaryOp,
             tpc::CastOp, tpc::RepeatOp>(op);
}

Operation *mlir::dist::producerThroughViews(Value value) {
  Operation *op = value.getDefiningOp();
  while (op && isView(op) && op->getNumOperands() == 1)
    op = op->getOperand(0).getDefiningOp();
  return op;
}

LogicalResult mlir::dist::inferTypesAgain(func::FuncOp func) {
  for (Operation &op : func.getBody().front()) {
    if (auto cast = dyn_cast<tpc::CastOp>(op)) {
      auto in = cast.getInput().getType();
      cast.getResult().setType(in.clone(cast.getType().getElementType()));
      continue;
    }
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      continue;
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op.getContext(), op.getLoc(), op.getOperands(),
            op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
            op.getRegions(), types)))
      return failure();
    for (auto [result, type] : llvm::zip(op.getResults(), types))
      result.setType(type);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// planOp
//===----------------------------------------------------------------------===//

namespace {
struct Candidate {
  unsigned operand;
  unsigned dim;
  unsigned factor;
  AxisList axes;
  std::tuple<int, int, unsigned, unsigned> key;
};
} // namespace

SmallVector<bool> mlir::dist::resultOnlyFactors(const tpc::ShardingRule &rule) {
  SmallVector<bool> only(rule.factors.size(), false);
  for (const tpc::TensorFactors &tensor : rule.results)
    for (const tpc::DimFactors &dim : tensor)
      for (unsigned factor : dim)
        only[factor] = true;
  for (const tpc::TensorFactors &tensor : rule.operands)
    for (const tpc::DimFactors &dim : tensor)
      for (unsigned factor : dim)
        only[factor] = false;
  return only;
}

FailureOr<OpPlan> mlir::dist::planOp(Operation *op,
                                     const tpc::ShardingRule &rule,
                                     ArrayRef<Layout> current,
                                     ArrayRef<Hold> hold, const MeshInfo &mesh,
                                     const Layout *wantedResult) {
  unsigned numFactors = rule.factors.size();
  // A split dimension splits its major factor, so a factor can be split only
  // where it is major in every tensor that has it.
  SmallVector<bool> majorEverywhere(numFactors, true), inResult(numFactors);
  auto scan = [&](ArrayRef<tpc::TensorFactors> tensors, bool result) {
    for (const tpc::TensorFactors &tensor : tensors)
      for (const tpc::DimFactors &dim : tensor)
        for (auto [position, factor] : llvm::enumerate(dim)) {
          if (position > 0)
            majorEverywhere[factor] = false;
          if (result)
            inResult[factor] = true;
        }
  };
  scan(rule.operands, false);
  scan(rule.results, true);

  // Firmest held operands first; then factors that keep a result split
  // before contracted ones (a weight-gradient keeps its weight's split and
  // gathers a sequence-split input), then operand order.
  SmallVector<Candidate> candidates;
  for (auto [i, layout] : llvm::enumerate(current)) {
    if (i >= rule.operands.size() ||
        layout.dims.size() != rule.operands[i].size())
      continue;
    for (auto [d, axes] : llvm::enumerate(layout.dims)) {
      if (axes.empty() || rule.operands[i][d].empty())
        continue;
      unsigned factor = rule.operands[i][d].front();
      bool keepsResultSplit =
          rule.factors[factor].kind == tpc::FactorKind::Parallel &&
          inResult[factor];
      candidates.push_back(
          {static_cast<unsigned>(i),
           static_cast<unsigned>(d),
           factor,
           axes,
           {static_cast<int>(hold[i]), keepsResultSplit ? 0 : 1,
            static_cast<unsigned>(i), static_cast<unsigned>(d)}});
    }
  }
  // The wanted result's splits of result-only factors: after the
  // parameters' (hold 0, second key at most 1), before the rest. Their
  // "operand" is past the operands: never firm.
  const unsigned fromResult = current.size();
  if (wantedResult && !rule.results.empty() &&
      wantedResult->dims.size() == rule.results.front().size()) {
    SmallVector<bool> resultOnly = resultOnlyFactors(rule);
    for (auto [d, axes] : llvm::enumerate(wantedResult->dims)) {
      const tpc::DimFactors &dim = rule.results.front()[d];
      if (axes.empty() || dim.empty() || !resultOnly[dim.front()])
        continue;
      candidates.push_back({fromResult,
                            static_cast<unsigned>(d),
                            dim.front(),
                            axes,
                            {static_cast<int>(Hold::Parameter), 2, fromResult,
                             static_cast<unsigned>(d)}});
    }
  }
  llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
    return a.key < b.key;
  });

  SmallVector<AxisList> assigned(numFactors);
  SmallVector<int> owner(numFactors, -1);
  llvm::StringMap<unsigned> axisOwner; // axis -> operand that placed it
  // Two operands held alike that disagree: neither may be resharded.
  auto firm = [&](unsigned a, unsigned b) {
    return a != fromResult && b != fromResult && hold[a] != Hold::Derived &&
           hold[a] == hold[b];
  };
  auto conflict = [&](unsigned a, unsigned b) {
    InFlightDiagnostic diag = op->emitError()
                              << "conflicting shardings of operands " << a
                              << " and " << b << ": ";
    diag << current[a].str() << " and " << current[b].str()
         << " cannot both hold (both are annotated)";
    return failure();
  };
  for (const Candidate &c : candidates) {
    unsigned f = c.factor;
    if (!assigned[f].empty()) {
      if (assigned[f] != c.axes && firm(c.operand, owner[f]))
        return conflict(owner[f], c.operand);
      continue;
    }
    if (rule.factors[f].kind == tpc::FactorKind::Whole || !majorEverywhere[f])
      continue;
    bool clash = false;
    for (StringRef axis : c.axes) {
      auto it = axisOwner.find(axis);
      if (it == axisOwner.end())
        continue;
      if (it->second != c.operand && firm(c.operand, it->second))
        return conflict(it->second, c.operand);
      clash = true;
    }
    if (clash || rule.factors[f].size % mesh.groupSize(c.axes) != 0)
      continue;
    assigned[f] = c.axes;
    owner[f] = c.operand;
    for (StringRef axis : c.axes)
      axisOwner[axis] = c.operand;
  }

  // Which partial sums flow through.
  llvm::StringSet<> usedAxes;
  for (const AxisList &axes : assigned)
    for (StringRef axis : axes)
      usedAxes.insert(axis);
  auto disjoint = [&](const AxisList &axes) {
    return llvm::none_of(
        axes, [&](StringRef axis) { return usedAxes.contains(axis); });
  };
  SmallVector<bool> keepPartial(current.size(), false);
  AxisList kept;
  if (rule.linearity == tpc::Linearity::Additive && !current.empty()) {
    // A sum of partial sums over the same axes is one: those axes every
    // operand is partial over (and no factor splits) flow through, and each
    // operand's other partial axes are reduced first (a tied embedding's
    // two gradients, partial over dp, one also over tp: reduced over tp
    // alone and summed, so the dp reduction waits for the microbatches'
    // sum instead of running twice per microbatch).
    for (StringRef axis : current.front().partial)
      if (!usedAxes.contains(axis) &&
          llvm::all_of(current, [&](const Layout &layout) {
            return llvm::is_contained(layout.partial, axis);
          }))
        kept.push_back(axis);
    if (!kept.empty())
      keepPartial.assign(current.size(), true);
  } else if (rule.linearity == tpc::Linearity::Multilinear) {
    for (auto [i, layout] : llvm::enumerate(current)) {
      if (layout.hasPartial() && rule.isLinearIn(i) &&
          disjoint(layout.partial)) {
        keepPartial[i] = true;
        kept = layout.partial;
        break;
      }
    }
  }

  auto layoutFor = [&](const tpc::TensorFactors &tensor) {
    Layout layout = Layout::replicated(tensor.size());
    for (auto [d, dim] : llvm::enumerate(tensor))
      if (!dim.empty())
        layout.dims[d] = assigned[dim.front()];
    return layout;
  };
  OpPlan plan;
  for (auto [i, layout] : llvm::enumerate(current)) {
    if (i >= rule.operands.size()) {
      plan.operands.push_back(layout.withoutPartial());
      continue;
    }
    Layout required = layoutFor(rule.operands[i]);
    if (keepPartial[i])
      required.partial = kept;
    plan.operands.push_back(required);
  }
  AxisList resultPartial = kept;
  for (auto [f, axes] : llvm::enumerate(assigned))
    if (rule.factors[f].kind == tpc::FactorKind::Reduction)
      resultPartial.append(axes.begin(), axes.end());
  mesh.sortAxes(resultPartial);
  for (const tpc::TensorFactors &tensor : rule.results) {
    Layout layout = layoutFor(tensor);
    layout.partial = resultPartial;
    plan.results.push_back(layout);
  }
  return plan;
}
