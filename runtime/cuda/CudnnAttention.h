//===- CudnnAttention.h - attention through cuDNN's fused SDPA --*- C++ -*-===//
//
// The CUDA device runs the attention and attention_grad kernels that
// cuDNN's fused flash attention can take
// (cudnnAttentionRefusal: bf16 or f16, no attention dropout — cuDNN's
// dropout cannot draw the runtime's counter-based stream —, head_dim ==
// value_dim, a multiple of 8 up to 128, causal only with s_q == s_k) through
// the graphs of CudnnGraph.h, where it measured faster than the own
// kernels (AttentionRace.h) or TPCRT_CUDA_ATTENTION=cudnn asks; every other
// call runs the device's own kernels (docs/runtime/cuda.md).
//
// At prepare each such call gets its plan (cached by shape: the graph, the
// engine heuristics' first configuration that builds, its workspace), and
// the scratch it needs from the device's scratch region:
//   attention:      Stats (unless attention_lse's result holds them) |
//                   workspace
//   attention_grad: O and Stats (unless given) | rowsum(dO * O) | workspace
// An attention_grad given the forward's O and log-sum-exps (what
// tpc-autodiff emits) runs the backward on them; one given only dO, q, k
// and v runs the forward first (O and Stats into its scratch). The backward
// is the deterministic form (dQ is not accumulated across blocks). A run
// builds a variant pack
// only when its addresses differ from the call's last run (a pooled
// buffer's slot): nothing is allocated in the steady state.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_CUDNNATTENTION_H
#define TPCRT_CUDA_CUDNNATTENTION_H

#include "CudaKernels.h"
#include "CudnnEligibility.h"
#include "CudnnGraph.h"

#include <memory>
#include <string>

namespace tpcrt::cuda {

/// The graphs' description of `call` (an attention kernel cuDNN takes).
cudnn::SdpaShape sdpaShapeOf(const KernelCall &call);

/// Why cuDNN `version` (cudnnGetVersion's code) cannot run `call` (taken by
/// cudnnAttentionRefusal) correctly, as cudnn-frontend knows: 9.10.0 and
/// 9.10.1 (bugs in the fused attention), and the backward before 9.15.1
/// with s_k not a multiple of 128 (out-of-bounds accesses; cudnn-frontend
/// adds a padding mask there, this device runs its own kernels). Empty when
/// it can.
std::string cudnnVersionRefusal(const KernelCall &call, size_t version);

class CudnnAttention {
public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// Loads cuDNN (CudnnLibrary.h) and makes a handle for the current
  /// device on `stream`. An error says why (no library, no device).
  Status init(cudaStream_t stream);

  /// Plans `call` (cudnnAttentionRefusal empty): its plans, made or found
  /// in the cache, and the scratch its runs need. An error (no engine for
  /// the graph) leaves the call to the device's own kernels.
  Status plan(const KernelCall &call, uint64_t &scratchBytes);

  /// Enqueues `call` on the handle's stream. `taken` is false when plan()
  /// did not take it or an address is not 16-byte aligned (the own kernels
  /// run it then).
  Status run(const KernelCall &call, const KernelArgs &args, bool &taken);

  /// Distinct plans made (calls of one shape share one).
  size_t planCount() const;

  /// The plan that `call` runs with (calls of one shape share it), null
  /// where plan() did not take it.
  const void *planOf(const KernelCall &call) const;

  /// Leaves `call` to the own kernels from now on (run() does not take it).
  void release(const KernelCall &call);

  /// Drops every plan and pack and destroys the handle, while the stream
  /// it was given still exists (the device calls it before destroying its
  /// streams). Nothing is planned afterwards.
  void shutdown();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_CUDNNATTENTION_H
