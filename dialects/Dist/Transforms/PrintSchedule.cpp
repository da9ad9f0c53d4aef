//===- PrintSchedule.cpp - dist-print-schedule ----------------------------===//
//
// The schedule of a split model, built, checked and printed as a timeline
// by the pipeline schedule library (PipelineSchedule.h); see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Dist/Transforms/PipelineSchedule.h"

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
    auto fail = [&]() { return module.emitError() << "dist-print-schedule: "; };
    auto split = module->getAttrOfType<DictionaryAttr>(dist::kPipelineAttrName);
    auto stages = split ? split.getAs<IntegerAttr>("stages") : IntegerAttr();
    auto chunks =
        split ? split.getAs<IntegerAttr>("virtual_stages") : IntegerAttr();
    auto placement =
        split ? split.getAs<StringAttr>("placement") : StringAttr();
    if (!stages || !chunks || !placement)
      return fail() << "the module has no 'dist.pipeline' (run "
                       "dist-pipeline-split first)";
    std::optional<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(schedule);
    if (!kind)
      return fail() << "schedule '" << schedule
                    << "' is not one of gpipe, 1f1b, interleaved-1f1b, "
                       "zb-h1, zb-v";
    std::optional<pipeline::Placement> where =
        pipeline::parsePlacement(placement.getValue().str());
    if (!where)
      return fail() << "placement '" << placement.getValue()
                    << "' is not one of round-robin, v";
    if (microbatches < 1 || forwardCost < 0 || backwardCost < 0 ||
        weightCost < 0)
      return fail() << "microbatches must be positive and the costs "
                       "non-negative";

    pipeline::ScheduleOptions options;
    options.kind = *kind;
    options.ranks = static_cast<int>(stages.getInt());
    options.chunksPerRank = static_cast<int>(chunks.getInt());
    options.placement = *where;
    options.microbatches = static_cast<int>(microbatches);
    options.costs = {static_cast<int>(forwardCost),
                     static_cast<int>(backwardCost),
                     static_cast<int>(weightCost)};
    std::string why;
    std::optional<pipeline::Schedule> built =
        pipeline::generateSchedule(options, why);
    if (!built)
      return fail() << why;
    std::optional<pipeline::ScheduleStats> stats =
        pipeline::check(*built, why, options.costs);
    if (!stats)
      return fail() << "the schedule does not check: " << why;

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file)
      return fail() << error;
    file->os() << pipeline::printTimeline(*built, *stats);
    file->keep();
    return success();
  }
};

} // namespace
