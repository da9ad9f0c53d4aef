//===- ModelInfo.cpp - the report's model, and its memory figures ---------===//

#include "tpc/Analysis/Report.h"

#include "dialects/Rt/Transforms/PlanMemory.h"
#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

LogicalResult mlir::tpc::readModelInfo(ModuleOp module, func::FuncOp forward,
                                       int64_t microbatches,
                                       CompileReport &report) {
  auto model = module->getAttrOfType<DictionaryAttr>("tpc.model");
  if (!model)
    return module.emitError("report: the module has no 'tpc.model' "
                            "attribute (tpc-import writes it)");
  auto field = [&](StringRef name, int64_t &value) -> LogicalResult {
    auto attr = model.getAs<IntegerAttr>(name);
    if (!attr)
      return module.emitError()
             << "report: 'tpc.model' has no integer '" << name << "'";
    value = attr.getInt();
    return success();
  };
  int64_t batch = 0;
  if (failed(field("layers", report.layers)) ||
      failed(field("hidden", report.hidden)) ||
      failed(field("heads", report.heads)) ||
      failed(field("seq", report.seq)) ||
      failed(field("vocab", report.vocab)) || failed(field("batch", batch)))
    return failure();
  report.microbatches = microbatches;
  report.microbatchSize = microbatches > 0 ? batch / microbatches : batch;
  // The activations' type: that of the embedding's result (in the first
  // chunk's function once a pipeline split outlined the forward).
  report.dtype = "fp32";
  module.walk([&](EmbeddingOp embedding) {
    Type element = embedding.getType().getElementType();
    report.dtype = element.isBF16()  ? "bf16"
                   : element.isF16() ? "fp16"
                                     : "fp32";
    return WalkResult::interrupt();
  });
  return success();
}

LogicalResult mlir::tpc::readMemoryFigures(ModuleOp module,
                                           CompileReport &report) {
  auto programs = module.getOps<rt::ProgramOp>();
  if (programs.empty())
    return module.emitError("report: no rt.program to read the memory plan of");
  bool staged = report.stages.size() > 1;
  for (auto [i, figures] : llvm::enumerate(report.stages)) {
    rt::MemoryStats stats = rt::computeMemoryStats(
        *programs.begin(),
        staged ? std::optional<unsigned>(i) : std::nullopt);
    figures.paramBytes = stats.paramBytes + stats.paramCopyBytes;
    figures.gradBytes = stats.gradBytes;
    figures.optimizerBytes = stats.stateBytes;
    figures.peakActivationBytes = stats.peakActivationBytes;
    figures.peakBytes = stats.peakBytes;
  }
  return success();
}
