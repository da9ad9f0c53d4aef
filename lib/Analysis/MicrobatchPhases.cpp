//===- MicrobatchPhases.cpp - when the values of a step are computed ------===//

#include "MicrobatchPhases.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/IR/TpcInterfaces.h"

using namespace mlir;
using namespace mlir::tpc;

/// Ops tpc-autodiff's driver and tpc-optimizer place outside the microbatch
/// loop; the inputs of each are totals over the step.
static bool isDriverOp(Operation *op) {
  return isa<LossMeanOp, CountTargetsOp, InverseCountOp, SumSquaresOp,
             ClipCoefficientOp, LrScheduleOp, AdamWUpdateOp, SgdUpdateOp,
             func::ReturnOp>(op);
}

MicrobatchPhases::MicrobatchPhases(func::FuncOp function) {
  for (BlockArgument arg : function.getArguments())
    if (function.getArgAttr(arg.getArgNumber(), kInputAttrName))
      values[arg] = Phase::Microbatch;
  function.walk([&](Operation *op) {
    Phase phase = Phase::Invariant;
    if (isDriverOp(op)) {
      phase = Phase::Step;
    } else if (isa<TpcDropoutDrawOpInterface>(op)) {
      // It draws its microbatch's block of the stream: after unrolling, the
      // block is a constant, which differs between the microbatches.
      phase = Phase::Microbatch;
    } else {
      for (Value operand : op->getOperands())
        phase = std::max(phase, values.lookup(operand));
    }
    ops[op] = phase;
    for (Value result : op->getResults())
      values[result] = phase;
  });
}

bool mlir::tpc::isCollective(Operation *op) {
  return isa<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
             dist::ShardSliceOp, dist::ShardPadOp, dist::AllToAllOp,
             dist::BroadcastOp, dist::SendOp, dist::RecvOp>(op);
}

int64_t mlir::tpc::byteSize(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() * ((tensor.getElementTypeBitWidth() + 7) / 8);
}
