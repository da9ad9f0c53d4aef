//===- ModuleSchedule.h - the schedule of a split module --------*- C++ -*-===//
//
// The pipeline passes that need a schedule (dist-print-schedule,
// dist-pipeline-stages) build it the same way: the shape from the module's
// `dist.pipeline` (dist-pipeline-split), the kind and microbatches from their
// options, generated and statically checked by PipelineSchedule.h.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_DIST_TRANSFORMS_MODULESCHEDULE_H
#define DIALECTS_DIST_TRANSFORMS_MODULESCHEDULE_H

#include "dialects/Dist/Transforms/PipelineSchedule.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dist {

/// A checked schedule and its statistics.
struct ModuleSchedule {
  pipeline::Schedule schedule;
  pipeline::ScheduleStats stats;
};

/// Builds and checks the `kind` schedule of the split `module` for
/// `microbatches` under `costs`; on failure emits an error on `module`
/// starting with `pass` ("dist-print-schedule: ...") and returns failure.
FailureOr<ModuleSchedule> buildModuleSchedule(ModuleOp module, StringRef pass,
                                              StringRef kind,
                                              int64_t microbatches,
                                              pipeline::Costs costs = {});

} // namespace mlir::dist

#endif // DIALECTS_DIST_TRANSFORMS_MODULESCHEDULE_H
