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
#include "llvm/Support/MemoryBuffer.h"
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
    auto fail = [&]() { return module.emitError() << "dist-print-schedule: "; };
    pipeline::Costs costs{static_cast<int>(forwardCost),
                          static_cast<int>(backwardCost),
                          static_cast<int>(weightCost)};
    std::optional<dist::ModuleSchedule> checked;
    if (input.empty()) {
      FailureOr<dist::ModuleSchedule> built = dist::buildModuleSchedule(
          module, "dist-print-schedule", schedule, microbatches, costs);
      if (failed(built))
        return failure();
      checked = std::move(*built);
    } else {
      // A schedule written (or edited) by hand: read and check it alone.
      std::string error;
      std::unique_ptr<llvm::MemoryBuffer> text =
          openInputFile(input, &error);
      if (!text)
        return fail() << error;
      std::optional<pipeline::Schedule> read =
          pipeline::parseSchedule(text->getBuffer().str(), error);
      if (!read)
        return fail() << input << ": " << error;
      std::optional<pipeline::ScheduleStats> stats =
          pipeline::check(*read, error, costs);
      if (!stats)
        return fail() << input << ": the schedule does not check: " << error;
      checked = dist::ModuleSchedule{std::move(*read), std::move(*stats)};
    }

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file)
      return fail() << error;
    file->os() << pipeline::printTimeline(checked->schedule, checked->stats);
    if (actions)
      file->os() << pipeline::printSchedule(checked->schedule);
    file->keep();
    return success();
  }
};

} // namespace
