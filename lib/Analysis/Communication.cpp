//===- Communication.cpp - the bytes of the collectives of a step ---------===//
//
// What a mesh adds to the report: the bytes of the collectives
// dist-partition inserted, split into what every microbatch repeats and what
// happens once per step (docs/design/sharding.md, "The report").
//
//===----------------------------------------------------------------------===//

#include "tpc/Analysis/Report.h"

#include "MicrobatchPhases.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Layout.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// The latest phase of the ops that read `value`, through collectives (the
/// ops the collective chain serves).
Phase servedPhase(Value value, const MicrobatchPhases &phases) {
  Phase phase = Phase::Invariant;
  for (Operation *user : value.getUsers()) {
    Phase served = Phase::Invariant;
    if (isCollective(user) && user->getNumResults() == 1)
      served = servedPhase(user->getResult(0), phases);
    else
      served = phases.of(user);
    phase = std::max(phase, served);
  }
  return phase;
}

} // namespace

LogicalResult mlir::tpc::countCommBytes(func::FuncOp function,
                                        int64_t microbatches,
                                        CommBytes &perMicrobatch,
                                        CommBytes &perStep,
                                        std::optional<int64_t> stage) {
  MicrobatchPhases phases(function);
  auto onStage = [&](Operation *op) {
    if (!stage)
      return true;
    auto rank = op->getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
    return rank && rank.getInt() == *stage;
  };

  CommBytes repeated, once;
  WalkResult walk = function.walk([&](Operation *op) {
    if (!onStage(op))
      return WalkResult::advance();
    if (isa<dist::SendOp, dist::RecvOp>(op)) {
      auto kind = op->getAttrOfType<StringAttr>(dist::kTransferAttrName);
      Type type = isa<dist::SendOp>(op) ? op->getOperand(0).getType()
                                        : op->getResult(0).getType();
      int64_t bytes = byteSize(type);
      if (!kind) {
        op->emitError() << "report: " << op->getName() << " has no '"
                        << dist::kTransferAttrName
                        << "' (dist-pipeline-stages marks what it moves)";
        return WalkResult::interrupt();
      }
      if (kind.getValue() != "tied")
        repeated.p2p += bytes;
      else if (isa<dist::SendOp>(op))
        once.allReduce += bytes;
      return WalkResult::advance();
    }
    // A vocab-parallel cross-entropy combines its logits' vocabulary blocks
    // inside its kernel (tpcx.fbs): per position, a max and two sums (the
    // exponentials, the target's logit) forward, a max and a sum for the
    // gradient, all-reduced as f32.
    if (isa<CrossEntropyOp, CrossEntropyGradOp>(op) &&
        op->hasAttr(dist::kVocabAxesAttr)) {
      auto logits = cast<RankedTensorType>(op->getOperand(0).getType());
      int64_t positions = logits.getNumElements() / logits.getShape().back();
      int64_t floats = isa<CrossEntropyOp>(op) ? 3 : 2;
      CommBytes &total =
          phases.of(op) == Phase::Microbatch ? repeated : once;
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
      op->emitError() << "report: " << op->getName()
                      << " has no field in the report";
      return WalkResult::interrupt();
    }
    // A gather is inserted for every reader; a reduction once per value.
    bool perMicrobatch =
        servedPhase(op->getResult(0), phases) == Phase::Microbatch &&
        (!reduction || phases.of(op->getOperand(0)) == Phase::Microbatch);
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
             << "report: the " << name << " bytes the microbatches repeat ("
             << repeated.*kind << ") do not divide by the " << microbatches
             << " microbatches";
    perMicrobatch.*kind = repeated.*kind / microbatches;
    perStep.*kind = once.*kind;
  }
  return success();
}
