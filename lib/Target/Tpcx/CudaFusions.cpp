//===- CudaFusions.cpp - the CUDA device's fusions of a lowered plan ------===//
//
// The kernel groups the CUDA device runs as one (runtime/cuda/FusionPlan.h)
// are its own plan, made at load time from the decoded executable, and the
// attention calls cuDNN can take its own rule (CudnnEligibility.h). For the
// prediction to price what runs, the same rules are asked: the module is
// serialized as tpc-compile writes it, decoded and placed as the loader
// does (one rank of each pipeline stage), and the device's plan read back
// as groups of kernel indices, the candidates it refuses with its reasons,
// and the attention backwards cuDNN refuses.
//
//===----------------------------------------------------------------------===//

#include "tpc/Target/Tpcx.h"

#include "tpc/Analysis/PlanModel.h"

#include "runtime/cuda/CudnnEligibility.h"
#include "runtime/cuda/FusionPlan.h"
#include "runtime/cuda/KernelBatches.h"
#include "tpcx_generated.h"

#include <set>

using namespace mlir;

static_assert(tpc::kCudaSquaresPartialBlocks ==
                  tpcrt::cuda::kSquaresPartialBlocks,
              "the prediction prices the sum_squares partials the CUDA "
              "device's optimizer batches write");
static_assert(tpc::kCudaNormBackwardMostColumns ==
                  tpcrt::cuda::kNormBackwardMostColumns,
              "tpc-plan's closed form prices the norm backward groups the "
              "CUDA device forms");

FailureOr<tpc::DevicePlan> mlir::rt::planCudaDevice(ModuleOp module) {
  std::vector<uint8_t> payload;
  if (failed(serializeTpcx(module, payload)))
    return failure();
  const tpcrt::fb::Executable &root = *tpcrt::fb::GetExecutable(payload.data());
  tpcrt::Program program;
  if (tpcrt::Status s = tpcrt::decodeProgram(root, program); !s)
    return module.emitError("the executable does not decode: ") << s.message();
  using tpcrt::cuda::FusionRole;
  tpc::DevicePlan device;
  std::vector<tpc::FusedGroup> &groups = device.groups;
  // One rank of each stage: its kernels are the stage's.
  std::set<uint32_t> planned;
  int64_t world = program.mesh.worldSize();
  for (int64_t rank = 0;
       rank < world && planned.size() < static_cast<size_t>(program.numStages);
       ++rank) {
    if (tpcrt::Status s = tpcrt::placeProgram(program, rank); !s)
      return module.emitError("rank ")
             << rank << " cannot be placed: " << s.message();
    if (!planned.insert(program.stage).second)
      continue;
    std::vector<tpcrt::cuda::FusionStep> plan =
        tpcrt::cuda::planFusions(program, &device.refusals);
    for (const std::vector<uint32_t> &batch :
         tpcrt::cuda::planCastBatches(program))
      device.batches.push_back(
          {std::vector<int64_t>(batch.begin(), batch.end()), false});
    for (const std::vector<uint32_t> &batch :
         tpcrt::cuda::planOptimizerBatches(program)) {
      tpcrt::cuda::SquaresInUpdates squares;
      if (tpcrt::cuda::squaresAfterBatch(program, batch, squares))
        device.squaresInUpdates.push_back(squares.squares);
    }
    for (const tpcrt::KernelCall &call : program.calls)
      if ((call.attentionForward() || call.attentionBackward()) &&
          !tpcrt::cuda::cudnnAttentionRefusal(call).empty())
        device.ownAttention.push_back(call.index);
    // A group is a head and the calls after it in the rank's list, up to
    // its tail.
    for (size_t p = 0; p < program.calls.size(); ++p) {
      const tpcrt::KernelCall &call = program.calls[p];
      if (call.index >= plan.size() ||
          plan[call.index].role != FusionRole::Head)
        continue;
      tpc::FusedGroup group;
      group.headWritten =
          call.op == tpcrt::fb::OpCode::Linear && plan[call.index].writesHead;
      group.kernels.push_back(call.index);
      for (size_t q = p + 1; q < program.calls.size(); ++q) {
        uint32_t index = program.calls[q].index;
        group.kernels.push_back(index);
        if (index >= plan.size() || plan[index].role != FusionRole::Link)
          break;
      }
      groups.push_back(std::move(group));
    }
  }
  return device;
}

LogicalResult mlir::rt::predictStepOnDevice(ModuleOp module,
                                            const tpc::Hardware &hw,
                                            tpc::CompileReport &report) {
  tpc::DevicePlan device;
  if (hw.runtimeDevice == "cuda") {
    FailureOr<tpc::DevicePlan> planned = planCudaDevice(module);
    if (failed(planned))
      return failure();
    device = std::move(*planned);
  }
  return tpc::predictStep(module, hw, report, device);
}
