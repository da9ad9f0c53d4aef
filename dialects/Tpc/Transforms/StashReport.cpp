//===- StashReport.cpp - tpc-stash-report ---------------------------------===//

#include "dialects/Tpc/Transforms/Autodiff.h"
#include "dialects/Tpc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::tpc {
#define GEN_PASS_DEF_TPCSTASHREPORT
#include "dialects/Tpc/Transforms/Passes.h.inc"
} // namespace mlir::tpc

using namespace mlir;
using namespace mlir::tpc;

namespace {
struct StashReportPass : public tpc::impl::TpcStashReportBase<StashReportPass> {
  using TpcStashReportBase::TpcStashReportBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The stash tpc-autodiff built, or the one it would build.
    FailureOr<StashSummary> summary;
    if (auto trainF = module.lookupSymbol<func::FuncOp>(kTrainForwardName))
      summary = summarizeStash(trainF);
    else if (module.lookupSymbol<func::FuncOp>("forward"))
      summary = computeStashSummary(module, microbatches);
    else
      summary = module.emitError("tpc-stash-report: no func.func @")
                << kTrainForwardName << " or @forward";
    if (failed(summary))
      return signalPassFailure();
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "tpc-stash-report: " << error;
      return signalPassFailure();
    }
    llvm::raw_ostream &os = file->os();
    auto line = [&](StringRef what, const StashSummary::Entry &entry) {
      os << llvm::formatv("{0}: {1} values, {2} bytes\n", what, entry.values,
                          entry.bytes);
    };
    for (auto &[layer, entry] : summary->layers)
      line(llvm::formatv("layer {0}", layer).str(), entry);
    line("outside layers", summary->outside);
    line("total", summary->total);
    file->keep();
  }
};
} // namespace
