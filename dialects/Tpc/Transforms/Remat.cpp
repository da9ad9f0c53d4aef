//===- Remat.cpp - tpc-remat ----------------------------------------------===//
//
// Activation rematerialization on the unrolled training step (issue 14;
// docs/design/remat.md): a layer's forward values that its backward reads
// are recomputed in the backward from the layer's inputs instead of being
// kept from the forward.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCREMAT
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// The phase an op was inlined from: 'F', 'B', 'W', or 0 (none: the
/// driver's ops, the optimizer).
char phaseOf(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>(kPhaseAttrName);
  if (!phase || !phase.getValue().starts_with("train_") ||
      phase.getValue().size() < 7)
    return 0;
  char kind = phase.getValue()[6];
  return kind == 'F' || kind == 'B' || kind == 'W' ? kind : 0;
}

/// The layer of a forward op, or -1.
int64_t layerOf(Operation *op) {
  auto layer = op->getAttrOfType<IntegerAttr>(kLayerAttrName);
  return layer ? layer.getInt() : -1;
}

/// The pipeline chunk of an op's phase ("train_F_chunk2": 2), else 0.
int64_t chunkOf(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>(kPhaseAttrName);
  int64_t chunk = 0;
  StringRef name = phase ? phase.getValue() : StringRef();
  size_t at = name.rfind("_chunk");
  if (at != StringRef::npos)
    (void)name.drop_front(at + 6).getAsInteger(10, chunk);
  return chunk;
}

/// One group of layers' forward of one microbatch (a layer under `full`
/// and `block`, N consecutive layers under `uniform`): its ops, in the
/// step's order. Only its inputs are kept.
struct LayerRun {
  int64_t group;
  SmallVector<Operation *> ops;
  DenseSet<Operation *> members;
  /// Only its attention core is recomputed.
  bool selective = false;
};

/// Which layers a policy recomputes, and in which groups.
struct Policy {
  enum Kind { None, Full, Uniform, Block, Selective, Layers } kind = None;
  int64_t count = 1;
  /// `layers:`: per layer, its kind (None, Selective or Full) or, for a
  /// layer of a checkpointed group (`gK`), Uniform with the group K.
  struct Entry {
    Kind kind = None;
    int64_t group = 0;
  };
  SmallVector<Entry> perLayer;

  /// "none", "full", "uniform:N", "block:N" (N >= 1), "layers:E,E,..."
  /// (E one of n, s, f, gK), else nullopt.
  static std::optional<Policy> parse(StringRef text) {
    if (text == "none")
      return Policy{None};
    if (text == "full")
      return Policy{Full};
    if (text == "selective")
      return Policy{Selective};
    Policy policy;
    if (text.consume_front("layers:")) {
      policy.kind = Layers;
      SmallVector<StringRef> entries;
      text.split(entries, ',');
      for (StringRef entry : entries) {
        Entry parsed;
        if (entry == "n")
          parsed.kind = None;
        else if (entry == "s")
          parsed.kind = Selective;
        else if (entry == "f")
          parsed.kind = Full;
        else if (entry.consume_front("g") &&
                 !entry.getAsInteger(10, parsed.group) && parsed.group >= 0)
          parsed.kind = Uniform;
        else
          return std::nullopt;
        policy.perLayer.push_back(parsed);
      }
      return policy;
    }
    if (text.consume_front("uniform:"))
      policy.kind = Uniform;
    else if (text.consume_front("block:"))
      policy.kind = Block;
    else
      return std::nullopt;
    if (text.getAsInteger(10, policy.count) || policy.count < 1)
      return std::nullopt;
    return policy;
  }

  /// What `layer` is recomputed as under `layers:` (None past the list).
  Entry entryOf(int64_t layer) const {
    return layer < static_cast<int64_t>(perLayer.size()) ? perLayer[layer]
                                                         : Entry();
  }
};

struct RematPass : public tpc::impl::TpcRematBase<RematPass> {
  using TpcRematBase::TpcRematBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Policy> parsed = Policy::parse(policy);
    if (!parsed) {
      module.emitError() << "tpc-remat: policy '" << policy
                         << "' is not one of none, selective, full, "
                            "uniform:N, block:N (N >= 1), layers:E,... (E "
                            "one of n, s, f, gK per layer)"
                         << (policy == "auto"
                                 ? " (auto searches over compiles: "
                                   "tpc-compile --remat auto --memory-limit)"
                                 : "");
      return signalPassFailure();
    }
    chosen = *parsed;
    if (chosen.kind == Policy::None)
      return;
    auto step = module.lookupSymbol<func::FuncOp>(function);
    if (!step || step.isExternal() || !step.getBody().hasOneBlock()) {
      module.emitError() << "tpc-remat: no func.func @" << function
                         << " with a body of one block (run "
                            "tpc-unroll-train-step first)";
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    if (llvm::none_of(body, [](Operation &op) { return phaseOf(&op); })) {
      step.emitError() << "tpc-remat: @" << function
                       << " has no ops tagged '" << kPhaseAttrName
                       << "' (the unrolled training step of tpc-autodiff and "
                          "tpc-unroll-train-step)";
      return signalPassFailure();
    }
    if (chosen.kind == Policy::Layers) {
      int64_t most = -1;
      body.walk([&](Operation *op) { most = std::max(most, layerOf(op)); });
      if (most + 1 != static_cast<int64_t>(chosen.perLayer.size())) {
        step.emitError() << "tpc-remat: policy '" << policy << "' names "
                         << chosen.perLayer.size() << " layers, the step has "
                         << most + 1;
        return signalPassFailure();
      }
    }
    for (LayerRun &run : collectRuns(body)) {
      if (run.selective && !keepAttentionCore(run))
        continue;
      recompute(run);
    }
  }

  Policy chosen;
  /// Per pipeline chunk, its first layer (block:N recomputes the first N).
  DenseMap<int64_t, int64_t> firstLayerOf;

  /// The group `op`'s layer is recomputed in, or -1 for none.
  int64_t groupOf(Operation *op, int64_t layer) {
    switch (chosen.kind) {
    case Policy::None:
      return -1;
    case Policy::Full:
    case Policy::Selective:
      return layer;
    case Policy::Uniform:
      return layer / chosen.count;
    case Policy::Block:
      return layer < firstLayerOf.lookup(chunkOf(op)) + chosen.count ? layer
                                                                      : -1;
    case Policy::Layers: {
      Policy::Entry entry = chosen.entryOf(layer);
      if (entry.kind == Policy::None)
        return -1;
      // A checkpointed group's number follows the layers' (a group never
      // shares its number with a layer recomputed alone).
      return entry.kind == Policy::Uniform
                 ? static_cast<int64_t>(chosen.perLayer.size()) + entry.group
                 : layer;
    }
    }
    return -1;
  }

  /// Whether `layer` recomputes its attention core alone.
  bool isSelective(int64_t layer) const {
    return chosen.kind == Policy::Selective ||
           (chosen.kind == Policy::Layers &&
            chosen.entryOf(layer).kind == Policy::Selective);
  }

  /// The forward runs of each layer: a layer's forward ops from one
  /// microbatch's forward to the next backward op (the next microbatch's
  /// forward of the layer is another run).
  std::vector<LayerRun> collectRuns(Block &body) {
    std::vector<LayerRun> runs;
    DenseMap<int64_t, size_t> open;
    for (Operation &op : body)
      if (phaseOf(&op) == 'F' && layerOf(&op) >= 0) {
        auto [it, fresh] = firstLayerOf.try_emplace(chunkOf(&op), layerOf(&op));
        it->second = std::min(it->second, layerOf(&op));
      }
    for (Operation &op : body) {
      char phase = phaseOf(&op);
      if (phase == 'B' || phase == 'W') {
        open.clear();
        continue;
      }
      int64_t layer = layerOf(&op);
      if (phase != 'F' || layer < 0)
        continue;
      int64_t group = groupOf(&op, layer);
      if (group < 0)
        continue;
      auto [it, fresh] = open.try_emplace(group, runs.size());
      if (fresh)
        runs.push_back({group, {}, {}, isSelective(layer)});
      runs[it->second].ops.push_back(&op);
      runs[it->second].members.insert(&op);
    }
    return runs;
  }

  /// Selective: narrows `run` to its attention core (Korthikanti et al.
  /// 2022): from the scores' batch_matmul through the softmax and dropout
  /// to the batch_matmul with v, and the dropout's mask; false when the
  /// layer has none (fused attention, whose backward recomputes the
  /// scores already).
  bool keepAttentionCore(LayerRun &run) {
    SmallVector<Operation *> matmuls;
    for (Operation *op : run.ops)
      if (isa<BatchMatmulOp>(op))
        matmuls.push_back(op);
    if (matmuls.size() != 2)
      return false;
    Operation *scores = matmuls[0], *out = matmuls[1];
    DenseSet<Operation *> core{scores};
    for (Operation *op : run.ops) {
      if (core.contains(op) || op->isBeforeInBlock(scores) ||
          out->isBeforeInBlock(op))
        continue;
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return core.contains(v.getDefiningOp());
          }))
        core.insert(op);
    }
    if (!core.contains(out))
      return false;
    // The masks the core's dropout applies (drawn from the stream alone; one
    // that a forward op outside the core also read would stay kept, as
    // recompute() keeps what the forward reads outside its run).
    for (Operation *op : run.ops)
      if (isa<DropoutMaskOp>(op) &&
          llvm::any_of(op->getUsers(),
                       [&](Operation *user) { return core.contains(user); }))
        core.insert(op);
    llvm::erase_if(run.ops, [&](Operation *op) { return !core.contains(op); });
    run.members = std::move(core);
    return true;
  }

  /// Recomputes in the backward what the backward reads of `run`: the
  /// values the group computes that a B or W op reads and no forward op
  /// outside the group does (those are the next group's inputs: kept).
  void recompute(LayerRun &run) {
    auto readOutside = [&](Value value) {
      return llvm::any_of(value.getUsers(), [&](Operation *user) {
        return phaseOf(user) == 'F' && !run.members.contains(user);
      });
    };
    auto readBackward = [](Value value) {
      return llvm::any_of(value.getUsers(), [](Operation *user) {
        char phase = phaseOf(user);
        return phase == 'B' || phase == 'W';
      });
    };
    // The ops to clone: those computing a dropped value, and what they read
    // of the layer that is not kept.
    DenseSet<Operation *> cloned;
    SmallVector<Value> dropped;
    Operation *firstUser = nullptr;
    for (Operation *op : run.ops)
      for (Value result : op->getResults())
        if (readBackward(result) && !readOutside(result)) {
          dropped.push_back(result);
          for (Operation *user : result.getUsers())
            if (phaseOf(user) == 'B' || phaseOf(user) == 'W')
              if (!firstUser || user->isBeforeInBlock(firstUser))
                firstUser = user;
        }
    if (dropped.empty())
      return;
    SmallVector<Operation *> worklist;
    for (Value value : dropped)
      if (cloned.insert(value.getDefiningOp()).second)
        worklist.push_back(value.getDefiningOp());
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && run.members.contains(def) && !readOutside(operand) &&
            cloned.insert(def).second)
          worklist.push_back(def);
      }
    }
    // The clones run in B, right before the first backward op that reads
    // a dropped value (so the layer is recomputed when its backward comes,
    // not all layers at once), in the forward's order, marked so that no
    // common-subexpression pass merges them back into the forward.
    StringAttr phase = run.ops.front()->getAttrOfType<StringAttr>(kPhaseAttrName);
    std::string backward = phase.getValue().str();
    backward[6] = 'B';
    OpBuilder builder(firstUser);
    IRMapping mapping;
    for (Operation *op : run.ops) {
      if (!cloned.contains(op))
        continue;
      Operation *copy = builder.clone(*op, mapping);
      copy->setAttr(kPhaseAttrName, builder.getStringAttr(backward));
      copy->setAttr(kRecomputeAttrName,
                    builder.getI64IntegerAttr(layerOf(op)));
      copy->removeAttr(kStashLayerAttrName);
    }
    for (Value value : dropped) {
      Value copy = mapping.lookup(value);
      value.replaceUsesWithIf(copy, [](OpOperand &use) {
        char phase = phaseOf(use.getOwner());
        return phase == 'B' || phase == 'W';
      });
      // No layer stashes it any more (the stash analysis reads this).
      Operation *def = value.getDefiningOp();
      if (auto layers = def->getAttrOfType<DenseI64ArrayAttr>(
              kStashLayerAttrName)) {
        SmallVector<int64_t> entries(layers.asArrayRef());
        unsigned index = cast<OpResult>(value).getResultNumber();
        if (index < entries.size())
          entries[index] = -1;
        if (llvm::all_of(entries, [](int64_t e) { return e < 0; }))
          def->removeAttr(kStashLayerAttrName);
        else
          def->setAttr(kStashLayerAttrName,
                       DenseI64ArrayAttr::get(def->getContext(), entries));
      }
    }
  }
};

} // namespace

bool mlir::tpc::isRematPolicy(StringRef policy) {
  return Policy::parse(policy).has_value();
}
