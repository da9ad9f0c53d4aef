//===- HopperAttention.cu - the sm_90a attention forward's launch ---------===//
//
// Compiled for sm_90a alone (runtime/CMakeLists.txt): the kernel exists only
// as sm_90a code, so a device of another capability never picks it up.
//
//===----------------------------------------------------------------------===//

#include "HopperAttention.cuh"
#include "HopperAttention.h"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;

namespace {

template <typename T, int D>
Status launch(const ForwardParams &p, dim3 grid, cudaStream_t stream) {
  auto *kernel = p.dropout.enabled ? hopper::forwardKernel<T, D, true>
                                   : hopper::forwardKernel<T, D, false>;
  return launchWithSharedMemory(kernel, grid, hopper::kThreads,
                                hopper::Config<D>::kSmemBytes, stream,
                                "attention", "attention (wgmma)", p);
}

template <typename Kernel>
Status launchGrad(Kernel *kernel, const BackwardParams &p, dim3 grid, int bytes,
                  const char *name, cudaStream_t stream) {
  return launchWithSharedMemory(kernel, grid, hopper::kThreads, bytes, stream,
                                "attention_grad", name, p);
}

/// The grid of kBlockM-row blocks over s_q (tileGrid); none when empty.
bool rowGrid(const Shape &s, dim3 &grid) {
  const int64_t tiles = (s.seqQ + hopper::kBlockM - 1) / hopper::kBlockM;
  if (s.batch * s.heads == 0 || tiles == 0)
    return false;
  grid = tileGrid(tiles, s.batch * s.heads);
  return true;
}

/// dK/dV (blocks of 128 keys per kv head), then dQ.
template <typename T, int D>
Status launchBackward(const BackwardParams &p, cudaStream_t stream) {
  const Shape &s = p.shape;
  if (s.seqK > 0) {
    using Cfg = hopper::KeyValueGradConfig<D>;
    dim3 grid = tileGrid((s.seqK + Cfg::kBlockKeys - 1) / Cfg::kBlockKeys,
                         s.batch * s.kvHeads);
    if (Status st =
            launchGrad(hopper::backwardKeyValueKernel<T, D>, p, grid,
                       Cfg::kSmemBytes, "attention_grad dK/dV (wgmma)", stream);
        !st)
      return st;
  }
  dim3 grid;
  if (!rowGrid(s, grid))
    return Status::ok();
  return launchGrad(hopper::backwardQueryKernel<T, D>, p, grid,
                    hopper::QueryGradConfig<D>::kSmemBytes,
                    "attention_grad dQ (wgmma)", stream);
}

} // namespace

Status attn::launchHopperBackward(const BackwardParams &p,
                                  cudaStream_t stream) {
  return flash::forTensorCoreCase(p.qType, p.shape.headDim, [&](auto c) {
    using C = decltype(c);
    return launchBackward<typename C::Type, C::kHeadDim>(p, stream);
  });
}

Status attn::launchHopperForward(const ForwardParams &p, cudaStream_t stream) {
  dim3 grid;
  if (!rowGrid(p.shape, grid))
    return Status::ok();
  return flash::forTensorCoreCase(p.qType, p.shape.headDim, [&](auto c) {
    using C = decltype(c);
    return launch<typename C::Type, C::kHeadDim>(p, grid, stream);
  });
}
