//===- Gemm.h - linear and batch_matmul through cuBLASLt --------*- C++ -*-===//
//
// The GEMM family of the CUDA device: linear, linear_input_grad,
// linear_weight_grad and batch_matmul as cuBLASLt matmuls. Every GEMM call
// of the program gets its plan at prepare (matrix layouts, the operation
// descriptor, the algorithm cuBLASLt's heuristic picks for the workspace),
// cached by its shape key so that calls of the same shape share one; a run
// looks its plan up by kernel index and launches, allocating nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_GEMM_H
#define TPCRT_CUDA_GEMM_H

#include "CudaKernels.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tpcrt::cuda {

bool isGemmKernel(fb::OpCode op);

/// One line for stderr where 16-bit matrix products of `program` have a
/// row (an operand's or a result's last dimension) of no whole 16 bytes:
/// cuBLASLt runs those off its tensor-core fast kernels (an H100 ran GPT-2's
/// unpadded LM head at a tenth of its peak). Empty where none has.
std::string unalignedRowsNote(const Program &program);

/// A fused partner's addresses for GemmEngine::run (none: the call alone).
struct GemmEpilogue {
  /// A linear with its gelu (planGelu), or an input gradient with its
  /// gelu_grad (planGeluGrad): the partner's result, written instead of the
  /// call's.
  void *geluResult = nullptr;
  /// With a gelu_grad: its input (the GeLU's input, the aux matrix).
  const void *geluInput = nullptr;
  /// A weight gradient with the sum of its dY (planBiasGrad): the sum's
  /// result.
  void *biasGrad = nullptr;
  /// A product with the add of it and `addend` (planAdd): the add's
  /// result, written instead of the call's, and the addend (C, beta = 1).
  void *sum = nullptr;
  const void *addend = nullptr;
};

class GemmEngine {
public:
  GemmEngine();
  ~GemmEngine();
  GemmEngine(const GemmEngine &) = delete;
  GemmEngine &operator=(const GemmEngine &) = delete;

  /// Creates the cuBLASLt handle. allowTf32: fp32 GEMMs may use TF32.
  Status init(bool allowTf32);

  /// The plan of `call` (a GEMM kernel), made or found in the cache, and
  /// the scratch its runs need (fp32 or 16-bit staging where cuBLASLt has
  /// no matmul for the operands' mix of types; 0 mostly). At prepare.
  Status plan(const KernelCall &call, uint64_t &scratchBytes);

  /// The plan of `linear` (planned) run with its next kernel `gelu` as one
  /// matmul whose epilogue adds the bias and applies the tanh GeLU, writing
  /// the gelu's result and, with `aux`, the linear's (FusionPlan.h). An
  /// error (no algorithm, a layout cuBLASLt's epilogue refuses) leaves the
  /// pair to run unfused.
  Status planGelu(const KernelCall &linear, const KernelCall &gelu, bool aux);

  /// The plan of `inputGrad` (a linear_input_grad, planned) run with its
  /// next kernel `geluGrad` (the tanh gelu_grad of its result) as one matmul
  /// whose epilogue multiplies the product by the GeLU's derivative at the
  /// gelu_grad's input (cuBLASLt's DGELU, the input as the aux matrix),
  /// writing the gelu_grad's result; the linear's is never written
  /// (FusionPlan.h). An error leaves the pair to run unfused.
  Status planGeluGrad(const KernelCall &inputGrad, const KernelCall &geluGrad);

  /// The plan of `weightGrad` (a linear_weight_grad, planned) run with its
  /// next kernel `sum` (the sum_to of its dY, the bias gradient) as one
  /// matmul whose epilogue also writes the sum (cuBLASLt's BGRADA or
  /// BGRADB; FusionPlan.h); with `staged` the epilogue writes the sum to
  /// scratch and the run copies it into place after the matmul.
  /// `scratchBytes`: what the fused runs need. An error (a refusal of
  /// biasGradEpilogueRefusal, no algorithm) leaves the pair to run unfused.
  Status planBiasGrad(const KernelCall &weightGrad, const KernelCall &sum,
                      bool staged, uint64_t &scratchBytes);

  /// The plan of `product` (a linear without bias or a linear_input_grad,
  /// planned) run with its next kernel `add` (of the product and another
  /// tensor) as one matmul that adds the other tensor as C (beta = 1) and
  /// writes the add's result as D; the product is never written
  /// (FusionPlan.h). An error (a staged output, no algorithm) leaves the
  /// pair to run unfused.
  Status planAdd(const KernelCall &product, const KernelCall &add);

  /// The bytes of cuBLASLt workspace every plan was chosen for; the device
  /// places that much inside its one allocation and passes it here before
  /// the first run.
  uint64_t workspaceBytes() const;
  void setWorkspace(void *workspace);

  /// Distinct plans made (calls of one shape key share one).
  size_t planCount() const;

  /// Enqueues `call` (planned) on args.stream, with a fused partner's
  /// addresses when `epilogue` has them (GemmEpilogue).
  Status run(const KernelCall &call, const KernelArgs &args,
             const GemmEpilogue &epilogue = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_GEMM_H
