//===- GemmSpec.h - GEMM calls as cuBLAS problems ---------------*- C++ -*-===//
//
// What the GEMM family (Gemm.cpp) asks cuBLASLt for a linear,
// linear_input_grad, linear_weight_grad or batch_matmul call, worked out
// without CUDA so that a plain C++ test checks it against the CPU kernels.
//
// The runtime's tensors are row-major and cuBLAS is column-major: a row-major
// X [r, c] with leading dimension L is, in the same bytes, the column-major
// X^T [c, r] with leading dimension L. The row-major C = op(A) op(B) is thus
// the column-major C^T = op(B)^T op(A)^T: the operands swap, each keeps its
// transpose flag and leading dimension, and m and n swap.
//
// cuBLASLt multiplies A and B of one type (f32, or bf16 or f16 into that
// type or f32, computing in fp32) with a bias of D's type. Other mixes are
// staged through fp32 scratch, which changes no value: a 16-bit operand
// casts to f32 exactly, and an output staged in f32 is rounded once, as the
// CPU device rounds its fp32 result once.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_GEMMSPEC_H
#define TPCRT_CUDA_GEMMSPEC_H

#include "tpcrt/Program.h"
#include "tpcrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace tpcrt::cuda {

/// The element types a GEMM reads and writes.
enum class GemmType : uint8_t { F32, BF16, F16 };

/// f32 for f32 (and, never decoded for a GEMM, anything else).
GemmType gemmTypeOf(fb::DType dtype);
const char *gemmTypeName(GemmType type);
inline uint64_t gemmTypeBytes(GemmType type) {
  return type == GemmType::F32 ? 4 : 2;
}

/// The bytes (a power of two, at most 256) that a tensor's address is a
/// multiple of, in every slot of its pool, assuming the arena starts on a
/// 256-byte boundary.
uint32_t gemmAlignmentOf(const TensorRef &tensor);

/// The column-major problem of a GEMM call: for each batch p,
///   D_p [m, n] = alpha * op(A_p) [m, k] * op(B_p) [k, n] (+ bias [m])
/// with X_p = X + p * strideX elements and op(X) = X^T when transX: the
/// stored A is [m, k] with lda >= m, or [k, m] with lda >= k when
/// transposed (likewise B); D is packed (ldc = m, strideC = m * n). The bias
/// is added to every column of D (cuBLASLt's CUBLASLT_EPILOGUE_BIAS), after
/// alpha. beta is 0, or 1 when the call accumulates (D += ..., D read as C:
/// linear_weight_grad_accumulate).
struct GemmSpec {
  /// Whether the call was a GEMM kernel (gemmSpecOf).
  bool valid = false;
  /// A, B and the bias are the call's operands with these indices (-1: no
  /// bias); D is its result 0.
  int aOperand = -1, bOperand = -1, biasOperand = -1;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  float alpha = 1.0f;
  /// D's values are added to (beta = 1): the call updates its result.
  bool accumulate = false;

  /// The storage of the call's tensors (biasType: f32 without a bias).
  GemmType aType = GemmType::F32, bType = GemmType::F32;
  GemmType biasType = GemmType::F32, resultType = GemmType::F32;
  /// What cuBLASLt reads (A and B) and writes (D; the bias has its type).
  GemmType inputType = GemmType::F32, outputType = GemmType::F32;
  /// The alignment in bytes of the call's tensors' addresses
  /// (gemmAlignmentOf).
  uint32_t alignA = 256, alignB = 256, alignBias = 256, alignResult = 256;

  /// Elements of the call's tensors (what a staging cast converts).
  int64_t elementsA = 0, elementsB = 0, elementsBias = 0, elementsResult = 0;
  /// Staging: A, B and the bias are cast into scratch at these offsets
  /// before the matmul; D is written to scratch and cast into the result
  /// after it. The scratch a run needs: scratchBytes.
  bool stageA = false, stageB = false, stageBias = false, stageOutput = false;
  uint64_t scratchA = 0, scratchB = 0, scratchBias = 0, scratchOutput = 0;
  uint64_t scratchBytes = 0;

  bool hasBias() const { return biasOperand >= 0; }
  /// Nothing to compute: D has no element.
  bool empty() const { return m == 0 || n == 0 || batch == 0; }
  /// Nothing to sum (k = 0): the result is the bias broadcast, or zeros
  /// (unchanged when accumulating); no matmul and no staging.
  bool fillOnly() const { return !empty() && k == 0; }
};

/// The spec of `call`, a decoded linear, linear_input_grad,
/// linear_weight_grad or batch_matmul kernel (its sizes m, k, n, batch,
/// flags and attributes as decodeKernel filled them in); valid is false for
/// any other opcode.
GemmSpec gemmSpecOf(const KernelCall &call);

/// "m 5, n 3, k 7, batch 2, A bf16 [k, m] lda 7, ..." for messages.
std::string describeGemm(const GemmSpec &spec);

/// A GeLU (tanh form) in the matmul's epilogue, after the bias: a linear
/// and the gelu of its result as one (FusionPlan.h). GeluAux also writes the
/// GeLU's input (the linear's result, which the backward reads) to an aux
/// matrix laid out as D. GeluGrad is the backward's: D is the product times
/// the GeLU's derivative at the aux matrix (the GeLU's input, read; laid
/// out as D): a linear_input_grad and the gelu_grad of its result as one
/// (cuBLASLt's DGELU).
enum class GemmGelu : uint8_t { None, Gelu, GeluAux, GeluGrad };

/// The bias gradient in the matmul's epilogue: the sum over k of op(A)'s
/// rows (A: cuBLASLt's BGRADA, m sums) or of op(B)'s columns (B: BGRADB, n
/// sums) written to a vector of D's type: a linear_weight_grad and the
/// sum_to of its dY as one (FusionPlan.h).
enum class GemmBiasGrad : uint8_t { None, A, B };

/// Everything a cuBLASLt plan (matmul descriptor, matrix layouts, the
/// heuristic's algorithm) depends on, as cuBLASLt sees the operands (after
/// staging). Not alpha: runs pass it.
struct GemmKey {
  GemmType inputType = GemmType::F32, outputType = GemmType::F32;
  bool transA = false, transB = false, bias = false;
  GemmGelu gelu = GemmGelu::None;
  GemmBiasGrad biasGrad = GemmBiasGrad::None;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  /// The alignment of the addresses cuBLASLt gets (256 for staged scratch;
  /// alignBias: the bias, or the bias gradient's vector).
  uint32_t alignA = 256, alignB = 256, alignBias = 256, alignD = 256;
  uint32_t alignAux = 256;

  bool operator==(const GemmKey &other) const;
  bool operator!=(const GemmKey &other) const { return !(*this == other); }
};

GemmKey gemmKeyOf(const GemmSpec &spec);

/// Why `spec` (a linear) cannot take a GeLU epilogue (`aux`: writing its
/// result as the aux matrix too), or null: its output is staged, or the
/// aux matrix's leading dimension or batch stride is not a multiple of 8
/// elements (cuBLASLt's rule).
const char *geluEpilogueRefusal(const GemmSpec &spec, bool aux);

/// The key of `spec` with a GeLU epilogue: D is the gelu's result, aligned
/// to `alignGelu` bytes; with `aux` the linear's result is the aux matrix.
GemmKey geluKeyOf(const GemmSpec &spec, bool aux, uint32_t alignGelu);

/// Why `spec` (a linear_input_grad) cannot take the GeLU gradient epilogue,
/// or null: no matmul, a batched, accumulating or biased product, a staged
/// output, or a leading dimension of D (and so of the aux matrix) that is
/// not a multiple of 8 (cuBLASLt's rule for the aux matrix).
const char *geluGradEpilogueRefusal(const GemmSpec &spec);

/// The key of `spec` with the GeLU gradient epilogue: D is the gelu_grad's
/// result, aligned to `alignResult` bytes, the aux matrix (the GeLU's
/// input) to `alignInput`.
GemmKey geluGradKeyOf(const GemmSpec &spec, uint32_t alignResult,
                      uint32_t alignInput);

/// Why `spec` (a linear_weight_grad) cannot write the sum over its k (the
/// tokens) of its operand `summed` (dY) into a vector of `vectorType` with
/// `vectorElements` elements in its epilogue, or null, with `which` set:
/// the operand is neither A nor B, the product is batched or scaled, the
/// vector is not of D's type (cuBLASLt writes it in D's type) or not one
/// element per row of op(A) (BGRADA) or column of op(B) (BGRADB).
const char *biasGradEpilogueRefusal(const GemmSpec &spec, int summed,
                                    GemmType vectorType, int64_t vectorElements,
                                    GemmBiasGrad &which);

/// The key of `spec` with the bias gradient epilogue `which`, its vector
/// aligned to `alignVector` bytes.
GemmKey biasGradKeyOf(const GemmSpec &spec, GemmBiasGrad which,
                      uint32_t alignVector);
std::string describeGemmKey(const GemmKey &key);

struct GemmKeyHash {
  size_t operator()(const GemmKey &key) const;
};

/// Plans by key: each made once, by the builder the first lookup of its key
/// passes, and kept (at a stable address) until the cache goes.
template <typename Plan> class PlanCache {
public:
  /// The plan of `key` in `plan`: the cached one, or one made by
  /// `build(key, plan&)` (returning a Status), kept if it succeeded.
  template <typename Build>
  Status get(const GemmKey &key, Build &&build, Plan *&plan) {
    auto found = plans_.find(key);
    if (found != plans_.end()) {
      plan = found->second.get();
      return Status::ok();
    }
    ++builds_;
    auto made = std::make_unique<Plan>();
    if (Status s = build(key, *made); !s)
      return s;
    plan = made.get();
    plans_.emplace(key, std::move(made));
    return Status::ok();
  }

  /// Plans kept.
  size_t size() const { return plans_.size(); }
  /// Builder calls, failed ones included.
  size_t builds() const { return builds_; }
  void clear() { plans_.clear(); }

private:
  std::unordered_map<GemmKey, std::unique_ptr<Plan>, GemmKeyHash> plans_;
  size_t builds_ = 0;
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_GEMMSPEC_H
