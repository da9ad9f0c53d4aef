//===- AttentionLaunch.h - the attention kernels' launches ------*- C++ -*-===//
//
// The attention kernels are compiled in translation units of their own, so
// that the build compiles them side by side (each family's instantiations
// take nvcc most of a minute): FlashAttention.cu and FlashAttentionGrad.cu
// the mma.sync kernels (FlashAttention.cuh), GenericAttention.cu the fp32
// FMA ones (GenericAttention.cuh); HopperAttention.h declares the wgmma
// ones.
// AttentionKernels.cu checks a call, sets up its parameters and picks one.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_ATTENTIONLAUNCH_H
#define TPCRT_CUDA_ATTENTIONLAUNCH_H

#include "CudaKernels.h"

namespace tpcrt::cuda::attn {

struct ForwardParams;
struct BackwardParams;

/// attention's forward, or attention_grad's statistics pass (p.o null), on
/// mma.sync over `grid` (flash::ForwardConfig's rows per block): q, k, v of
/// one 16-bit storage (p.qType), head_dim == value_dim in {64, 128}, 16-byte
/// aligned.
Status launchFlashForward(const ForwardParams &p, dim3 grid,
                          cudaStream_t stream);

/// attention_grad's dK/dV and dQ on mma.sync, from p.stats; the same
/// conditions.
Status launchFlashBackward(const BackwardParams &p, cudaStream_t stream);

/// The same on the fp32 FMA kernels, for any storage and dims up to 256
/// (`grid` of generic::kRows rows per block).
Status launchGenericForward(const ForwardParams &p, dim3 grid,
                            cudaStream_t stream);
Status launchGenericBackward(const BackwardParams &p, cudaStream_t stream);

} // namespace tpcrt::cuda::attn

#endif // TPCRT_CUDA_ATTENTIONLAUNCH_H
