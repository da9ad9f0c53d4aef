//===- ReplicateKvHeads.cpp - dist-replicate-kv-heads ---------------------===//
//
// Grouped-query attention with fewer kv-heads than tensor-parallel devices:
// the K and V projection weights are repeated along their kv-heads up to the
// number of devices, so that each device computes the one kv-head its query
// heads read. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTREPLICATEKVHEADS
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

/// The keys or values of grouped-query attention: the op reading them
/// (the attention, or the repeat to the query heads of unfused attention:
/// `toHeads`), the matmul computing them (null when none does), the heads
/// of the query.
struct KeyValue {
  Operation *reader;
  tpc::LinearOp projection;
  int64_t heads;
  int64_t kvHeads;
  tpc::RepeatOp toHeads;
};

int64_t headsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getDimSize(1);
}

/// The K and V projections of `func`'s grouped-query attentions: the key
/// and value of `tpc.attention` with fewer heads than its query, and the
/// input of each `tpc.repeat` along the heads of a [b, heads, s, d] tensor
/// (unfused attention).
SmallVector<KeyValue> keysAndValues(func::FuncOp func) {
  SmallVector<KeyValue> found;
  auto add = [&](Operation *reader, Value kv, int64_t heads, int64_t kvHeads,
                 tpc::RepeatOp toHeads) {
    found.push_back({reader,
                     dyn_cast_or_null<tpc::LinearOp>(producerThroughViews(kv)),
                     heads, kvHeads, toHeads});
  };
  func.walk([&](Operation *op) {
    if (auto attention = dyn_cast<tpc::AttentionOp>(op)) {
      int64_t heads = attention.getNumHeads();
      int64_t kvHeads = attention.getNumKvHeads();
      if (kvHeads != heads) {
        add(op, attention.getKey(), heads, kvHeads, nullptr);
        add(op, attention.getValue(), heads, kvHeads, nullptr);
      }
    } else if (auto repeat = dyn_cast<tpc::RepeatOp>(op)) {
      if (repeat.getDim() == 1 && repeat.getType().getRank() == 4)
        add(op, repeat.getInput(), headsOf(repeat.getResult()),
            headsOf(repeat.getInput()), repeat);
    }
  });
  return found;
}

/// Repeats the kv-heads of `kv`'s projection weight (and bias) `tp /
/// kv-heads` times, and the unfused repeat to the query heads that many times
/// less. Refuses what no layout can split.
LogicalResult replicate(const KeyValue &kv, int64_t tp,
                        DenseSet<Operation *> &done) {
  if (kv.kvHeads % tp == 0)
    return success();
  tpc::LinearOp linear = kv.projection;
  Operation *at = linear ? linear.getOperation() : kv.reader;
  auto refuse = [&](StringRef what, int64_t size, const Twine &why) {
    return at->emitError() << "cannot split over " << tp
                           << " tensor-parallel devices: the " << what << " ("
                           << size << ") is not divisible by " << tp << ", "
                           << why;
  };
  if (tp % kv.kvHeads != 0)
    return refuse("number of kv-heads", kv.kvHeads,
                  "nor does it divide " + Twine(tp) +
                      " (fewer kv-heads than devices are replicated)");
  if (kv.heads % tp != 0)
    return refuse("number of heads", kv.heads,
                  "so its " + Twine(kv.kvHeads) +
                      " kv-heads cannot be replicated " +
                      Twine(tp / kv.kvHeads) + " times");
  int64_t replicas = tp / kv.kvHeads;
  if (!linear)
    return at->emitError()
           << "cannot replicate " << kv.kvHeads << " kv-heads over " << tp
           << " tensor-parallel devices: its keys or values are not computed "
              "by a tpc.linear";
  OpBuilder builder(linear);
  if (done.insert(linear).second) {
    // The import lays a projection's outputs out as [..., heads, head_dim].
    auto weightType = cast<RankedTensorType>(linear.getWeight().getType());
    int64_t numOut = weightType.getRank() - 1;
    int64_t firstOut = linear.getLayout() == tpc::WeightLayout::OutIn ? 0 : 1;
    int64_t dim = firstOut + numOut - 2;
    if (numOut < 2 || weightType.getDimSize(dim) != kv.kvHeads)
      return linear.emitError()
             << "feeds attention as its key or value with " << kv.kvHeads
             << " kv-heads, but its weight " << weightType
             << " has no kv-heads dimension before the head size";
    auto repeat = [&](Value value, int64_t dim) {
      auto op =
          tpc::RepeatOp::create(builder, linear.getLoc(), value, dim, replicas);
      // In the projection's layer (tpc.layer).
      op->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
      return op.getResult();
    };
    linear.getWeightMutable().assign(repeat(linear.getWeight(), dim));
    if (Value bias = linear.getBias())
      linear.getBiasMutable().assign(repeat(bias, numOut - 2));
  }
  if (tpc::RepeatOp toHeads = kv.toHeads) {
    int64_t group = toHeads.getRepeats() / replicas;
    if (group == 1) {
      toHeads.getResult().replaceAllUsesWith(toHeads.getInput());
      toHeads.erase();
    } else {
      toHeads.setRepeatsAttr(builder.getI64IntegerAttr(group));
    }
  }
  return success();
}

struct DistReplicateKvHeadsPass
    : public dist::impl::DistReplicateKvHeadsBase<DistReplicateKvHeadsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (tp < 1) {
      getOperation().emitError()
          << "dist-replicate-kv-heads: tp " << static_cast<int64_t>(tp)
          << " must be positive";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      DenseSet<Operation *> done;
      for (const KeyValue &kv : keysAndValues(func))
        if (failed(replicate(kv, tp, done)))
          return signalPassFailure();
      if (!done.empty() && failed(inferTypesAgain(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
