//===- AutodiffChunks.cpp - tpc-autodiff of a @forward of calls -----------===//
//
// A pipeline-split model (dist-pipeline-outline) is a @forward that calls
// one function per chunk. Each chunk gets its own F, B and W, B taking the
// gradients of the activations the chunk hands on and returning those of
// the activations it received, so that a pipeline schedule can run any
// chunk's F, B or W of any microbatch on its own
// (docs/design/pipeline-schedules.md, "The way there"). The driver built
// here runs them in model order; it computes what tpc-autodiff's driver
// computes for the unsplit model.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// One chunk: its call in @forward and its training functions.
struct Chunk {
  func::CallOp call;
  TrainingFunctions functions;
};

Value zerosOf(OpBuilder &builder, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return arith::ConstantOp::create(
      builder, loc, tensor,
      DenseElementsAttr::get(
          tensor, builder.getFloatAttr(tensor.getElementType(), 0.0)));
}

/// Erases the training functions of `chunks`.
void eraseTrainingFunctions(ArrayRef<Chunk> chunks) {
  for (const Chunk &chunk : chunks)
    for (func::FuncOp f : {chunk.functions.forward, chunk.functions.inputGrad,
                           chunk.functions.weightGrad})
      f.erase();
}

/// F, B and W of every callee of `forward`, in call order; nothing is left
/// behind when one fails.
FailureOr<SmallVector<Chunk, 4>> differentiateChunks(ModuleOp module,
                                                  func::FuncOp forward,
                                                  unsigned microbatches) {
  SmallVector<Chunk, 4> chunks;
  auto eraseBuilt = [&] {
    eraseTrainingFunctions(chunks);
    return failure();
  };
  llvm::StringSet<> seen;
  for (auto call : forward.getBody().front().getOps<func::CallOp>()) {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      return call.emitError() << "tpc-autodiff: @" << call.getCallee()
                              << " is not a function with a body",
             eraseBuilt();
    if (!seen.insert(call.getCallee()).second)
      return call.emitError() << "tpc-autodiff: @forward calls @"
                              << call.getCallee()
                              << " twice; each chunk is called once",
             eraseBuilt();
    // @forward_chunk0 -> @train_F_chunk0.
    StringRef suffix = call.getCallee();
    suffix.consume_front("forward_");
    FailureOr<TrainingFunctions> functions =
        buildChunkTrainingFunctions(callee, microbatches, suffix);
    if (failed(functions))
      return eraseBuilt();
    chunks.push_back({call, *functions});
  }
  if (chunks.empty() || !chunks.back().functions.computesLoss)
    return forward.emitError("tpc-autodiff: the last function @forward calls "
                             "must compute the loss"),
           eraseBuilt();
  for (const Chunk &chunk : llvm::ArrayRef(chunks).drop_back())
    if (chunk.functions.computesLoss)
      return func::CallOp(chunk.call).emitError()
                 << "tpc-autodiff: only the last chunk computes the loss",
             eraseBuilt();
  return chunks;
}

} // namespace

LogicalResult mlir::tpc::buildChunkedTrainingStep(ModuleOp module,
                                                  func::FuncOp forward,
                                                  unsigned microbatches) {
  if (Operation *existing = module.lookupSymbol(kTrainStepName))
    return existing->emitError()
           << "tpc-autodiff: @" << kTrainStepName
           << " already exists (tpc-autodiff ran before?)";
  // The driver's arguments are @forward's: parameters first, then the
  // inputs.
  SmallVector<unsigned> paramArgs;
  std::optional<unsigned> idsArg, labelsArg;
  for (BlockArgument arg : forward.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto input = forward.getArgAttrOfType<StringAttr>(i, kInputAttrName);
    if (forward.getArgAttr(i, kParamAttrName) && !idsArg && !labelsArg)
      paramArgs.push_back(i);
    else if (input && input.getValue() == "input_ids")
      idsArg = i;
    else if (input && input.getValue() == "labels")
      labelsArg = i;
    else
      return forward.emitError()
             << "tpc-autodiff: argument " << i
             << " of @forward is neither a parameter (parameters come first) "
                "nor input_ids / labels";
  }
  if (!idsArg || !labelsArg)
    return forward.emitError(
        "tpc-autodiff: @forward needs the inputs input_ids and labels");
  auto idsType = cast<RankedTensorType>(forward.getArgument(*idsArg).getType());
  int64_t batch = idsType.getRank() ? idsType.getDimSize(0) : 0;
  if (batch == 0 || batch % microbatches != 0)
    return forward.emitError() << "tpc-autodiff: batch " << batch
                               << " is not divisible by microbatches="
                               << microbatches;

  FailureOr<SmallVector<Chunk, 4>> built =
      differentiateChunks(module, forward, microbatches);
  if (failed(built))
    return failure();
  SmallVector<Chunk, 4> &chunks = *built;

  OpBuilder builder(module.getContext());
  Location loc = forward.getLoc();
  Type f32 = builder.getF32Type();
  auto scalarF32 = RankedTensorType::get({}, f32);
  SmallVector<Type> inputs(forward.getArgumentTypes()), gradTypes;
  for (unsigned i : paramArgs) {
    // Master weights stay f32 whatever the model's precision.
    inputs[i] = cast<RankedTensorType>(inputs[i]).clone(f32);
    gradTypes.push_back(inputs[i]);
  }
  SmallVector<Type> results = {scalarF32};
  llvm::append_range(results, gradTypes);
  builder.setInsertionPointToEnd(module.getBody());
  auto driver = func::FuncOp::create(builder, loc, kTrainStepName,
                                     builder.getFunctionType(inputs, results));
  driver.addEntryBlock();
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    driver.setArgAttrs(i, forward.getArgAttrDict(i));
  driver.setResultAttr(0, kOutputAttrName, builder.getStringAttr("loss"));
  for (auto [k, i] : llvm::enumerate(paramArgs))
    driver.setResultAttr(k + 1, kGradAttrName,
                         forward.getArgAttr(i, kParamAttrName));
  driver->setAttr(kMicrobatchesAttrName,
                  builder.getI64IntegerAttr(microbatches));

  builder.setInsertionPointToStart(&driver.getBody().front());
  // @forward's parameters as the chunks take them (cast once per step).
  IRMapping stepValues;
  for (unsigned i : paramArgs) {
    Value master = driver.getArgument(i);
    Type model = forward.getArgument(i).getType();
    stepValues.map(forward.getArgument(i),
                   master.getType() == model
                       ? master
                       : CastOp::create(builder, loc, model, master));
  }
  Value ids = driver.getArgument(*idsArg);
  Value labels = driver.getArgument(*labelsArg);
  Value total = CountTargetsOp::create(builder, loc, labels,
                                       chunks.back().functions.ignoreIndex);
  Value dlossSum = InverseCountOp::create(builder, loc, total);

  // Accumulators: the loss sum, then each chunk's parameter gradients.
  SmallVector<Value> init = {zerosOf(builder, loc, scalarF32)};
  for (Chunk &chunk : chunks)
    for (Type type : chunk.functions.weightGrad.getResultTypes())
      init.push_back(zerosOf(builder, loc, type));

  int64_t micro = batch / microbatches;
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  auto loop = scf::ForOp::create(
      builder, loc, index(0), index(microbatches), index(1), init,
      [&](OpBuilder &b, Location loc, Value iv, ValueRange acc) {
        IRMapping values = stepValues;
        Value offset = arith::MulIOp::create(
            b, loc, iv, arith::ConstantIndexOp::create(b, loc, micro));
        values.map(forward.getArgument(*idsArg),
                   sliceMicrobatch(b, loc, ids, offset, micro));
        values.map(forward.getArgument(*labelsArg),
                   sliceMicrobatch(b, loc, labels, offset, micro));
        Value microbatchIndex =
            arith::IndexCastOp::create(b, loc, b.getI64Type(), iv);
        Value microbatch = tensor::FromElementsOp::create(
            b, loc, RankedTensorType::get({}, b.getI64Type()),
            microbatchIndex);

        // Every F in model order; a chunk's outputs stand for its call's
        // results.
        SmallVector<SmallVector<Value>> fArgs(chunks.size());
        SmallVector<func::CallOp> fCalls;
        for (auto [c, chunk] : llvm::enumerate(chunks)) {
          for (Value operand : chunk.call.getOperands())
            fArgs[c].push_back(values.lookup(operand));
          fArgs[c].push_back(microbatch);
          auto f = func::CallOp::create(b, loc, chunk.functions.forward,
                                        fArgs[c]);
          fCalls.push_back(f);
          if (!chunk.functions.computesLoss)
            values.map(chunk.call.getResults(),
                       f.getResults().take_front(chunk.call.getNumResults()));
        }

        // Every B in reverse, each W after its B. `outputGrads` sums the
        // gradients later chunks return for a chunk's outputs.
        DenseMap<Value, Value> outputGrads;
        SmallVector<Value> next(acc.size());
        unsigned accIndex = acc.size();
        for (size_t c = chunks.size(); c-- > 0;) {
          Chunk &chunk = chunks[c];
          const TrainingFunctions &fn = chunk.functions;
          func::CallOp f = fCalls[c];
          SmallVector<Value> bArgs(fArgs[c]), wArgs;
          if (fn.computesLoss) {
            bArgs.push_back(dlossSum);
          } else {
            for (Value result : chunk.call.getResults()) {
              Value g = outputGrads.lookup(result);
              // An output no later chunk reads: no gradient flows back.
              bArgs.push_back(g ? g
                                : zerosOf(b, loc,
                                          values.lookup(result).getType()));
            }
          }
          for (unsigned i : fn.stashB)
            bArgs.push_back(f.getResult(i));
          auto bCall = func::CallOp::create(b, loc, fn.inputGrad, bArgs);
          for (auto [k, arg] : llvm::enumerate(fn.activationArgs)) {
            Value received = chunk.call.getOperand(arg);
            Value g = bCall.getResult(k);
            Value &sum = outputGrads[received];
            sum = sum ? AddOp::create(b, loc, sum, g) : g;
          }
          for (unsigned i : fn.weightArgs)
            wArgs.push_back(fArgs[c][i]);
          for (unsigned i : fn.stashW)
            wArgs.push_back(f.getResult(i));
          llvm::append_range(
              wArgs, bCall.getResults().drop_front(fn.activationArgs.size()));
          auto wCall = func::CallOp::create(b, loc, fn.weightGrad, wArgs);
          accIndex -= wCall.getNumResults();
          for (auto [k, g] : llvm::enumerate(wCall.getResults()))
            next[accIndex + k] = AddOp::create(b, loc, acc[accIndex + k], g);
        }
        next[0] = AddOp::create(b, loc, acc[0], fCalls.back().getResult(0));
        scf::YieldOp::create(b, loc, next);
      });

  // Each parameter's gradient: the sum of the accumulated gradients of the
  // chunks that read it, in chunk order (a tied embedding: first and last).
  DenseMap<Value, Value> gradOf;
  unsigned accIndex = 1;
  for (Chunk &chunk : chunks) {
    for (unsigned arg : chunk.functions.paramArgs) {
      Value param = chunk.call.getOperand(arg);
      Value g = loop.getResult(accIndex++);
      Value &sum = gradOf[param];
      sum = sum ? AddOp::create(builder, loc, sum, g) : g;
    }
  }
  SmallVector<Value> returned = {
      LossMeanOp::create(builder, loc, loop.getResult(0), total)};
  for (auto [k, i] : llvm::enumerate(paramArgs)) {
    Value g = gradOf.lookup(forward.getArgument(i));
    returned.push_back(g ? g : zerosOf(builder, loc, gradTypes[k]));
  }
  func::ReturnOp::create(builder, loc, returned);
  if (failed(verify(driver))) {
    driver.erase();
    eraseTrainingFunctions(chunks);
    return failure();
  }
  return success();
}
