//===- Optimizer.cpp - tpc-optimizer --------------------------------------===//
//
// Appends the gradient norm, clipping, learning-rate schedule and the
// AdamW / SGD update to @train_step. The updates are value semantics here;
// the rt lowering runs them in place on the parameter and state buffers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/Transforms/Autodiff.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include <cstdio>

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCOPTIMIZER
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {

struct OptimizerPass : public tpc::impl::TpcOptimizerBase<OptimizerPass> {
  using TpcOptimizerBase::TpcOptimizerBase;

  void runOnOperation() override;

private:
  /// Checks the options; the diagnostics name the option as spelled.
  LogicalResult checkOptions(ModuleOp module);
  double decayOf(StringRef param) const;

  bool isAdamW() const { return optimizer == "adamw"; }
};

} // namespace

/// A double as the user would write it (`%g`).
static std::string str(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

LogicalResult OptimizerPass::checkOptions(ModuleOp module) {
  auto fail = [&](const Twine &message) {
    return module.emitError("tpc-optimizer: " + message);
  };
  auto finite = [](double x) { return std::isfinite(x); };
  if (optimizer != "adamw" && optimizer != "sgd")
    return fail("optimizer '" + optimizer + "' is not adamw or sgd");
  if (lrSchedule != "constant" && lrSchedule != "cosine")
    return fail("lr-schedule '" + lrSchedule + "' is not constant or cosine");
  if (!(lr >= 0.0 && finite(lr)))
    return fail("lr " + str(lr) + " must be non-negative and finite");
  if (!(beta1 >= 0.0 && beta1 < 1.0))
    return fail("beta1 " + str(beta1) + " is outside [0, 1)");
  if (!(beta2 >= 0.0 && beta2 < 1.0))
    return fail("beta2 " + str(beta2) + " is outside [0, 1)");
  if (!(eps > 0.0 && finite(eps)))
    return fail("eps " + str(eps) + " must be positive and finite");
  if (!finite(weightDecay))
    return fail("weight-decay " + str(weightDecay) + " must be finite");
  if (!(momentum >= 0.0 && finite(momentum)))
    return fail("momentum " + str(momentum) +
                " must be non-negative and finite");
  if (!(gradClip >= 0.0 && finite(gradClip)))
    return fail("grad-clip " + str(gradClip) +
                " must be non-negative and finite (0: no clipping)");
  if (warmupSteps < 0)
    return fail("warmup-steps " + Twine(warmupSteps) + " is negative");
  if (!(minLr >= 0.0 && minLr <= lr))
    return fail("min-lr " + str(minLr) + " is outside [0, lr = " + str(lr) +
                "]");
  // A warm-up is part of the cosine schedule; asking for one with a constant
  // rate is more likely a mistake than a wish to have it ignored.
  if (lrSchedule == "constant" && warmupSteps != 0)
    return fail("warmup-steps " + Twine(warmupSteps) +
                " needs lr-schedule cosine");
  if (lrSchedule == "cosine" && totalSteps <= warmupSteps)
    return fail("lr-schedule cosine needs total-steps (" + Twine(totalSteps) +
                ") greater than warmup-steps (" + Twine(warmupSteps) + ")");
  return success();
}

double OptimizerPass::decayOf(StringRef param) const {
  for (const std::string &pattern : decayExclude)
    if (!pattern.empty() && param.contains(pattern))
      return 0.0;
  if (weightDecay >= 0.0)
    return weightDecay;
  return isAdamW() ? 0.01 : 0.0;
}

void OptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(checkOptions(module)))
    return signalPassFailure();
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step) {
    module.emitError("tpc-optimizer: no func.func @")
        << kTrainStepName << " (run tpc-autodiff first)";
    return signalPassFailure();
  }
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    auto input = step.getArgAttrOfType<StringAttr>(i, kInputAttrName);
    if ((input && input.getValue() == "step") ||
        step.getArgAttr(i, kStateAttrName)) {
      step.emitError("tpc-optimizer: @")
          << kTrainStepName << " already has an optimizer";
      return signalPassFailure();
    }
  }

  // The gradients (results named by tpc.grad) and their parameters.
  llvm::StringMap<unsigned> paramArg;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    if (auto name = step.getArgAttrOfType<StringAttr>(i, kParamAttrName))
      paramArg[name.getValue()] = i;
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  SmallVector<StringAttr> names;
  SmallVector<Value> grads, params;
  std::optional<unsigned> lossIndex;
  for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
    auto output = step.getResultAttrOfType<StringAttr>(i, kOutputAttrName);
    if (output && output.getValue() == "loss")
      lossIndex = i;
    auto name = step.getResultAttrOfType<StringAttr>(i, kGradAttrName);
    if (!name)
      continue;
    auto it = paramArg.find(name.getValue());
    if (it == paramArg.end()) {
      step.emitError("tpc-optimizer: gradient result ")
          << i << " names '" << name.getValue()
          << "', which is no parameter of @" << kTrainStepName;
      return signalPassFailure();
    }
    names.push_back(name);
    grads.push_back(ret.getOperand(i));
    params.push_back(step.getArgument(it->second));
  }
  if (!lossIndex) {
    step.emitError("tpc-optimizer: @")
        << kTrainStepName << " returns no loss ('" << kOutputAttrName
        << "' = \"loss\")";
    return signalPassFailure();
  }
  if (grads.empty()) {
    step.emitError("tpc-optimizer: @")
        << kTrainStepName << " returns no gradient ('" << kGradAttrName << "')";
    return signalPassFailure();
  }

  // New arguments: the step, then the state of each parameter.
  OpBuilder builder(step);
  MLIRContext *ctx = &getContext();
  Location loc = step.getLoc();
  auto scalarI64 = RankedTensorType::get({}, builder.getI64Type());
  auto stateAttr = [&](StringRef name, StringAttr param) {
    return builder.getDictionaryAttr(
        {builder.getNamedAttr("name", builder.getStringAttr(name)),
         builder.getNamedAttr("param", param)});
  };
  SmallVector<StringRef> stateNames;
  if (isAdamW())
    stateNames = {"exp_avg", "exp_avg_sq"};
  else if (momentum != 0.0)
    stateNames = {"momentum"};
  unsigned stepIndex = step.getNumArguments();
  SmallVector<unsigned> indices = {stepIndex};
  SmallVector<Type> types = {scalarI64};
  SmallVector<DictionaryAttr> attrs = {builder.getDictionaryAttr(
      builder.getNamedAttr(kInputAttrName, builder.getStringAttr("step")))};
  for (auto [name, param] : llvm::zip(names, params))
    for (StringRef state : stateNames) {
      indices.push_back(stepIndex);
      types.push_back(param.getType());
      // A state is stored as its parameter: it keeps the parameter's
      // attributes of other dialects (dist-pad-vocab's unpadded shape,
      // which the lowering checks the two agree on).
      SmallVector<NamedAttribute> stateAttrs = {
          builder.getNamedAttr(kStateAttrName, stateAttr(state, name))};
      for (NamedAttribute attr :
           step.getArgAttrDict(cast<BlockArgument>(param).getArgNumber()))
        if (!attr.getName().getValue().starts_with("tpc."))
          stateAttrs.push_back(attr);
      attrs.push_back(builder.getDictionaryAttr(stateAttrs));
    }
  SmallVector<Location> locs(types.size(), loc);
  if (failed(step.insertArguments(indices, types, attrs, locs))) {
    step.emitError("tpc-optimizer: cannot add the optimizer arguments");
    return signalPassFailure();
  }
  Value stepArg = step.getArgument(stepIndex);
  auto states = step.getArguments().drop_front(stepIndex + 1);

  builder.setInsertionPoint(ret);
  // The gradients' norm: before the updates where it clips them; else only
  // reported, after them (the updates read the gradients first, so that
  // the CUDA device sums their squares in the updates' pass:
  // runtime/cuda/KernelBatches.h).
  auto gradientNorm = [&] {
    Value sumSquares = SumSquaresOp::create(builder, loc, grads);
    return ClipCoefficientOp::create(builder, loc, sumSquares,
                                     builder.getF64FloatAttr(gradClip));
  };
  ClipCoefficientOp clip;
  if (gradClip > 0.0)
    clip = gradientNorm();
  Value scale = clip ? clip.getCoefficient() : Value();
  bool cosine = lrSchedule == "cosine";
  Value rate = LrScheduleOp::create(
      builder, loc, stepArg,
      LrScheduleKindAttr::get(ctx, cosine ? LrScheduleKind::Cosine
                                          : LrScheduleKind::Constant),
      builder.getF64FloatAttr(lr),
      builder.getF64FloatAttr(cosine ? double(minLr) : 0.0),
      builder.getI64IntegerAttr(cosine ? int64_t(warmupSteps) : 0),
      builder.getI64IntegerAttr(cosine ? int64_t(totalSteps) : 0));

  SmallVector<Value> newParams, newStates;
  for (auto [i, grad] : llvm::enumerate(grads)) {
    FloatAttr decay = builder.getF64FloatAttr(decayOf(names[i].getValue()));
    if (isAdamW()) {
      auto update = AdamWUpdateOp::create(
          builder, loc, params[i], grad, states[2 * i], states[2 * i + 1], rate,
          stepArg, scale, builder.getF64FloatAttr(beta1),
          builder.getF64FloatAttr(beta2), builder.getF64FloatAttr(eps), decay);
      newParams.push_back(update.getNewParam());
      newStates.push_back(update.getNewExpAvg());
      newStates.push_back(update.getNewExpAvgSq());
    } else {
      Value buffer = momentum != 0.0 ? states[i] : Value();
      auto update =
          SgdUpdateOp::create(builder, loc, params[i], grad, buffer, rate,
                              scale, builder.getF64FloatAttr(momentum), decay);
      newParams.push_back(update.getNewParam());
      if (buffer)
        newStates.push_back(update.getNewMomentumBuffer());
    }
  }

  if (!clip)
    clip = gradientNorm();
  Value norm = clip.getNorm();

  // Results: loss, grad_norm, lr, gradients, new parameters, new state.
  SmallVector<Value> results = {ret.getOperand(*lossIndex), norm, rate};
  SmallVector<DictionaryAttr> resultAttrs = {
      step.getResultAttrDict(*lossIndex),
      builder.getDictionaryAttr(builder.getNamedAttr(
          kOutputAttrName, builder.getStringAttr("grad_norm"))),
      builder.getDictionaryAttr(
          builder.getNamedAttr(kOutputAttrName, builder.getStringAttr("lr")))};
  for (auto [grad, name] : llvm::zip(grads, names)) {
    results.push_back(grad);
    resultAttrs.push_back(
        builder.getDictionaryAttr(builder.getNamedAttr(kGradAttrName, name)));
  }
  for (auto [param, name] : llvm::zip(newParams, names)) {
    results.push_back(param);
    resultAttrs.push_back(
        builder.getDictionaryAttr(builder.getNamedAttr(kUpdateAttrName, name)));
  }
  for (auto [i, state] : llvm::enumerate(newStates)) {
    results.push_back(state);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kStateAttrName, stateAttr(stateNames[i % stateNames.size()],
                                  names[i / stateNames.size()]))));
  }
  ret->setOperands(results);
  step.setFunctionType(builder.getFunctionType(step.getArgumentTypes(),
                                               ValueRange(results).getTypes()));
  step.setAllResultAttrs(resultAttrs);
}
