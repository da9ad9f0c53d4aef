//===- HopperAttention.h - the wgmma attention forward's launch -*- C++ -*-===//
//
// HopperAttention.cu, compiled for sm_90a alone (CMake builds it where the
// backend's architectures include 90; TPCRT_HAVE_SM90A says so), launches
// HopperAttention.cuh's forward. AttentionKernels.cu calls it for the
// tensor-core cases on a device of compute capability 9.0.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_HOPPERATTENTION_H
#define TPCRT_CUDA_HOPPERATTENTION_H

#include "CudaKernels.h"

namespace tpcrt::cuda::attn {

struct ForwardParams;
struct BackwardParams;

/// attention's forward, or attention_grad's statistics pass (p.o null), on
/// wgmma: q, k, v of one 16-bit storage (p.qType), head_dim == value_dim
/// in {64, 128}, 16-byte aligned. A device of compute capability 9.0 only.
Status launchHopperForward(const ForwardParams &p, cudaStream_t stream);

/// attention_grad's dK/dV and dQ on wgmma, from the statistics pass's
/// p.stats; the same conditions.
Status launchHopperBackward(const BackwardParams &p, cudaStream_t stream);

} // namespace tpcrt::cuda::attn

#endif // TPCRT_CUDA_HOPPERATTENTION_H
