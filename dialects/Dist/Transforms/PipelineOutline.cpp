//===- PipelineOutline.cpp - dist-pipeline-outline ------------------------===//
//
// Each chunk of a split @forward becomes a function of its own; see
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPIPELINEOUTLINE
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

struct DistPipelineOutlinePass
    : public dist::impl::DistPipelineOutlineBase<DistPipelineOutlinePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  InFlightDiagnostic error(Operation *at) {
    return at->emitError() << "dist-pipeline-outline: ";
  }

  LogicalResult run(ModuleOp module);
};

/// Whether `op` computes from parameters and constants alone (a cast or a
/// view of a weight): every chunk that reads it computes its own copy, so a
/// parameter shared by two chunks (GPT-2's tied embedding) never travels
/// through the pipeline.
bool fromParametersAlone(Operation *op, func::FuncOp forward,
                         DenseMap<Operation *, bool> &memo) {
  if (auto it = memo.find(op); it != memo.end())
    return it->second;
  bool result = isMemoryEffectFree(op) && op->getNumRegions() == 0;
  for (Value operand : op->getOperands()) {
    if (!result)
      break;
    if (auto arg = dyn_cast<BlockArgument>(operand))
      result = forward.getArgAttr(arg.getArgNumber(), tpc::kParamAttrName) !=
               nullptr;
    else
      result = fromParametersAlone(operand.getDefiningOp(), forward, memo);
  }
  return memo[op] = result;
}

LogicalResult DistPipelineOutlinePass::run(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal() || !forward.getBody().hasOneBlock())
    return error(module) << "no func.func @forward with a body";
  Block &body = forward.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // The ops of each chunk, in order; the parameter-only ones apart.
  DenseMap<Operation *, bool> shared;
  SmallVector<SmallVector<Operation *>> chunks;
  for (Operation &op : body.without_terminator()) {
    auto stage = op.getAttrOfType<IntegerAttr>(kStageAttrName);
    if (!stage || stage.getInt() < 0)
      return error(&op) << "has no '" << kStageAttrName
                        << "' (run dist-pipeline-split first)";
    if (fromParametersAlone(&op, forward, shared))
      continue;
    size_t chunk = stage.getInt();
    if (chunk >= chunks.size())
      chunks.resize(chunk + 1);
    chunks[chunk].push_back(&op);
  }
  if (chunks.empty())
    return error(forward) << "@forward computes nothing to outline";

  OpBuilder builder(module.getContext());
  SmallVector<func::CallOp> calls;
  DenseMap<Value, Value> replaced; // @forward's value -> a call's result
  for (auto [chunk, ops] : llvm::enumerate(chunks)) {
    llvm::SmallPtrSet<Operation *, 32> inChunk(ops.begin(), ops.end());
    // What the chunk reads from outside (parameters, inputs, earlier
    // chunks' activations) and what it hands on (to later chunks or the
    // return); parameter-only ops are recomputed inside.
    llvm::SetVector<Value> inputs, outputs;
    SmallVector<Operation *> copies; // parameter-only ops it reads, in order
    llvm::SmallPtrSet<Operation *, 8> copied;
    std::function<void(Value)> read = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (def && inChunk.contains(def))
        return;
      if (def && shared.lookup(def)) {
        if (!copied.insert(def).second)
          return;
        for (Value operand : def->getOperands())
          read(operand);
        copies.push_back(def);
        return;
      }
      inputs.insert(value);
    };
    for (Operation *op : ops) {
      for (Value operand : op->getOperands())
        read(operand);
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inChunk.contains(user);
            }))
          outputs.insert(result);
    }
    if (outputs.empty())
      return error(ops.back()) << "chunk " << chunk
                               << " hands nothing on: nothing reads it";

    // The chunk's function.
    builder.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> argTypes, resultTypes;
    for (Value v : inputs)
      argTypes.push_back(v.getType());
    for (Value v : outputs)
      resultTypes.push_back(v.getType());
    auto function = func::FuncOp::create(
        builder, forward.getLoc(), (forward.getName() + "_chunk" +
                                    Twine(chunk)).str(),
        builder.getFunctionType(argTypes, resultTypes));
    function->setAttr(kStageAttrName, builder.getI64IntegerAttr(chunk));
    Block *entry = function.addEntryBlock();
    IRMapping mapping;
    for (auto [i, value] : llvm::enumerate(inputs)) {
      mapping.map(value, entry->getArgument(i));
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        function.setArgAttrs(i, forward.getArgAttrDict(arg.getArgNumber()));
        continue;
      }
      // An activation of an earlier chunk: which one sends it.
      auto from = value.getDefiningOp()->getAttrOfType<IntegerAttr>(
          kStageAttrName);
      function.setArgAttr(i, kBoundaryAttrName, from);
    }
    builder.setInsertionPointToStart(entry);
    for (Operation *op : copies)
      builder.clone(*op, mapping);
    for (Operation *op : ops)
      builder.clone(*op, mapping);
    SmallVector<Value> results;
    for (Value v : outputs)
      results.push_back(mapping.lookup(v));
    func::ReturnOp::create(builder, forward.getLoc(), results);

    // In @forward, a call of it, after the chunks before it.
    builder.setInsertionPoint(ret);
    SmallVector<Value> arguments;
    for (Value v : inputs)
      arguments.push_back(replaced.lookup(v) ? replaced.lookup(v) : v);
    auto call = func::CallOp::create(builder, forward.getLoc(), function,
                                     arguments);
    call->setAttr(kStageAttrName, builder.getI64IntegerAttr(chunk));
    for (auto [value, result] : llvm::zip(outputs, call.getResults()))
      replaced[value] = result;
    calls.push_back(call);
  }

  // @forward returns the calls' results; the ops it outlined go.
  for (auto [i, operand] : llvm::enumerate(ret.getOperands()))
    if (Value result = replaced.lookup(operand))
      ret.setOperand(i, result);
  SmallVector<Operation *> dead;
  for (Operation &op : body.without_terminator())
    if (!isa<func::CallOp>(op))
      dead.push_back(&op);
  for (Operation *op : llvm::reverse(dead)) {
    if (!op->use_empty())
      return error(op) << "is still read in @forward after outlining";
    op->erase();
  }
  return success();
}

} // namespace
