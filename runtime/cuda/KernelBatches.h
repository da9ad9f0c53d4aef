//===- KernelBatches.h - runs of casts and zeros as one launch -*- C++ -*-===//
//
// A mixed-precision training step starts with a cast of every parameter to
// the model's precision (12 per GPT-2 layer), and with microbatches a zeroed
// sum for every gradient: hundreds of small kernels in a row, each a launch
// (about 100 casts and 1.3 ms of the MFU model's 87 ms step, priced on
// h200). The CUDA device runs such a run as one multi-tensor launch over a
// list of (input, output, count, storage types) written once at prepare
// (castMany), as it runs a run of adamw_updates; BatchDeferral.h defers the
// members and launches them together. The executable is unchanged.
//
// A batch is two or more consecutive kernels (in the rank's list and, with
// actions, of one function) each a `cast` between two different float
// storage types or a `zeros` of a float tensor, none pooled (the list holds
// fixed addresses), and independent: no member's result shares bytes with
// another member's operand or result (they run at once). A member's values
// are its own kernel's bit for bit (a cast rounds to nearest even on the
// store, a zero is +0). The compiler's replay prices a batch as one launch
// of its bytes (rt::planCudaDevice asks the same function). Plain C++
// (runtime/test/FusionPlanTest.cpp checks the batches without a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_KERNELBATCHES_H
#define TPCRT_CUDA_KERNELBATCHES_H

#include "FusionPlan.h"

#include <cstdint>
#include <vector>

namespace tpcrt::cuda {

/// Whether `call` may be a member of a cast batch on its own terms: a cast
/// between two different float storage types, or a zeros of a float tensor,
/// not pooled.
inline bool isCastBatchKernel(const KernelCall &call) {
  if (call.pooled || call.results.size() != 1 ||
      !fusion::isFloat(call.results[0].dtype))
    return false;
  if (call.op == fb::OpCode::Zeros)
    return call.operands.empty();
  return call.op == fb::OpCode::Cast && call.operands.size() == 1 &&
         fusion::isFloat(call.operands[0].dtype) &&
         call.operands[0].dtype != call.results[0].dtype;
}

/// Whether `call` may run at once with every call of `batch`: no result
/// shares bytes with another's operand or result.
inline bool independentOf(const KernelCall &call,
                          const std::vector<const KernelCall *> &batch) {
  for (const KernelCall *member : batch) {
    if (fusion::meetsAnOperand(call.results[0], *member) ||
        fusion::spansMeet(call.results[0], member->results[0]))
      return false;
    for (const TensorRef &operand : call.operands)
      if (fusion::spansMeet(operand, member->results[0]))
        return false;
  }
  return true;
}

/// The cast batches of the rank's kernel list, each the kernel indices of
/// its members in order.
inline std::vector<std::vector<uint32_t>>
planCastBatches(const Program &program) {
  std::vector<std::vector<uint32_t>> batches;
  std::vector<const KernelCall *> run;
  auto close = [&] {
    if (run.size() >= 2) {
      std::vector<uint32_t> members;
      for (const KernelCall *call : run)
        members.push_back(call->index);
      batches.push_back(std::move(members));
    }
    run.clear();
  };
  for (const KernelCall &call : program.calls) {
    if (!isCastBatchKernel(call)) {
      close();
      continue;
    }
    const KernelCall *previous = run.empty() ? nullptr : run.back();
    if (!previous || previous->index + 1 != call.index ||
        !fusion::inOneFunction(program, *previous, call) ||
        !independentOf(call, run))
      close();
    run.push_back(&call);
  }
  close();
  return batches;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_KERNELBATCHES_H
