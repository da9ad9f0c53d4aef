//===- Pools.cpp - the report's pools per stage ---------------------------===//
//
// A program of actions keeps what one function hands to another (F's stash
// for B, a received activation, B's output gradient for a deferred W) in
// pools, one per kind: the report lists each stage's, by the functions that
// touch it, with its slots (the most microbatches it holds at once) and
// the bytes of one slot, as the memory plan laid them out.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/PlanMemory.h"
#include "tpc/Analysis/Report.h"

using namespace mlir;
using namespace mlir::tpc;

LogicalResult mlir::tpc::readPoolFigures(ModuleOp module,
                                         CompileReport &report) {
  auto programs = module.getOps<rt::ProgramOp>();
  if (programs.empty())
    return module.emitError("report: no rt.program to read the pools of");
  rt::ProgramOp program = *programs.begin();
  FailureOr<std::optional<rt::ActionSchedule>> schedule =
      rt::readActionSchedule(program);
  if (failed(schedule))
    return failure();
  auto pools = program->getAttrOfType<ArrayAttr>("pools");
  if (!*schedule || !pools)
    return success();
  // Each pool's stage and the functions whose kernels touch it, in order.
  struct Touched {
    unsigned stage = 0;
    SmallVector<int64_t, 3> functions;
  };
  SmallVector<Touched> touched(pools.size());
  int64_t k = 0;
  for (auto kernel : program.getBody().front().getOps<rt::KernelOp>()) {
    int64_t function = (*schedule)->functionOf[k++];
    for (Value buffer : kernel->getOperands()) {
      auto alloc = buffer.getDefiningOp<rt::AllocOp>();
      std::optional<int64_t> pool = alloc ? alloc.getPool() : std::nullopt;
      if (!pool)
        continue;
      Touched &entry = touched[*pool];
      entry.stage = kernel.getStage().value_or(0);
      if (!llvm::is_contained(entry.functions, function))
        entry.functions.push_back(function);
    }
  }
  for (auto [p, entry] : llvm::enumerate(touched)) {
    if (entry.functions.empty() || entry.stage >= report.stages.size())
      continue;
    auto stride = cast<DictionaryAttr>(pools[p]).getAs<IntegerAttr>("stride");
    StageFigures::Pool pool;
    for (int64_t function : entry.functions)
      pool.functions.push_back(
          (*schedule)->functions[function].name.str());
    pool.slots = (*schedule)->poolSlots[p];
    pool.slotBytes = stride ? stride.getInt() : 0;
    report.stages[entry.stage].pools.push_back(std::move(pool));
  }
  return success();
}
