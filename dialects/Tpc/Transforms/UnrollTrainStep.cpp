//===- UnrollTrainStep.cpp - tpc-unroll-train-step ------------------------===//
//
// The driver tpc-autodiff builds is a loop of calls, the form the pipeline
// schedules will reorder; a single-device executable is one kernel list. So
// the loop is unrolled and the calls inlined (by cloning: the tpc dialect
// needs no inliner interface for that), and the greedy folder then removes
// what the loop made dynamic: microbatch offsets and indices, and the zero
// accumulators.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCUNROLLTRAINSTEP
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using tpc::kMicrobatchIndexAttrName;
using tpc::kPhaseAttrName;

namespace {

/// Replaces `loop` by its iterations, in order; with `tag`, marks each
/// iteration's ops with their microbatch index.
LogicalResult unrollFully(scf::ForOp loop, bool tag, bool firstOnly) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *step <= 0)
    return loop.emitError("tpc-unroll-train-step: the loop needs constant "
                          "bounds and a positive constant step");
  OpBuilder builder(loop);
  Block *body = loop.getBody();
  Type ivType = loop.getInductionVar().getType();
  SmallVector<Value> carried(loop.getInitArgs());
  // A template keeps one iteration: the first microbatch's.
  int64_t end = firstOnly ? std::min(*upper, *lower + *step) : *upper;
  for (int64_t iv = *lower; iv < end; iv += *step) {
    IRMapping mapping;
    mapping.map(loop.getInductionVar(),
                arith::ConstantOp::create(builder, loop.getLoc(),
                                          builder.getIntegerAttr(ivType, iv)));
    mapping.map(loop.getRegionIterArgs(), carried);
    auto index = builder.getI64IntegerAttr(iv);
    for (Operation &op : body->without_terminator()) {
      Operation *copy = builder.clone(op, mapping);
      if (tag)
        copy->setAttr(kMicrobatchIndexAttrName, index);
    }
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    for (auto [i, value] : llvm::enumerate(yield.getOperands()))
      carried[i] = mapping.lookupOrDefault(value);
  }
  loop.replaceAllUsesWith(carried);
  loop.erase();
  return success();
}

/// Replaces `call` by a copy of its callee's body.
LogicalResult inlineCall(func::CallOp call, SymbolTable &symbols) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
    return call.emitError() << "tpc-unroll-train-step: @" << call.getCallee()
                            << " is not a function with one block to inline";
  OpBuilder builder(call);
  Block &body = callee.getBody().front();
  IRMapping mapping;
  mapping.map(body.getArguments(), call.getOperands());
  // Which function an op came from (F, B or W): dist-partition shares a
  // gather among readers of one phase only, so the stash keeps its shards.
  auto phase = builder.getStringAttr(call.getCallee());
  Attribute microbatch = call->getAttr(kMicrobatchIndexAttrName);
  for (Operation &op : body.without_terminator()) {
    Operation *copy = builder.clone(op, mapping);
    if (!copy->hasAttr(kPhaseAttrName))
      copy->setAttr(kPhaseAttrName, phase);
    if (microbatch && !copy->hasAttr(kMicrobatchIndexAttrName))
      copy->setAttr(kMicrobatchIndexAttrName, microbatch);
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [result, value] : llvm::zip(call.getResults(), ret.getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(value));
  call.erase();
  return success();
}

/// Moves every sum that is the only reader of both its operands (a gradient
/// accumulator and a microbatch's contribution) right after the later of
/// them: the loop body adds after the whole of W, which kept every
/// microbatch's gradients and the previous sums live at once.
void accumulateEarly(func::FuncOp step) {
  Block &body = step.getBody().front();
  // Positions before any move: an op only ever moves up to right after an
  // operand, so the later operand by these positions stays the later one
  // (and the block's order is not recomputed after every move).
  DenseMap<Operation *, size_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  for (auto add : llvm::make_early_inc_range(body.getOps<tpc::AddOp>())) {
    if (!add.getLhs().hasOneUse() || !add.getRhs().hasOneUse())
      continue;
    Operation *lhs = add.getLhs().getDefiningOp();
    Operation *rhs = add.getRhs().getDefiningOp();
    if (!lhs || !rhs || lhs->getBlock() != &body || rhs->getBlock() != &body)
      continue;
    add->moveAfter(position.lookup(lhs) < position.lookup(rhs) ? rhs : lhs);
  }
}

/// Moves every op of a weight-gradient function (W) up to right after the
/// latest definition of its operands: each layer's weight gradients then run
/// right after its input gradients (B), as in Megatron, instead of after the
/// whole backward. The stash a layer's W reads is freed as soon as B reaches
/// the next layer, and dist-partition can share a gather between a layer's B
/// and W (the output gradient of a row-parallel matmul) without keeping it
/// live across the other layers. Ops are pure, so only SSA order binds them.
void weightGradientsEarly(func::FuncOp step) {
  Block &body = step.getBody().front();
  auto isWeightGrad = [&](Operation *op) {
    auto phase = op->getAttrOfType<StringAttr>(kPhaseAttrName);
    return phase && tpc::inputGradOfWeightGrad(phase.getValue());
  };
  // Each op that stays has its index; each W op goes into the bucket of the
  // latest op it reads (an op that stays, or a W op, whose bucket it joins,
  // after it), in the block's order: -1 holds those that read only the
  // step's arguments.
  DenseMap<Operation *, int64_t> slot;
  std::map<int64_t, SmallVector<Operation *>> buckets;
  SmallVector<Operation *> staying;
  for (Operation &op : body.without_terminator()) {
    if (!isWeightGrad(&op)) {
      slot[&op] = static_cast<int64_t>(staying.size());
      staying.push_back(&op);
      continue;
    }
    int64_t latest = -1;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && def->getBlock() == &body)
        latest = std::max(latest, slot.lookup(def));
    slot[&op] = latest;
    buckets[latest].push_back(&op);
  }
  for (auto &[index, ops] : buckets) {
    Operation *previous = index < 0 ? nullptr : staying[index];
    for (Operation *op : ops) {
      if (previous)
        op->moveAfter(previous);
      else
        op->moveBefore(&body.front());
      previous = op;
    }
  }
}

struct UnrollTrainStepPass
    : public tpc::impl::TpcUnrollTrainStepBase<UnrollTrainStepPass> {
  using TpcUnrollTrainStepBase::TpcUnrollTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    auto step = symbols.lookup<func::FuncOp>(function);
    if (!step || step.isExternal()) {
      module.emitError() << "tpc-unroll-train-step: no func.func @" << function
                         << " with a body (run tpc-autodiff "
                         << "first)";
      return signalPassFailure();
    }
    // Loops hold calls and callees may hold loops: alternate until neither
    // is left. Each round removes a nesting level, so the count of rounds is
    // bounded by the depth of the call graph; a recursive one never ends.
    llvm::SetVector<StringRef> inlined;
    constexpr int kMaxRounds = 64;
    for (int round = 0;; ++round) {
      // Outermost loops: unrolling one copies its nested loops and calls,
      // which the next round finds.
      SmallVector<scf::ForOp> loops;
      step.walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
        loops.push_back(loop);
        return WalkResult::skip();
      });
      SmallVector<func::CallOp> calls;
      step.walk([&](func::CallOp call) {
        if (!call->getParentOfType<scf::ForOp>())
          calls.push_back(call);
      });
      if (loops.empty() && calls.empty())
        break;
      if (round == kMaxRounds) {
        step.emitError() << "tpc-unroll-train-step: @" << function
                         << " still has loops or calls after " << kMaxRounds
                         << " rounds (a recursive call?)";
        return signalPassFailure();
      }
      for (scf::ForOp loop : loops)
        if (failed(unrollFully(loop, tagMicrobatches || firstMicrobatchOnly,
                               firstMicrobatchOnly)))
          return signalPassFailure();
      for (func::CallOp call : calls) {
        inlined.insert(call.getCallee());
        if (failed(inlineCall(call, symbols)))
          return signalPassFailure();
      }
    }

    RewritePatternSet patterns(&getContext());
    tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns,
                                                        &getContext());
    if (failed(applyPatternsGreedily(step, std::move(patterns)))) {
      step.emitError("tpc-unroll-train-step: folding did not converge");
      return signalPassFailure();
    }
    // Every microbatch's copy of F recomputes what depends on parameters
    // alone (16-bit casts of the master weights, the position table's
    // slice): keep the first.
    IRRewriter rewriter(&getContext());
    DominanceInfo dominance(step);
    eliminateCommonSubExpressions(rewriter, dominance, step);

    weightGradientsEarly(step);
    accumulateEarly(step);

    // The inlined functions that nothing calls any more go; without
    // keep-forward, @forward and the functions only it calls (a split
    // model's chunks) too. The module's symbol uses are collected once: a
    // walk per function would cost the module's size times the functions.
    llvm::SetVector<StringRef> unused(inlined.begin(), inlined.end());
    if (!keepForward)
      if (auto forward = symbols.lookup<func::FuncOp>("forward")) {
        forward.walk([&](func::CallOp call) {
          unused.insert(call.getCallee());
        });
        symbols.erase(forward);
      }
    llvm::StringSet<> used;
    for (Operation &op : module.getBody()->getOperations())
      if (std::optional<SymbolTable::UseRange> uses =
              SymbolTable::getSymbolUses(&op))
        for (const SymbolTable::SymbolUse &use : *uses)
          used.insert(use.getSymbolRef().getRootReference().getValue());
    for (StringRef name : unused) {
      Operation *callee = symbols.lookup(name);
      if (callee && !used.contains(name))
        symbols.erase(callee);
    }
  }
};

} // namespace
