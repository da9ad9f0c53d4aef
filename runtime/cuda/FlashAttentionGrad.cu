//===- FlashAttentionGrad.cu - the mma.sync attention backward's launch ---===//
//
// FlashAttention.cuh's dK/dV and dQ kernels for bf16 and f16 at head dims 64
// and 128 (AttentionLaunch.h).
//
//===----------------------------------------------------------------------===//

#include "AttentionLaunch.h"
#include "FlashAttention.cuh"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;

namespace {

template <typename T, int D>
Status launchBackward(const BackwardParams &p, cudaStream_t stream) {
  using Cfg = flash::BackwardConfig<D>;
  const Shape &s = p.shape;
  if (s.seqK > 0) {
    dim3 grid =
        tileGrid((s.seqK + Cfg::kKeys - 1) / Cfg::kKeys, s.batch * s.kvHeads);
    if (Status st = launchWithSharedMemory(
            flash::backwardKeyValueKernel<T, D>, grid, flash::kThreads,
            Cfg::kKeyValueSmemBytes, stream, "attention_grad",
            "attention_grad dK/dV (tensor cores)", p);
        !st)
      return st;
  }
  if (s.seqQ > 0 && s.batch * s.heads > 0) {
    dim3 grid =
        tileGrid((s.seqQ + Cfg::kRows - 1) / Cfg::kRows, s.batch * s.heads);
    if (Status st = launchWithSharedMemory(
            flash::backwardQueryKernel<T, D>, grid, flash::kThreads,
            Cfg::kQuerySmemBytes, stream, "attention_grad",
            "attention_grad dQ (tensor cores)", p);
        !st)
      return st;
  }
  return Status::ok();
}

} // namespace

Status attn::launchFlashBackward(const BackwardParams &p, cudaStream_t stream) {
  return flash::forTensorCoreCase(p.qType, p.shape.headDim, [&](auto c) {
    using C = decltype(c);
    return launchBackward<typename C::Type, C::kHeadDim>(p, stream);
  });
}
