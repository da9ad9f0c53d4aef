//===- StashReport.cpp - tpc-stash-report ---------------------------------===//

#include "dialects/Tpc/Transforms/Autodiff.h"
#include "dialects/Tpc/Transforms/Passes.h"

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
    auto trainF = module.lookupSymbol<func::FuncOp>(kTrainForwardName);
    if (!trainF) {
      module.emitError("tpc-stash-report: no func.func @")
          << kTrainForwardName << " (run tpc-autodiff first)";
      return signalPassFailure();
    }
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "tpc-stash-report: " << error;
      return signalPassFailure();
    }
    StashSummary summary = summarizeStash(trainF);
    llvm::raw_ostream &os = file->os();
    auto line = [&](StringRef what, const StashSummary::Entry &entry) {
      os << llvm::formatv("{0}: {1} values, {2} bytes\n", what, entry.values,
                          entry.bytes);
    };
    for (auto &[layer, entry] : summary.layers)
      line(llvm::formatv("layer {0}", layer).str(), entry);
    line("outside layers", summary.outside);
    line("total", summary.total);
    file->keep();
  }
};
} // namespace
