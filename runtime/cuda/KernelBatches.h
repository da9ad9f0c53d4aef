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

/// The runs of two or more consecutive kernels (in the rank's list) that
/// `isMember` takes and `continues(run, call)` lets `call` join, each the
/// kernel indices of its members in order.
template <typename IsMember, typename Continues>
std::vector<std::vector<uint32_t>>
planRuns(const Program &program, IsMember isMember, Continues continues) {
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
    if (!isMember(call)) {
      close();
      continue;
    }
    if (!run.empty() &&
        (run.back()->index + 1 != call.index || !continues(run, call)))
      close();
    run.push_back(&call);
  }
  close();
  return batches;
}

/// The cast batches of the rank's kernel list, each the kernel indices of
/// its members in order.
inline std::vector<std::vector<uint32_t>>
planCastBatches(const Program &program) {
  return planRuns(
      program, isCastBatchKernel,
      [&](const std::vector<const KernelCall *> &run, const KernelCall &call) {
        return fusion::inOneFunction(program, *run.back(), call) &&
               independentOf(call, run);
      });
}

/// Whether adamw_update `b` reads the scalars (lr, step, grad_scale) `a`
/// reads and has its attributes: the two may share a launch.
inline bool sameOptimizerScalars(const KernelCall &a, const KernelCall &b) {
  if (a.operands.size() != b.operands.size() || a.floatAttrs != b.floatAttrs)
    return false;
  for (size_t j = 4; j < a.operands.size(); ++j)
    if (a.operands[j].buffer != b.operands[j].buffer)
      return false;
  return true;
}

/// The optimizer batches of the rank's kernel list: runs of two or more
/// consecutive adamw_update kernels (by kernel index) that read the same
/// scalars and have the same attributes, none pooled; each the kernel
/// indices of its members in order. The CUDA device launches each as one
/// multi-tensor update (adamwUpdateMany).
inline std::vector<std::vector<uint32_t>>
planOptimizerBatches(const Program &program) {
  return planRuns(
      program,
      [](const KernelCall &call) {
        return call.op == fb::OpCode::AdamWUpdate && !call.pooled;
      },
      [](const std::vector<const KernelCall *> &run, const KernelCall &call) {
        return sameOptimizerScalars(*run.front(), call);
      });
}

/// The blocks of sum_squares' first pass over each operand: its partial
/// sums, kSquaresPartialBlocks doubles an operand, which its second pass
/// adds (OptimizerKernels.cu; an optimizer batch that sums the squares
/// writes the same partials).
constexpr unsigned kSquaresPartialBlocks = 128;

/// A sum_squares whose squares an optimizer batch sums in its own pass over
/// the gradients (the gradients' norm, when it only reports them: without
/// clipping tpc-optimizer puts it after the updates).
struct SquaresInUpdates {
  /// The sum_squares' kernel index.
  uint32_t squares = 0;
  /// For each member of the batch, the sum_squares operand that is its
  /// gradient, or -1.
  std::vector<int32_t> operandOfMember;
};

/// Whether the kernel right after the optimizer batch `members` (kernel
/// indices, in order) is a sum_squares that the batch's launch can sum:
/// in the same function, every operand a float32 gradient (operand 1) of a
/// member, each at most once, none pooled. The batch then writes the
/// sum_squares' per-operand partial sums, and the sum_squares only adds
/// them (its values bit for bit: the same partials).
inline bool squaresAfterBatch(const Program &program,
                              const std::vector<uint32_t> &members,
                              SquaresInUpdates &out) {
  if (members.empty())
    return false;
  size_t last = program.calls.size();
  for (size_t p = 0; p < program.calls.size(); ++p)
    if (program.calls[p].index == members.back())
      last = p;
  if (last + 1 >= program.calls.size())
    return false;
  const KernelCall &update = program.calls[last];
  const KernelCall &squares = program.calls[last + 1];
  if (squares.op != fb::OpCode::SumSquares || squares.pooled ||
      squares.results.size() != 1 || squares.operands.empty() ||
      !fusion::inOneFunction(program, update, squares))
    return false;
  std::vector<const KernelCall *> byIndex;
  for (const KernelCall &call : program.calls) {
    if (byIndex.size() <= call.index)
      byIndex.resize(call.index + 1, nullptr);
    byIndex[call.index] = &call;
  }
  out.squares = squares.index;
  out.operandOfMember.assign(members.size(), -1);
  for (size_t j = 0; j < squares.operands.size(); ++j) {
    const TensorRef &g = squares.operands[j];
    if (g.dtype != fb::DType::F32 || g.pool >= 0)
      return false;
    bool found = false;
    for (size_t m = 0; m < members.size() && !found; ++m) {
      const KernelCall *member = byIndex[members[m]];
      if (member->operands.size() < 2 ||
          member->operands[1].buffer != g.buffer ||
          member->operands[1].elements != g.elements)
        continue;
      if (out.operandOfMember[m] >= 0)
        return false;
      out.operandOfMember[m] = static_cast<int32_t>(j);
      found = true;
    }
    if (!found)
      return false;
  }
  return true;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_KERNELBATCHES_H
