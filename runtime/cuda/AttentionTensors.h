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

namespace tpcrt::cuda {

/// attention's leave the gradients null, the forwards leave dO null.
struct AttentionTensors {
  void *dO = nullptr, *q = nullptr, *k = nullptr, *v = nullptr;
  void *o = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

inline AttentionTensors attentionTensors(const KernelCall &call,
                                         const KernelArgs &args) {
  AttentionTensors t;
  const bool grad = call.attentionBackward();
  const size_t first = grad ? 1 : 0;
  if (grad)
    t.dO = args.operands[0];
  if (!call.attentionPackedQkv()) {
    t.q = args.operands[first];
    t.k = args.operands[first + 1];
    t.v = args.operands[first + 2];
    if (grad) {
      t.dq = args.results[0];
      t.dk = args.results[1];
      t.dv = args.results[2];
    } else {
      t.o = args.results[0];
    }
    return t;
  }
  // k and v heads * d elements after q, in the tensor's own dtype (float:
  // f32, bf16, f16; a gradient's may differ from the operand's).
  auto at = [&](void *base, fb::DType dtype, int64_t p) {
    const uint64_t elementBytes = dtype == fb::DType::F32 ? 4 : 2;
    return static_cast<void *>(
        static_cast<char *>(base) +
        static_cast<uint64_t>(qkvPartOffset(p, call.heads, call.headDim)) *
            elementBytes);
  };
  const fb::DType qkv = call.operands[first].dtype;
  t.q = args.operands[first];
  t.k = at(args.operands[first], qkv, 1);
  t.v = at(args.operands[first], qkv, 2);
  if (grad) {
    const fb::DType dqkv = call.results[0].dtype;
    t.dq = args.results[0];
    t.dk = at(args.results[0], dqkv, 1);
    t.dv = at(args.results[0], dqkv, 2);
  } else {
    t.o = args.results[0];
  }
  return t;
}

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_ATTENTIONTENSORS_H
