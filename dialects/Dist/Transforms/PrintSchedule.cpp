//===- PrintSchedule.cpp - dist-print-schedule ----------------------------===//
//
// The schedule of a split model, built, checked and printed as a timeline
// by the pipeline schedule library (PipelineSchedule.h); see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Dist/Transforms/ModuleSchedule.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPRINTSCHEDULE
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
namespace pipeline = mlir::dist::pipeline;

namespace {

struct DistPrintSchedulePass
    : public dist::impl::DistPrintScheduleBase<DistPrintSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    FailureOr<dist::ModuleSchedule> built = dist::buildModuleSchedule(
        module, "dist-print-schedule", schedule, microbatches,
        {static_cast<int>(forwardCost), static_cast<int>(backwardCost),
         static_cast<int>(weightCost)});
    if (failed(built))
      return failure();

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file)
      return module.emitError() << "dist-print-schedule: " << error;
    file->os() << pipeline::printTimeline(built->schedule, built->stats);
    file->keep();
    return success();
  }
};

} // namespace
