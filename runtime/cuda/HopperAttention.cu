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

} // namespace

Status attn::launchHopperForward(const ForwardParams &p, cudaStream_t stream) {
  const Shape &s = p.shape;
  const int64_t tiles = (s.seqQ + hopper::kBlockM - 1) / hopper::kBlockM;
  if (s.batch * s.heads == 0 || tiles == 0)
    return Status::ok();
  dim3 grid = tileGrid(tiles, s.batch * s.heads);
  const bool bf16 = p.qType == Storage::BF16;
  if (s.headDim == 64)
    return bf16 ? launch<__nv_bfloat16, 64>(p, grid, stream)
                : launch<__half, 64>(p, grid, stream);
  return bf16 ? launch<__nv_bfloat16, 128>(p, grid, stream)
              : launch<__half, 128>(p, grid, stream);
}
