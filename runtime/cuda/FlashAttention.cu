//===- FlashAttention.cu - the mma.sync attention forward's launch --------===//
//
// FlashAttention.cuh's forward (and statistics pass) for bf16 and f16 at
// head dims 64 and 128 (AttentionLaunch.h); the backward's kernels are
// FlashAttentionGrad.cu's, compiled beside.
//
//===----------------------------------------------------------------------===//

#include "AttentionLaunch.h"
#include "FlashAttention.cuh"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;

namespace {

template <typename T, int D>
Status launchForward(const ForwardParams &p, dim3 grid, cudaStream_t stream) {
  auto *kernel = p.dropout.enabled ? flash::forwardKernel<T, D, true>
                                   : flash::forwardKernel<T, D, false>;
  return launchWithSharedMemory(kernel, grid, flash::kThreads,
                                flash::ForwardConfig<D>::kSmemBytes, stream,
                                "attention", "attention (tensor cores)", p);
}

} // namespace

Status attn::launchFlashForward(const ForwardParams &p, dim3 grid,
                                cudaStream_t stream) {
  return flash::forTensorCoreCase(p.qType, p.shape.headDim, [&](auto c) {
    using C = decltype(c);
    return launchForward<typename C::Type, C::kHeadDim>(p, grid, stream);
  });
}
