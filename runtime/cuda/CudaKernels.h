//===- CudaKernels.h - the CUDA device's kernel families --------*- C++ -*-===//
//
// The CUDA device (CudaDevice.cpp) resolves each KernelCall's buffers to
// device addresses for the run (a pooled buffer's slot chosen) and hands the
// call to the family that runs its opcode. A family is one .cu file (or a
// few): which opcodes it runs, how much scratch a call needs (sized once, at
// prepare, inside the device's one allocation), and the run, which enqueues
// on `stream` and returns at once (never synchronizes, allocates nothing).
//
// Tensors are read and written in their own storage (f32, bf16, f16; i64
// ids, labels and counts; u8 masks): a kernel computes in fp32 whatever the
// storage, as the CPU device does around its fp32 kernels, so both devices
// round the same values once on store.
//
// Families:
//   pointwise   elementwise, broadcast, dropout, masks, rotary, casts and
//               copies, layout (transpose, slice, repeat, pad, sum_groups,
//               sum_to), zeros                       (PointwiseKernels.cu)
//   reduction   norms and their grads, embedding(_grad), cross_entropy(_grad)
//               without a vocabulary split, loss_mean, counts, optimizers,
//               sum_squares, clip_coefficient, lr_schedule
//                                                    (ReductionKernels.cu)
//   attention   attention(_grad), attention_qkv(_grad) (flash-style: never
//               the s x s matrix), softmax(_grad)    (AttentionKernels.cu)
//   gemm        linear, linear_input_grad, linear_weight_grad,
//               batch_matmul through cuBLASLt        (Gemm.h, Gemm.cpp)
// The device itself runs the collectives, the transfers and the
// vocabulary-split cross_entropy(_grad) (their reductions need NCCL between
// its phases: ReductionKernels.cu provides the phases).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_CUDAKERNELS_H
#define TPCRT_CUDA_CUDAKERNELS_H

#include "tpcrt/Device.h"
#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tpcrt::cuda {

/// How a tensor's elements are stored.
enum class Storage : uint8_t { F32, BF16, F16, I64, U8 };

inline Storage storageOf(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::BF16:
    return Storage::BF16;
  case fb::DType::F16:
    return Storage::F16;
  case fb::DType::I64:
    return Storage::I64;
  case fb::DType::U8:
    return Storage::U8;
  default:
    return Storage::F32;
  }
}

/// Scratch is handed out in 256-byte aligned pieces.
constexpr uint64_t kScratchAlignment = 256;
inline uint64_t alignScratch(uint64_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment *
         kScratchAlignment;
}

/// What one run of a kernel gets: its buffers' device addresses for this
/// run (operands and results in the call's order), its scratch
/// (`scratchBytes` of them, as the family's *ScratchBytes asked; null when
/// 0), the step's context (seed, step, microbatch, evaluation) and the
/// stream to enqueue on.
struct KernelArgs {
  void *const *operands = nullptr;
  void *const *results = nullptr;
  void *scratch = nullptr;
  uint64_t scratchBytes = 0;
  const StepContext *context = nullptr;
  cudaStream_t stream = nullptr;
};

/// A Status for the last launch: cudaGetLastError, named.
Status launchStatus(const char *kernel);

/// Dynamic shared memory above the 48 KiB default needs an opt-in per
/// kernel (and device); cheap, so done before every launch. `name` names
/// the kernel in the error.
Status allowSharedMemory(const void *kernel, size_t bytes, const char *name);

// Pointwise (PointwiseKernels.cu).
bool isPointwiseKernel(fb::OpCode op);
uint64_t pointwiseScratchBytes(const KernelCall &call);
Status runPointwiseKernel(const KernelCall &call, const KernelArgs &args);

// Layout (LayoutKernels.cu): transpose, slice, repeat, pad, sum_groups,
// sum_to; run through the pointwise family.
bool isLayoutKernel(fb::OpCode op);
uint64_t layoutScratchBytes(const KernelCall &call);
Status runLayoutKernel(const KernelCall &call, const KernelArgs &args);

// Reductions (ReductionKernels.cu).
bool isReductionKernel(fb::OpCode op);
uint64_t reductionScratchBytes(const KernelCall &call);
Status runReductionKernel(const KernelCall &call, const KernelArgs &args);
/// cross_entropy and its gradient (the same logits and labels, a whole
/// vocabulary) in one pass over the logits' rows (FusionPlan.h); the
/// loss's results whose bit `unwritten` sets are not written.
Status runCrossEntropyWithGrad(const KernelCall &loss, const KernelCall &grad,
                               const KernelArgs &lossArgs,
                               const KernelArgs &gradArgs, uint8_t unwritten);
/// A norm's fused backward group (FusionPlan.h), each member with its
/// run's addresses: `paramGrad` (null: none; its scratch is its own,
/// reductionScratchBytes) and `inputGrad` (the same dY and x) in one pass,
/// `add` (null: none) the residual add of the input gradient (dX then never
/// written), `mask` (null: none) the apply_mask of the group's result (the
/// add's, else dX).
struct NormGroup {
  const KernelCall *paramGrad = nullptr, *inputGrad = nullptr, *add = nullptr,
                   *mask = nullptr;
  const KernelArgs *paramArgs = nullptr, *inputArgs = nullptr,
                   *addArgs = nullptr, *maskArgs = nullptr;
};
Status runNormGroup(const NormGroup &group);
struct MaskAdd;
/// `norm` (layer_norm or rms_norm, with its run's addresses) of the
/// residual add group's result that `add` computes (MaskAdd.cuh: with a
/// bias add where `bias`, with a dropout where `mask`), each row's z
/// stored and normalized in one pass: z and the norm's result are the
/// unfused kernels' bit for bit (runAddGroup, FusionPlan.h). `name` names
/// the group in errors.
Status runNormOfMaskAdd(const char *name, const MaskAdd &add, bool bias,
                        bool mask, const KernelCall &norm,
                        const KernelArgs &normArgs, cudaStream_t stream);
/// The scale an apply_mask's run applies to kept elements (its rate, 0 in
/// evaluation, as the unfused kernel sees it); an error naming `kernel`
/// where the rate is outside [0, 1). For the fused groups that apply it.
Status applyMaskScale(const KernelCall &applyMask, const KernelArgs &args,
                      const char *kernel, float &scale);
bool isNormParamGrad(fb::OpCode op);

// Losses' scalars, optimizers, sum_squares, clip_coefficient, lr_schedule
// (OptimizerKernels.cu); run through the reduction family.
bool isOptimizerKernel(fb::OpCode op);
uint64_t optimizerScratchBytes(const KernelCall &call);
Status runOptimizerKernel(const KernelCall &call, const KernelArgs &args);

// Attention and softmax (AttentionKernels.cu).
bool isAttentionKernel(fb::OpCode op);

uint64_t attentionScratchBytes(const KernelCall &call);
Status runAttentionKernel(const KernelCall &call, const KernelArgs &args);

/// The phases of cross_entropy(_grad) over a split vocabulary (padded or not)
/// (CpuKernels.h's crossEntropyBlock*; the device all-reduces between
/// them over the call's group). `block` is the logits' columns' first
/// vocabulary index and the vocabulary size (classes). Per position:
/// max[r] over the block's real columns (every row), then with the
/// group's max, sumExp[r] and (when `target` is not null) the target's
/// logit if it lies in the block (0 else); then either the loss sum and
/// count (combine) or the logits' gradient.
Status crossEntropyBlockMax(const void *logits, Storage logitsType,
                            const int64_t *labels, int64_t rows,
                            int64_t cols, int64_t blockStart, int64_t classes,
                            int64_t ignoreIndex, float *max,
                            cudaStream_t stream);
Status crossEntropyBlockSums(const void *logits, Storage logitsType,
                             const int64_t *labels, int64_t rows,
                             int64_t cols, int64_t blockStart,
                             int64_t classes, int64_t ignoreIndex,
                             const float *max, float *sumExp, float *target,
                             cudaStream_t stream);
Status crossEntropyCombine(const int64_t *labels, int64_t rows,
                           int64_t ignoreIndex, const float *max,
                           const float *sumExp, const float *target,
                           float *lossSum, int64_t *count,
                           cudaStream_t stream);
Status crossEntropyBlockGrad(const void *logits, Storage logitsType,
                             const int64_t *labels, int64_t rows, int64_t cols,
                             int64_t blockStart, int64_t classes,
                             int64_t ignoreIndex, const float *max,
                             const float *sumExp, const float *lossSumGrad,
                             void *dLogits, Storage dLogitsType,
                             cudaStream_t stream);

/// The device's check of ids and labels (DataChecks.cu): every element of
/// `ids` (but those equal to `*ignore` when `ignore` is not null) must lie
/// in [0, bound); a bad one at position i lowers `*firstBad` (device
/// memory) to (order << kDataCheckOrderShift) | i, and when `*firstBad` is
/// then this check's, `*badValue` (device memory) gets the id at its
/// position. Positions below 2^40.
constexpr int kDataCheckOrderShift = 40;
constexpr unsigned long long kDataCheckPositionMask =
    (1ull << kDataCheckOrderShift) - 1;
Status checkIdsInRange(const int64_t *ids, int64_t count, int64_t bound,
                       const int64_t *ignore, uint64_t order,
                       unsigned long long *firstBad, int64_t *badValue,
                       cudaStream_t stream);

/// Several adamw_update (or sgd_update) calls with the same lr, step and
/// grad_scale operands and the same float attributes, in one launch: the
/// device finds such runs at prepare and writes their tensor lists into
/// its allocation once (ReductionKernels.cu).
struct OptimizerTensor {
  float *param;
  const float *grad;
  float *state0; // exp_avg, or the momentum buffer (null: plain SGD)
  float *state1; // exp_avg_sq (adamw)
  int64_t count;
  /// The operand of the sum_squares after the batch that is this gradient
  /// (its partial sums' row), or -1 (KernelBatches.h squaresAfterBatch).
  int32_t squaresOperand;
};
/// `squaresPartials` non-null: the launch also writes the partial sums of
/// the squares of each tensor's gradient that has a squaresOperand, as
/// sum_squares' first pass writes them (its partials, in its scratch), so
/// that runSumSquaresTotal completes that sum_squares bit for bit.
Status adamwUpdateMany(const OptimizerTensor *tensors, int numTensors,
                       int64_t mostElements, const float *lr,
                       const int64_t *step, const float *gradScale,
                       double beta1, double beta2, double eps,
                       double weightDecay, double *squaresPartials,
                       cudaStream_t stream);
/// The second pass of the sum_squares `call` alone: adds the partial sums
/// an optimizer batch wrote (adamwUpdateMany) into its result.
Status runSumSquaresTotal(const KernelCall &call, const KernelArgs &args);

/// A batch of casts and zeros (KernelBatches.h) in one launch: each entry
/// writes `count` elements of `out` in `outType`, converted from `in` in
/// `inType`, or +0 where `in` is null; `vectorized` where both addresses
/// are 16-byte aligned (8 elements a thread). The list lives in device
/// memory, written once (PointwiseKernels.cu).
struct CastTensor {
  const void *in;
  void *out;
  int64_t count;
  Storage inType, outType;
  bool vectorized;
};
Status castMany(const CastTensor *tensors, int numTensors, int64_t mostElements,
                cudaStream_t stream);

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_CUDAKERNELS_H
