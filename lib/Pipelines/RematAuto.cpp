//===- RematAuto.cpp - remat auto as a pass -------------------------------===//
//
// tpc-remat-auto, on the unrolled training step: chooseRemat
// (RematSearch.cpp) compiles the candidates on copies of the module, then
// tpc-remat applies the policy chosen, and the module records the choices
// per stage (kRematAutoAttrName) for the report and for
// tpc-check-memory-limit, which holds the plan to the peaks predicted.
//
//===----------------------------------------------------------------------===//

#include "tpc/Pipelines/Pipelines.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::tpc;

FailureOr<SmallVector<RematChoice>>
mlir::tpc::readRematChoices(ModuleOp module) {
  SmallVector<RematChoice> choices;
  Attribute recorded = module->getAttr(kRematAutoAttrName);
  if (!recorded)
    return choices;
  auto entries = dyn_cast<ArrayAttr>(recorded);
  if (!entries)
    return module.emitError() << "'" << kRematAutoAttrName
                              << "' is not an array: " << recorded;
  for (auto [stage, entry] : llvm::enumerate(entries)) {
    auto fields = dyn_cast<DictionaryAttr>(entry);
    auto description =
        fields ? fields.getAs<StringAttr>("description") : nullptr;
    auto peak = fields ? fields.getAs<IntegerAttr>("planned_peak") : nullptr;
    auto flops = fields ? fields.getAs<IntegerAttr>(
                              "recompute_flops_per_microbatch")
                        : nullptr;
    if (!description || !peak || !flops)
      return module.emitError()
             << "'" << kRematAutoAttrName << "' stage " << stage
             << " lacks a description, planned_peak or "
                "recompute_flops_per_microbatch: "
             << entry;
    choices.push_back({description.str(), peak.getInt(), flops.getInt()});
  }
  return choices;
}

namespace {

struct RematAutoPass
    : public PassWrapper<RematAutoPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RematAutoPass)

  explicit RematAutoPass(const CompileOptions &options) : options(options) {}

  StringRef getArgument() const override { return "tpc-remat-auto"; }
  StringRef getDescription() const override {
    return "Per stage, the rematerialization with the least recompute FLOPs "
           "whose planned peak fits the memory limit (each candidate "
           "compiled), applied by tpc-remat";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<RematChoice> choices;
    FailureOr<std::string> policy = chooseRemat(module, options, choices);
    if (failed(policy))
      return signalPassFailure();
    OpPassManager remat(ModuleOp::getOperationName());
    TpcRematOptions rematOptions;
    rematOptions.policy = *policy;
    remat.addPass(createTpcRemat(rematOptions));
    if (failed(runPipeline(remat, module)))
      return signalPassFailure();
    Builder builder(module.getContext());
    SmallVector<Attribute> entries;
    for (const RematChoice &choice : choices)
      entries.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("description",
                                builder.getStringAttr(choice.description)),
           builder.getNamedAttr("planned_peak",
                                builder.getI64IntegerAttr(choice.plannedPeak)),
           builder.getNamedAttr("recompute_flops_per_microbatch",
                                builder.getI64IntegerAttr(
                                    choice.recomputeFlopsPerMicrobatch))}));
    module->setAttr(kRematAutoAttrName, builder.getArrayAttr(entries));
  }

  CompileOptions options;
};

} // namespace

std::unique_ptr<Pass>
mlir::tpc::createRematAutoPass(const CompileOptions &options) {
  return std::make_unique<RematAutoPass>(options);
}
