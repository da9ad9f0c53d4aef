//===- ReportCollectives.cpp - dist-report-collectives --------------------===//
//
// After dist-partition: the collectives of each function, per phase and
// layer of the op each one serves, with their counts and bytes. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/raw_ostream.h"
#include <map>

namespace mlir::dist {
#define GEN_PASS_DEF_DISTREPORTCOLLECTIVES
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

/// A collective as the report counts it: its kind, its axes and the bytes
/// one device moves, as the compile report counts them (an all-reduce or
/// all-to-all its tensor, an all-gather its gathered result, a
/// reduce-scatter its unscattered input).
struct Moved {
  StringRef kind;
  std::string axes;
  int64_t bytes;
  /// For a reduction: the op whose partial sum it resolves.
  Operation *producer;
};

/// Null for what is no collective (a `dist.shard_slice` or `dist.shard_pad`
/// moves nothing).
std::optional<Moved> collective(Operation *op) {
  Value counted;
  StringRef kind;
  if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    kind = "all_reduce";
    counted = allReduce.getInput();
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    kind = "all_gather";
    counted = gather.getResult();
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    kind = "reduce_scatter";
    counted = scatter.getInput();
  } else if (auto allToAll = dyn_cast<AllToAllOp>(op)) {
    kind = "all_to_all";
    counted = allToAll->getOperand(0);
  } else {
    return std::nullopt;
  }
  bool reduction = isa<AllReduceOp, ReduceScatterOp>(op);
  Moved moved{kind, "", 0,
              reduction ? op->getOperand(0).getDefiningOp() : nullptr};
  llvm::raw_string_ostream os(moved.axes);
  llvm::interleaveComma(
      op->getAttrOfType<ArrayAttr>("axes"), os,
      [&](Attribute a) { os << cast<StringAttr>(a).getValue(); });
  auto type = cast<RankedTensorType>(counted.getType());
  moved.bytes =
      type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  return moved;
}

/// The parameter (`tpc.param`) `value` is, through casts and views; null
/// for a computed value.
StringAttr parameterBehind(func::FuncOp func, Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (!isa<tpc::CastOp, tpc::ReshapeOp, tpc::TransposeOp>(op))
      return {};
    value = op->getOperand(0);
  }
  auto arg = cast<BlockArgument>(value);
  return func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tpc.param");
}

/// Rows in order: forward, backward, step; outside the layers (-1) before
/// layer 0; then kind and axes.
using RowKey = std::tuple<int, int64_t, std::string, std::string>;
struct Row {
  int64_t count = 0;
  int64_t bytes = 0;
};

void report(func::FuncOp func, raw_ostream &os) {
  Block &body = func.getBody().front();
  // A function without the phases of an unrolled training step (F, B, W)
  // is all forward.
  bool training =
      llvm::any_of(body, [](Operation &op) { return op.hasAttr(tpc::kPhaseAttrName); });
  std::map<RowKey, Row> rows;
  SmallVector<Moved> pending;
  SmallVector<StringRef> gatheredParameters;
  for (Operation &op : body) {
    if (auto gather = dyn_cast<AllGatherOp>(op))
      if (StringAttr name = parameterBehind(func, gather.getInput()))
        gatheredParameters.push_back(name.getValue());
    if (std::optional<Moved> moved = collective(&op)) {
      pending.push_back(std::move(*moved));
      continue;
    }
    if (isa<ShardSliceOp, ShardPadOp>(op) || pending.empty())
      continue;
    // dist-partition inserts the collectives an op needs right before it.
    int phase = 0;
    if (auto attr = op.getAttrOfType<StringAttr>(tpc::kPhaseAttrName))
      phase = attr.getValue().ends_with("_F") ? 0 : 1;
    else if (training)
      phase = 2;
    for (Moved &moved : pending) {
      // The layer of the op served, except a forward reduction: it belongs
      // to the layer whose partial sum it completes (the embedding's, under
      // sequence parallelism, to none, although layer 0 reads it first). In
      // the backward, partial sums flow through the norms' gradients and
      // the residual adds and are reduced where an op needs them whole.
      Operation *owner = phase == 0 && moved.producer ? moved.producer : &op;
      int64_t layer = -1;
      if (auto attr = owner->getAttrOfType<IntegerAttr>(tpc::kLayerAttrName))
        layer = attr.getInt();
      Row &row = rows[{phase, layer, moved.kind.str(), moved.axes}];
      ++row.count;
      row.bytes += moved.bytes;
    }
    pending.clear();
  }
  static constexpr StringLiteral phases[] = {"forward", "backward", "step"};
  os << "// collectives of @" << func.getSymName()
     << ": phase layer: kind [axes] x count, bytes per device\n";
  for (auto &[key, row] : rows) {
    auto &[phase, layer, kind, axes] = key;
    os << phases[phase] << ' ';
    if (layer < 0)
      os << '-';
    else
      os << layer;
    os << ": " << kind << " [" << axes << "] x" << row.count << ", "
       << row.bytes << " bytes\n";
  }
  os << "parameters all-gathered: " << gatheredParameters.size();
  if (!gatheredParameters.empty()) {
    os << " (";
    llvm::interleaveComma(gatheredParameters, os);
    os << ')';
  }
  os << '\n';
}

struct DistReportCollectivesPass
    : public dist::impl::DistReportCollectivesBase<DistReportCollectivesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock())
        report(func, llvm::outs());
    markAllAnalysesPreserved();
  }
};

} // namespace
