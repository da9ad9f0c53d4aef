//===- ModuleSchedule.cpp - the schedule of a split module ----------------===//

#include "dialects/Dist/Transforms/ModuleSchedule.h"
#include "dialects/Dist/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::dist;

FailureOr<ModuleSchedule>
mlir::dist::buildModuleSchedule(ModuleOp module, StringRef pass,
                                StringRef kindName, int64_t microbatches,
                                pipeline::Costs costs) {
  auto fail = [&]() { return module.emitError() << pass << ": "; };
  auto split = module->getAttrOfType<DictionaryAttr>(kPipelineAttrName);
  auto stages = split ? split.getAs<IntegerAttr>("stages") : IntegerAttr();
  auto chunks =
      split ? split.getAs<IntegerAttr>("virtual_stages") : IntegerAttr();
  auto placement = split ? split.getAs<StringAttr>("placement") : StringAttr();
  if (!stages || !chunks || !placement)
    return fail() << "the module has no 'dist.pipeline' (run "
                     "dist-pipeline-split first)",
           failure();
  std::optional<pipeline::ScheduleKind> kind =
      pipeline::parseScheduleKind(kindName.str());
  if (!kind)
    return fail() << "schedule '" << kindName
                  << "' is not one of gpipe, 1f1b, interleaved-1f1b, "
                     "zb-h1, zb-v",
           failure();
  std::optional<pipeline::Placement> where =
      pipeline::parsePlacement(placement.getValue().str());
  if (!where)
    return fail() << "placement '" << placement.getValue()
                  << "' is not one of round-robin, v",
           failure();
  if (microbatches < 1 || costs.forward < 0 || costs.backward < 0 ||
      costs.weight < 0)
    return fail() << "microbatches must be positive and the costs "
                     "non-negative",
           failure();

  pipeline::ScheduleOptions options;
  options.kind = *kind;
  options.ranks = static_cast<int>(stages.getInt());
  options.chunksPerRank = static_cast<int>(chunks.getInt());
  options.placement = *where;
  options.microbatches = static_cast<int>(microbatches);
  options.costs = costs;
  std::string why;
  std::optional<pipeline::Schedule> built =
      pipeline::generateSchedule(options, why);
  if (!built)
    return fail() << why, failure();
  std::optional<pipeline::ScheduleStats> stats =
      pipeline::check(*built, why, options.costs);
  if (!stats)
    return fail() << "the schedule does not check: " << why, failure();
  return ModuleSchedule{std::move(*built), std::move(*stats)};
}
