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
  constexpr int bytes = hopper::Config<D>::kSmemBytes;
  auto *kernel = p.dropout.enabled ? hopper::forwardKernel<T, D, true>
                                   : hopper::forwardKernel<T, D, false>;
  if (Status st = allowSharedMemory(reinterpret_cast<const void *>(kernel),
                                    bytes, "attention");
      !st)
    return st;
  TPCRT_LAUNCH(kernel, grid, hopper::kThreads, bytes, stream, p);
  return launchStatus("attention (wgmma)");
}

template <typename T, int D>
Status launchQueryGrad(const BackwardParams &p, dim3 grid,
                       cudaStream_t stream) {
  constexpr int bytes = hopper::QueryGradConfig<D>::kSmemBytes;
  auto *kernel = hopper::backwardQueryKernel<T, D>;
  if (Status st = allowSharedMemory(reinterpret_cast<const void *>(kernel),
                                    bytes, "attention_grad");
      !st)
    return st;
  TPCRT_LAUNCH(kernel, grid, hopper::kThreads, bytes, stream, p);
  return launchStatus("attention_grad dQ (wgmma)");
}

/// The grid of kBlockM-row blocks over s_q (tileGrid); none when empty.
bool rowGrid(const Shape &s, dim3 &grid) {
  const int64_t tiles = (s.seqQ + hopper::kBlockM - 1) / hopper::kBlockM;
  if (s.batch * s.heads == 0 || tiles == 0)
    return false;
  grid = tileGrid(tiles, s.batch * s.heads);
  return true;
}

} // namespace

Status attn::launchHopperQueryGrad(const BackwardParams &p,
                                   cudaStream_t stream) {
  dim3 grid;
  if (!rowGrid(p.shape, grid))
    return Status::ok();
  const bool bf16 = p.qType == Storage::BF16;
  if (p.shape.headDim == 64)
    return bf16 ? launchQueryGrad<__nv_bfloat16, 64>(p, grid, stream)
                : launchQueryGrad<__half, 64>(p, grid, stream);
  return bf16 ? launchQueryGrad<__nv_bfloat16, 128>(p, grid, stream)
              : launchQueryGrad<__half, 128>(p, grid, stream);
}

Status attn::launchHopperForward(const ForwardParams &p, cudaStream_t stream) {
  dim3 grid;
  if (!rowGrid(p.shape, grid))
    return Status::ok();
  const bool bf16 = p.qType == Storage::BF16;
  if (p.shape.headDim == 64)
    return bf16 ? launch<__nv_bfloat16, 64>(p, grid, stream)
                : launch<__half, 64>(p, grid, stream);
  return bf16 ? launch<__nv_bfloat16, 128>(p, grid, stream)
              : launch<__half, 128>(p, grid, stream);
}
