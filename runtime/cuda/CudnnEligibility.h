//===- CudnnEligibility.h - which attention calls cuDNN can take -*- C++
//-*-===//
//
// Why cuDNN's fused attention cannot run a call: the device's own rule
// (CudnnAttention.cpp plans only the calls it accepts), plain C++ over the
// decoded call so that tpc-compile's prediction asks the same rule
// (lib/Target/Tpcx/CudaFusions.cpp): an attention_grad cuDNN refuses runs
// the device's own backward, whose products the prediction charges.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_CUDNNELIGIBILITY_H
#define TPCRT_CUDA_CUDNNELIGIBILITY_H

#include "tpcrt/Program.h"

#include <string>

namespace tpcrt::cuda {

/// Why cuDNN's fused attention cannot run `call` (empty when it can): not
/// an attention kernel, a dropout, types, dims.
inline std::string cudnnAttentionRefusal(const KernelCall &call) {
  const bool grad = call.attentionBackward();
  if (!call.attentionForward() && !grad)
    return "not an attention kernel";
  if (call.dropoutRate != 0.0)
    return "attention dropout (cuDNN's dropout cannot draw the runtime's "
           "stream)";
  const fb::DType type =
      call.operands.empty() ? fb::DType::F32 : call.operands[0].dtype;
  if (type != fb::DType::BF16 && type != fb::DType::F16)
    return "fp32 tensors (cuDNN's fused attention is bf16 and f16)";
  // The log-sum-exps (attention_lse's result 1, a backward's last operand)
  // are f32: cuDNN's Stats.
  const size_t operands =
      call.operands.size() - (call.attentionReadsLse() ? 1 : 0);
  const size_t results = call.attentionWritesLse() ? 1 : call.results.size();
  for (size_t i = 0; i < operands; ++i)
    if (call.operands[i].dtype != type)
      return "operands of different types";
  for (size_t i = 0; i < results; ++i)
    if (call.results[i].dtype != type)
      return "results of another type than the operands";
  if (call.headDim != call.valueDim)
    return "head_dim " + std::to_string(call.headDim) + " != value_dim " +
           std::to_string(call.valueDim);
  if (call.headDim % 8 != 0 || call.headDim > 128)
    return "head_dim " + std::to_string(call.headDim) +
           " (a multiple of 8 up to 128 is planned)";
  if (call.kvHeads <= 0 || call.heads % call.kvHeads != 0)
    return "heads not a multiple of kv heads";
  if ((call.flags & 1) && call.seqQ != call.seqK)
    return "causal with s_q " + std::to_string(call.seqQ) + " != s_k " +
           std::to_string(call.seqK) +
           " (cuDNN's mask is aligned top-left, the kernels' bottom-right)";
  if (call.batch * call.heads * call.seqQ * call.seqK == 0)
    return "an empty attention";
  if (grad && call.seqQ == 1 && call.seqK == 1)
    return "s_q = s_k = 1 (cuDNN's backward refuses it)";
  return "";
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_CUDNNELIGIBILITY_H
