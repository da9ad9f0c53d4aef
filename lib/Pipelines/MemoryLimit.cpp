//===- MemoryLimit.cpp - every stage's planned peak within the limit ------===//
//
// tpc-check-memory-limit, the last pass of a compile with a memory limit:
// each pipeline stage's planned peak (rt-plan-memory's) against the limit,
// and against the peak remat-auto predicted for its choice.
//
//===----------------------------------------------------------------------===//

#include "tpc/Pipelines/Pipelines.h"

#include "dialects/Rt/Transforms/PlanMemory.h"

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tpc;

LogicalResult mlir::tpc::checkMemoryLimit(ModuleOp module,
                                          const CompileOptions &options) {
  if (!options.memoryLimit)
    return success();
  FailureOr<SmallVector<int64_t>> peaks =
      rt::readPlannedPeaks(module, options.axisSize("pp"));
  if (failed(peaks))
    return failure();
  FailureOr<SmallVector<RematChoice>> choices = readRematChoices(module);
  if (failed(choices))
    return failure();
  std::string remat = options.setting("remat", "auto");
  SmallVector<std::string> over;
  for (auto [stage, peak] : llvm::enumerate(*peaks)) {
    if (stage < choices->size() && (*choices)[stage].plannedPeak != peak)
      return module.emitError()
             << remat << ": stage " << stage << " was predicted a planned "
             << "peak of " << (*choices)[stage].plannedPeak
             << " bytes, its plan has " << peak << " (a compiler bug)";
    if (peak > options.memoryLimit)
      over.push_back(llvm::formatv("stage {0}'s planned peak is {1} bytes, "
                                   "{2} over",
                                   stage, peak, peak - options.memoryLimit));
  }
  if (over.empty())
    return success();
  // A training step can recompute instead of stashing; a forward pass
  // stashes nothing.
  std::string hint =
      options.train ? " (" + remat + " chooses what to recompute to fit)"
                    : " (a forward pass: a smaller batch or a mesh)";
  return module.emitError()
         << options.setting("memory-limit",
                            std::to_string(options.memoryLimit))
         << ": " << llvm::join(over, "; ") << hint;
}

namespace {

struct CheckMemoryLimitPass
    : public PassWrapper<CheckMemoryLimitPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckMemoryLimitPass)

  explicit CheckMemoryLimitPass(const CompileOptions &options)
      : options(options) {}

  StringRef getArgument() const override { return "tpc-check-memory-limit"; }
  StringRef getDescription() const override {
    return "Every stage's planned peak within the compile's memory limit "
           "(and equal to what remat auto predicted for it)";
  }
  void runOnOperation() override {
    if (failed(checkMemoryLimit(getOperation(), options)))
      signalPassFailure();
  }

  CompileOptions options;
};

} // namespace

std::unique_ptr<Pass>
mlir::tpc::createCheckMemoryLimitPass(const CompileOptions &options) {
  return std::make_unique<CheckMemoryLimitPass>(options);
}
