//===- GemmSpec.cpp - GEMM kernels as column-major cuBLAS problems --------===//
//
// Each case is the CPU kernel's row-major gemm (cpu/CpuKernels.cpp linear,
// batchMatmul; cpu/CpuGradKernels.cpp linearInputGrad, linearWeightGrad)
// with its operands swapped (see GemmSpec.h).
//
//===----------------------------------------------------------------------===//

#include "GemmSpec.h"

#include <algorithm>
#include <tuple>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

/// Scratch pieces start on 256-byte boundaries (CudaKernels.h's
/// kScratchAlignment, which this CUDA-free file cannot include).
constexpr uint64_t kStagingAlignment = 256;

uint64_t alignStaging(uint64_t bytes) {
  return (bytes + kStagingAlignment - 1) / kStagingAlignment *
         kStagingAlignment;
}

/// Picks what cuBLASLt reads and writes and what goes through scratch.
void chooseTypes(GemmSpec &s) {
  // A and B of one type; a mix is multiplied in f32.
  s.inputType = s.aType == s.bType ? s.aType : GemmType::F32;
  // f32 inputs give f32; 16-bit inputs give their type or f32.
  if (s.inputType == GemmType::F32 || s.resultType == s.inputType ||
      s.resultType == GemmType::F32)
    s.outputType = s.inputType == GemmType::F32 ? GemmType::F32 : s.resultType;
  else
    s.outputType = GemmType::F32;
  // The bias has D's type: a 16-bit D with a bias of another type (which
  // would round if cast to D's) is computed in f32 instead.
  if (s.hasBias() && s.biasType != s.outputType &&
      s.outputType != GemmType::F32)
    s.outputType = GemmType::F32;

  s.stageA = s.aType != s.inputType;
  s.stageB = s.bType != s.inputType;
  s.stageBias = s.hasBias() && s.biasType != s.outputType;
  s.stageOutput = s.resultType != s.outputType;

  uint64_t offset = 0;
  auto place = [&](bool staged, int64_t elements, GemmType type, uint64_t &at) {
    if (!staged)
      return;
    at = offset;
    offset +=
        alignStaging(static_cast<uint64_t>(elements) * gemmTypeBytes(type));
  };
  place(s.stageA, s.elementsA, s.inputType, s.scratchA);
  place(s.stageB, s.elementsB, s.inputType, s.scratchB);
  place(s.stageBias, s.elementsBias, s.outputType, s.scratchBias);
  place(s.stageOutput, s.elementsResult, s.outputType, s.scratchOutput);
  s.scratchBytes = offset;
}

/// Nothing to multiply: cuBLASLt is not called, nothing is staged.
void noStaging(GemmSpec &s) {
  s.inputType = s.aType == s.bType ? s.aType : GemmType::F32;
  s.outputType = s.resultType;
  s.stageA = s.stageB = s.stageBias = s.stageOutput = false;
  s.scratchBytes = 0;
}

/// "A bf16 3x7 (T, ld 7)": op(A)'s rows and columns, the transpose, the
/// leading dimension (column-major, as cuBLAS sees it).
std::string typeAndLayout(const char *name, GemmType type, bool trans,
                          int64_t rows, int64_t cols, int64_t ld) {
  return std::string(name) + " " + gemmTypeName(type) + " " +
         std::to_string(rows) + "x" + std::to_string(cols) + " (" +
         (trans ? "T" : "N") + ", ld " + std::to_string(ld) + ")";
}

} // namespace

GemmType cuda::gemmTypeOf(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::BF16:
    return GemmType::BF16;
  case fb::DType::F16:
    return GemmType::F16;
  default:
    return GemmType::F32;
  }
}

const char *cuda::gemmTypeName(GemmType type) {
  switch (type) {
  case GemmType::BF16:
    return "bf16";
  case GemmType::F16:
    return "f16";
  default:
    return "f32";
  }
}

uint32_t cuda::gemmAlignmentOf(const TensorRef &tensor) {
  uint64_t bits = tensor.offset | 256;
  if (tensor.pool >= 0 && tensor.poolSlots > 1)
    bits |= tensor.poolStride;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

GemmSpec cuda::gemmSpecOf(const KernelCall &call) {
  GemmSpec s;
  bool outIn = call.flags & 1;
  switch (call.op) {
  case fb::OpCode::Linear:
    // out [m, n] = x [m, k] W, W [k, n] (in_out) or W^T, W [n, k] (out_in):
    // A = W, B = x.
    s.aOperand = 1;
    s.bOperand = 0;
    s.transA = outIn;
    s.m = call.n;
    s.n = call.m;
    s.k = call.k;
    s.lda = outIn ? call.k : call.n;
    s.ldb = call.k;
    s.ldc = call.n;
    if (call.operands.size() == 3)
      s.biasOperand = 2;
    break;
  case fb::OpCode::LinearInputGrad:
    // dX [m, k] = dY [m, n] W^T, W [k, n] (in_out) or dY W, W [n, k]
    // (out_in): A = W, B = dY.
    s.aOperand = 1;
    s.bOperand = 0;
    s.transA = !outIn;
    s.m = call.k;
    s.n = call.m;
    s.k = call.n;
    s.lda = outIn ? call.k : call.n;
    s.ldb = call.n;
    s.ldc = call.k;
    break;
  case fb::OpCode::LinearWeightGradAccumulate:
    s.accumulate = true;
    [[fallthrough]];
  case fb::OpCode::LinearWeightGrad:
    // in_out: dW [k, n] = x^T dY: A = dY, B = x transposed.
    // out_in: dW [n, k] = dY^T x: A = x, B = dY transposed.
    // x is [m, k], dY [m, n]; the sum runs over m.
    s.aOperand = outIn ? 0 : 1;
    s.bOperand = outIn ? 1 : 0;
    s.transB = true;
    s.m = outIn ? call.k : call.n;
    s.n = outIn ? call.n : call.k;
    s.k = call.m;
    s.lda = s.m;
    s.ldb = s.n;
    s.ldc = s.m;
    break;
  case fb::OpCode::BatchMatmul: {
    // out_b [m, n] = scale * lhs_b [m, k] rhs_b [k, n], lhs_b stored
    // [k, m] with flag bit 0, rhs_b stored [n, k] with bit 1: A = rhs,
    // B = lhs.
    bool transLhs = call.flags & 1, transRhs = call.flags & 2;
    s.aOperand = 1;
    s.bOperand = 0;
    s.transA = transRhs;
    s.transB = transLhs;
    s.m = call.n;
    s.n = call.m;
    s.k = call.k;
    s.lda = transRhs ? call.k : call.n;
    s.ldb = transLhs ? call.m : call.k;
    s.ldc = call.n;
    s.batch = call.batch;
    s.strideA = call.k * call.n;
    s.strideB = call.m * call.k;
    s.strideC = call.m * call.n;
    s.alpha =
        call.floatAttrs.empty() ? 1.0f : static_cast<float>(call.floatAttrs[0]);
    break;
  }
  default:
    return s;
  }
  if (call.operands.size() < 2 || call.results.empty())
    return s;
  s.valid = true;
  s.lda = std::max<int64_t>(1, s.lda);
  s.ldb = std::max<int64_t>(1, s.ldb);
  s.ldc = std::max<int64_t>(1, s.ldc);

  const TensorRef &a = call.operands[s.aOperand];
  const TensorRef &b = call.operands[s.bOperand];
  const TensorRef &result = call.results[0];
  s.aType = gemmTypeOf(a.dtype);
  s.bType = gemmTypeOf(b.dtype);
  s.resultType = gemmTypeOf(result.dtype);
  s.alignA = gemmAlignmentOf(a);
  s.alignB = gemmAlignmentOf(b);
  s.alignResult = gemmAlignmentOf(result);
  s.elementsA = a.elements;
  s.elementsB = b.elements;
  s.elementsResult = result.elements;
  if (s.hasBias()) {
    const TensorRef &bias = call.operands[s.biasOperand];
    s.biasType = gemmTypeOf(bias.dtype);
    s.alignBias = gemmAlignmentOf(bias);
    s.elementsBias = bias.elements;
  }
  if (s.empty() || s.fillOnly())
    noStaging(s);
  else
    chooseTypes(s);
  return s;
}

std::string cuda::describeGemm(const GemmSpec &s) {
  std::string text =
      "m " + std::to_string(s.m) + ", n " + std::to_string(s.n) + ", k " +
      std::to_string(s.k) + ", batch " + std::to_string(s.batch) + ", " +
      typeAndLayout("A", s.aType, s.transA, s.m, s.k, s.lda) + ", " +
      typeAndLayout("B", s.bType, s.transB, s.k, s.n, s.ldb) + ", D " +
      gemmTypeName(s.resultType);
  if (s.hasBias())
    text += std::string(", bias ") + gemmTypeName(s.biasType);
  if (s.accumulate)
    text += ", accumulating (beta 1)";
  return text;
}

GemmKey cuda::gemmKeyOf(const GemmSpec &s) {
  GemmKey key;
  key.inputType = s.inputType;
  key.outputType = s.outputType;
  key.transA = s.transA;
  key.transB = s.transB;
  key.bias = s.hasBias();
  key.m = s.m;
  key.n = s.n;
  key.k = s.k;
  key.lda = s.lda;
  key.ldb = s.ldb;
  key.ldc = s.ldc;
  key.batch = s.batch;
  // One matrix has no batch stride: a batch_matmul of batch 1 shares the
  // plan of a linear of its shape.
  if (s.batch > 1) {
    key.strideA = s.strideA;
    key.strideB = s.strideB;
    key.strideC = s.strideC;
  }
  key.alignA = s.stageA ? 256 : s.alignA;
  key.alignB = s.stageB ? 256 : s.alignB;
  key.alignBias = !s.hasBias() ? 256 : s.stageBias ? 256 : s.alignBias;
  key.alignD = s.stageOutput ? 256 : s.alignResult;
  return key;
}

std::string cuda::describeGemmKey(const GemmKey &key) {
  std::string text =
      "m " + std::to_string(key.m) + ", n " + std::to_string(key.n) + ", k " +
      std::to_string(key.k) + ", batch " + std::to_string(key.batch) + ", " +
      typeAndLayout("A", key.inputType, key.transA, key.m, key.k, key.lda) +
      " (aligned " + std::to_string(key.alignA) + "), " +
      typeAndLayout("B", key.inputType, key.transB, key.k, key.n, key.ldb) +
      " (aligned " + std::to_string(key.alignB) + "), D " +
      gemmTypeName(key.outputType) + " ld " + std::to_string(key.ldc) +
      " (aligned " + std::to_string(key.alignD) + ")";
  if (key.bias)
    text += std::string(", bias ") + gemmTypeName(key.outputType) +
            " (aligned " + std::to_string(key.alignBias) + ")";
  if (key.gelu == GemmGelu::Gelu)
    text += ", GeLU epilogue";
  else if (key.gelu == GemmGelu::GeluAux)
    text += ", GeLU epilogue with aux (aligned " +
            std::to_string(key.alignAux) + ")";
  else if (key.gelu == GemmGelu::GeluGrad)
    text += ", GeLU gradient epilogue, aux (aligned " +
            std::to_string(key.alignAux) + ")";
  if (key.biasGrad != GemmBiasGrad::None)
    text += std::string(", bias gradient of ") +
            (key.biasGrad == GemmBiasGrad::A ? "A" : "B") + " " +
            gemmTypeName(key.outputType) + " (aligned " +
            std::to_string(key.alignBias) + ")";
  return text;
}

const char *cuda::biasGradEpilogueRefusal(const GemmSpec &spec, int summed,
                                          GemmType vectorType,
                                          int64_t vectorElements,
                                          GemmBiasGrad &which) {
  which = GemmBiasGrad::None;
  if (!spec.valid || spec.empty() || spec.fillOnly())
    return "no matmul";
  if (spec.batch > 1)
    return "the product is batched";
  if (spec.alpha != 1.0f || spec.hasBias())
    return "the product is scaled or has a bias";
  GemmBiasGrad side = summed == spec.aOperand   ? GemmBiasGrad::A
                      : summed == spec.bOperand ? GemmBiasGrad::B
                                                : GemmBiasGrad::None;
  if (side == GemmBiasGrad::None)
    return "the summed tensor is not an operand of the product";
  if (vectorType != spec.outputType)
    return "the sum is not of the product's output type";
  if (vectorElements != (side == GemmBiasGrad::A ? spec.m : spec.n))
    return "the sum does not have one element per row of op(A) or column of "
           "op(B)";
  which = side;
  return nullptr;
}

GemmKey cuda::biasGradKeyOf(const GemmSpec &spec, GemmBiasGrad which,
                            uint32_t alignVector) {
  GemmKey key = gemmKeyOf(spec);
  key.biasGrad = which;
  key.alignBias = alignVector;
  return key;
}

const char *cuda::geluEpilogueRefusal(const GemmSpec &spec, bool aux) {
  if (!spec.valid || spec.empty() || spec.fillOnly())
    return "no matmul";
  if (spec.stageOutput)
    return "its output is staged";
  if (aux && (spec.ldc % 8 != 0 || (spec.batch > 1 && spec.strideC % 8 != 0)))
    return "the aux matrix's leading dimension or batch stride is not a "
           "multiple of 8";
  return nullptr;
}

GemmKey cuda::geluKeyOf(const GemmSpec &spec, bool aux, uint32_t alignGelu) {
  GemmKey key = gemmKeyOf(spec);
  key.gelu = aux ? GemmGelu::GeluAux : GemmGelu::Gelu;
  key.alignAux = aux ? key.alignD : 256;
  key.alignD = alignGelu;
  return key;
}

const char *cuda::geluGradEpilogueRefusal(const GemmSpec &spec) {
  if (!spec.valid || spec.empty() || spec.fillOnly())
    return "no matmul";
  if (spec.batch > 1 || spec.accumulate || spec.hasBias())
    return "the product is batched, accumulates or has a bias";
  if (spec.stageOutput)
    return "its output is staged";
  if (spec.ldc % 8 != 0)
    return "the aux matrix's leading dimension is not a multiple of 8";
  return nullptr;
}

GemmKey cuda::geluGradKeyOf(const GemmSpec &spec, uint32_t alignResult,
                            uint32_t alignInput) {
  GemmKey key = gemmKeyOf(spec);
  key.gelu = GemmGelu::GeluGrad;
  key.alignD = alignResult;
  key.alignAux = alignInput;
  return key;
}

static auto tieKey(const GemmKey &k) {
  return std::tie(k.inputType, k.outputType, k.transA, k.transB, k.bias, k.m,
                  k.n, k.k, k.lda, k.ldb, k.ldc, k.batch, k.strideA, k.strideB,
                  k.strideC, k.alignA, k.alignB, k.alignBias, k.alignD, k.gelu,
                  k.biasGrad, k.alignAux);
}

bool GemmKey::operator==(const GemmKey &other) const {
  return tieKey(*this) == tieKey(other);
}

size_t GemmKeyHash::operator()(const GemmKey &key) const {
  // Each field mixed in with splitmix64's finalizer.
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
  };
  mix(static_cast<uint64_t>(key.inputType) |
      static_cast<uint64_t>(key.outputType) << 8 |
      static_cast<uint64_t>(key.transA) << 16 |
      static_cast<uint64_t>(key.transB) << 17 |
      static_cast<uint64_t>(key.bias) << 18 |
      static_cast<uint64_t>(key.gelu) << 19 |
      static_cast<uint64_t>(key.biasGrad) << 21);
  for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc, key.batch,
                    key.strideA, key.strideB, key.strideC})
    mix(static_cast<uint64_t>(v));
  mix(static_cast<uint64_t>(key.alignA) |
      static_cast<uint64_t>(key.alignB) << 16 |
      static_cast<uint64_t>(key.alignBias) << 32 |
      static_cast<uint64_t>(key.alignD) << 48);
  mix(key.alignAux);
  return static_cast<size_t>(h);
}
