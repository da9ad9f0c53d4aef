//===- AttentionTensors.h - an attention kernel's tensors ------*- C++ -*-===//
//
// The device addresses of q, k, v, the result, dO and the gradients of one
// run of an attention kernel, for the own kernels and cuDNN's graphs alike:
// attention_qkv(_grad)'s q, k and v (and gradients) are the parts of its qkv
// operand (result), [b, s, 3, heads, d] (tpcrt/AttentionRows.h). Host code
// only; header-only so that the cuDNN tests, built without the kernels, use
// it too.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_ATTENTIONTENSORS_H
#define TPCRT_CUDA_ATTENTIONTENSORS_H

#include "CudaKernels.h"
#include "tpcrt/AttentionRows.h"

#include <cstdint>

namespace tpcrt::cuda {

/// One tensor: its address (null: the kernel has none) and storage type.
struct AttentionTensor {
  void *at = nullptr;
  fb::DType dtype = fb::DType::F32;
};

/// attention's leave the gradients null, the forwards leave dO null. `o` is
/// a forward's result, or the forward's result a backward reads
/// (attention_grad's output operand); `lse` the rows' log-sum-exps a
/// forward writes (attention_lse) or a backward reads, f32, null where the
/// kernel has none.
struct AttentionTensors {
  AttentionTensor dO, q, k, v, o, dq, dk, dv, lse;

  /// Whether every tensor starts 16-byte aligned (a packed part's too), as
  /// the tensor-core kernels' and cuDNN's vector accesses need.
  bool aligned16() const {
    for (const AttentionTensor &x : {dO, q, k, v, o, dq, dk, dv})
      if (reinterpret_cast<uintptr_t>(x.at) % 16 != 0)
        return false;
    return true;
  }
};

inline AttentionTensors attentionTensors(const KernelCall &call,
                                         const KernelArgs &args) {
  auto operand = [&](size_t j) {
    return AttentionTensor{args.operands[j], call.operands[j].dtype};
  };
  auto result = [&](size_t j) {
    return AttentionTensor{args.results[j], call.results[j].dtype};
  };
  // Part p of a packed tensor: heads * d elements of its own type (float:
  // f32, bf16, f16) after part p - 1.
  auto part = [&](AttentionTensor whole, int64_t p) {
    const uint64_t elementBytes = whole.dtype == fb::DType::F32 ? 4 : 2;
    whole.at =
        static_cast<char *>(whole.at) +
        static_cast<uint64_t>(qkvPartOffset(p, call.heads, call.headDim)) *
            elementBytes;
    return whole;
  };
  AttentionTensors t;
  const bool grad = call.attentionBackward();
  const size_t first = grad ? 1 : 0;
  if (grad)
    t.dO = operand(0);
  if (call.attentionReadsLse()) {
    t.o = operand(call.operands.size() - 2);
    t.lse = operand(call.operands.size() - 1);
  }
  if (call.attentionWritesLse())
    t.lse = result(1);
  if (call.attentionPackedQkv()) {
    t.q = operand(first);
    t.k = part(t.q, 1);
    t.v = part(t.q, 2);
    if (grad) {
      t.dq = result(0);
      t.dk = part(t.dq, 1);
      t.dv = part(t.dq, 2);
    } else {
      t.o = result(0);
    }
    return t;
  }
  t.q = operand(first);
  t.k = operand(first + 1);
  t.v = operand(first + 2);
  if (grad) {
    t.dq = result(0);
    t.dk = result(1);
    t.dv = result(2);
  } else {
    t.o = result(0);
  }
  return t;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_ATTENTIONTENSORS_H
