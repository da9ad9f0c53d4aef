//===- DistReport.cpp - the report's per-device stash and communication ---===//
//
// What a mesh changes in tpc-compile --report: the stash of a layer on one
// device, and the bytes of the collectives dist-partition inserted, split
// into what every microbatch repeats and what happens once per step. See
// docs/design/sharding.md, "The report".
//
//===----------------------------------------------------------------------===//

#include "tpc/Target/Report.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tpc;

namespace {

int64_t byteSize(RankedTensorType type) {
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// When a value is computed, relative to the microbatches of a step
/// (ordered: an op is as late as its latest operand).
enum class Phase {
  /// From parameters and constants alone: once per step (the unrolled
  /// microbatches' copies are merged by CSE).
  Invariant,
  /// By the driver, once per step: the loss mean, the target count, the
  /// optimizer, and what follows from them.
  Step,
  /// From a microbatch's data.
  Microbatch,
};

/// Ops tpc-autodiff's driver and tpc-optimizer place outside the
/// microbatch loop; the inputs of each are totals over the step.
bool isDriverOp(Operation *op) {
  return isa<LossMeanOp, CountTargetsOp, InverseCountOp, SumSquaresOp,
             ClipCoefficientOp, LrScheduleOp, AdamWUpdateOp, SgdUpdateOp,
             func::ReturnOp>(op);
}

bool isCollective(Operation *op) {
  return isa<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
             dist::ShardSliceOp, dist::ShardPadOp, dist::AllToAllOp,
             dist::BroadcastOp, dist::SendOp, dist::RecvOp>(op);
}

/// The latest phase of the ops that read `value`, through collectives (the
/// ops the collective chain serves).
Phase servedPhase(Value value, const DenseMap<Operation *, Phase> &phases) {
  Phase phase = Phase::Invariant;
  for (Operation *user : value.getUsers()) {
    Phase served = Phase::Invariant;
    if (isCollective(user) && user->getNumResults() == 1)
      served = servedPhase(user->getResult(0), phases);
    else
      served = phases.lookup(user);
    phase = std::max(phase, served);
  }
  return phase;
}

} // namespace

FailureOr<int64_t> mlir::tpc::computeDeviceLayerStashBytes(
    func::FuncOp trainF, function_ref<LogicalResult(ModuleOp)> distribute,
    int64_t layer) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(trainF.getLoc());
  if (auto parent = trainF->getParentOfType<ModuleOp>())
    (*module)->setDiscardableAttrs(parent->getDiscardableAttrDictionary());
  OpBuilder builder((*module).getBodyRegion());
  auto copy = cast<func::FuncOp>(builder.clone(*trainF));
  if (failed(distribute(*module)))
    return failure();
  auto ret = cast<func::ReturnOp>(copy.getBody().front().getTerminator());
  int64_t bytes = 0;
  for (unsigned i = 0, e = copy.getNumResults(); i < e; ++i) {
    auto tag = copy.getResultAttrOfType<IntegerAttr>(i, kLayerAttrName);
    if (!copy.getResultAttr(i, kStashAttrName) || !tag || tag.getInt() != layer)
      continue;
    // The value as computed: before the gathers (and reductions) that make
    // it whole for the return.
    Value value = ret.getOperand(i);
    while (value.getDefiningOp() && isCollective(value.getDefiningOp()))
      value = value.getDefiningOp()->getOperand(0);
    bytes += byteSize(cast<RankedTensorType>(value.getType()));
  }
  return bytes;
}

LogicalResult mlir::tpc::countCommBytes(func::FuncOp function,
                                        int64_t microbatches,
                                        CompileReport &report) {
  // Phases, in op order (the function is one block after unrolling).
  DenseMap<Value, Phase> values;
  DenseMap<Operation *, Phase> phases;
  for (BlockArgument arg : function.getArguments())
    if (function.getArgAttr(arg.getArgNumber(), "tpc.input"))
      values[arg] = Phase::Microbatch;
  function.walk([&](Operation *op) {
    Phase phase = Phase::Invariant;
    if (isDriverOp(op)) {
      phase = Phase::Step;
    } else {
      for (Value operand : op->getOperands())
        phase = std::max(phase, values.lookup(operand));
    }
    phases[op] = phase;
    for (Value result : op->getResults())
      values[result] = phase;
  });

  CommBytes repeated, once;
  WalkResult walk = function.walk([&](Operation *op) {
    // A vocab-parallel cross-entropy combines its logits' vocabulary blocks
    // inside its kernel (tpcx.fbs): per position, a max and two sums (the
    // exponentials, the target's logit) forward, a max and a sum for the
    // gradient, all-reduced as f32.
    if (isa<CrossEntropyOp, CrossEntropyGradOp>(op) &&
        op->hasAttr("dist.vocab_axes")) {
      auto logits = cast<RankedTensorType>(op->getOperand(0).getType());
      int64_t positions = logits.getNumElements() / logits.getShape().back();
      int64_t floats = isa<CrossEntropyOp>(op) ? 3 : 2;
      CommBytes &total =
          phases.lookup(op) == Phase::Microbatch ? repeated : once;
      total.allReduce += floats * positions * 4;
      return WalkResult::advance();
    }
    if (!isCollective(op) || isa<dist::ShardSliceOp, dist::ShardPadOp>(op))
      return WalkResult::advance();
    int64_t bytes = 0;
    int64_t CommBytes::*kind = nullptr;
    bool reduction = false;
    if (auto allReduce = dyn_cast<dist::AllReduceOp>(op)) {
      bytes = byteSize(cast<RankedTensorType>(allReduce.getInput().getType()));
      kind = &CommBytes::allReduce;
      reduction = true;
    } else if (auto gather = dyn_cast<dist::AllGatherOp>(op)) {
      bytes = byteSize(cast<RankedTensorType>(gather.getResult().getType()));
      kind = &CommBytes::allGather;
    } else if (auto scatter = dyn_cast<dist::ReduceScatterOp>(op)) {
      bytes = byteSize(cast<RankedTensorType>(scatter.getInput().getType()));
      kind = &CommBytes::reduceScatter;
      reduction = true;
    } else {
      op->emitError() << "--report: " << op->getName()
                      << " has no field in the report";
      return WalkResult::interrupt();
    }
    // A gather is inserted for every reader; a reduction once per value.
    bool perMicrobatch =
        servedPhase(op->getResult(0), phases) == Phase::Microbatch &&
        (!reduction || values.lookup(op->getOperand(0)) == Phase::Microbatch);
    // (Named first: GCC 12 applies `.*` to a copy of a conditional's result.)
    CommBytes &total = perMicrobatch ? repeated : once;
    total.*kind += bytes;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  std::pair<const char *, int64_t CommBytes::*> kinds[] = {
      {"all_reduce", &CommBytes::allReduce},
      {"all_gather", &CommBytes::allGather},
      {"reduce_scatter", &CommBytes::reduceScatter},
      {"p2p", &CommBytes::p2p}};
  for (auto [name, kind] : kinds) {
    if (repeated.*kind % microbatches != 0)
      return function.emitError()
             << "--report: the " << name << " bytes the microbatches repeat ("
             << repeated.*kind << ") do not divide by the " << microbatches
             << " microbatches";
    report.commPerMicrobatch.*kind = repeated.*kind / microbatches;
    report.commPerStep.*kind = once.*kind;
  }
  return success();
}
