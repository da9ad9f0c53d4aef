//===- GenericAttention.cu - the fp32 FMA attention kernels' launches -----===//
//
// GenericAttention.cuh's kernels at accumulator capacities 64, 128 and 256
// (AttentionLaunch.h).
//
//===----------------------------------------------------------------------===//

#include "AttentionLaunch.h"
#include "GenericAttention.cuh"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;
using namespace tpcrt::cuda::attn::generic;

namespace {

template <int Cap>
Status launchForward(const ForwardParams &p, dim3 grid, cudaStream_t stream) {
  return launchWithSharedMemory(
      genericForwardKernel<Cap>, grid, kThreadsGeneric,
      genericForwardSmem(p.shape.headDim, p.shape.valueDim), stream,
      "attention", "attention", p);
}

template <int Cap>
Status launchBackward(const BackwardParams &p, cudaStream_t stream) {
  const Shape &s = p.shape;
  if (s.seqK > 0) {
    dim3 grid = tileGrid((s.seqK + kKeys - 1) / kKeys, s.batch * s.kvHeads);
    if (Status st = launchWithSharedMemory(
            genericKeyValueKernel<Cap>, grid, kThreadsGeneric,
            genericKeyValueSmem(s.headDim, s.valueDim), stream,
            "attention_grad", "attention_grad dK/dV", p);
        !st)
      return st;
  }
  if (s.seqQ > 0 && s.batch * s.heads > 0) {
    dim3 grid = tileGrid((s.seqQ + kRows - 1) / kRows, s.batch * s.heads);
    if (Status st = launchWithSharedMemory(
            genericQueryKernel<Cap>, grid, kThreadsGeneric,
            genericQuerySmem(s.headDim, s.valueDim), stream, "attention_grad",
            "attention_grad dQ", p);
        !st)
      return st;
  }
  return Status::ok();
}

} // namespace

Status attn::launchGenericForward(const ForwardParams &p, dim3 grid,
                                  cudaStream_t stream) {
  switch (capacityFor(p.shape.headDim, p.shape.valueDim)) {
  case 64:
    return launchForward<64>(p, grid, stream);
  case 128:
    return launchForward<128>(p, grid, stream);
  default:
    return launchForward<256>(p, grid, stream);
  }
}

Status attn::launchGenericBackward(const BackwardParams &p,
                                   cudaStream_t stream) {
  switch (capacityFor(p.shape.headDim, p.shape.valueDim)) {
  case 64:
    return launchBackward<64>(p, stream);
  case 128:
    return launchBackward<128>(p, stream);
  default:
    return launchBackward<256>(p, stream);
  }
}
