//===- cublasLt.h - cuBLASLt's matmul, emulated on the host ---------------===//
//
// The part of cuBLASLt the CUDA backend calls (cuda/Gemm.cpp), for the
// emulated backend (cuda_runtime_api.h here): descriptors and layouts hold
// what is set on them; the heuristic offers three algorithms; cublasLtMatmul
// computes, column-major as cuBLASLt defines it,
//
//   aux = alpha op(A) op(B) + beta C + bias (bias[i] added to row i)
//   D   = epilogue(aux)  (GELU: the tanh form; aux kept when GELU_AUX)
//
// summing each dot product in double and rounding once to D's type. What
// cuBLASLt would refuse is refused with CUBLAS_STATUS_INVALID_VALUE and a
// line on stderr: layouts whose shapes do not make an m x k by k x n
// product, a leading dimension below the rows, batch counts that differ,
// C's layout not D's when C is D, operands that do not lie inside one
// device allocation, a bias or aux pointer missing for its epilogue. This
// checks how the backend drives cuBLASLt, against the reading of cuBLASLt's
// documentation this file encodes; it is not cuBLASLt.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_EMULATION_CUBLASLT_H
#define TPCRT_TEST_EMULATION_CUBLASLT_H

#include "cuda_runtime_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

enum cudaDataType_t {
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
};

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};

enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };

enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
};

enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_GELU = 32,
  CUBLASLT_EPILOGUE_GELU_AUX = 32 | 128,
  CUBLASLT_EPILOGUE_GELU_BIAS = 32 | 4,
  CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 32 | 128 | 4,
  CUBLASLT_EPILOGUE_DGELU = 64 | 128,
  CUBLASLT_EPILOGUE_BGRADA = 256,
  CUBLASLT_EPILOGUE_BGRADB = 512,
};

enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 10,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 11,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 12,
};

enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
};

enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

struct cublasLtContext {
  int unused = 0;
};
typedef cublasLtContext *cublasLtHandle_t;

struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  void *aux = nullptr;
  int64_t auxLd = 0;
  int64_t auxStride = 0;
};
typedef cublasLtMatmulDescOpaque_t *cublasLtMatmulDesc_t;

struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
typedef cublasLtMatrixLayoutOpaque_t *cublasLtMatrixLayout_t;

struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t workspaceBytes = 0;
  uint32_t alignment[4] = {256, 256, 256, 256};
};
typedef cublasLtMatmulPreferenceOpaque_t *cublasLtMatmulPreference_t;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

namespace tpcrt::emu::lt {

inline cublasStatus_t refuse(const std::string &what) {
  std::fprintf(stderr, "emulated cuBLASLt: %s\n", what.c_str());
  return CUBLAS_STATUS_INVALID_VALUE;
}

inline size_t typeBytes(cudaDataType_t type) {
  return type == CUDA_R_32F ? 4 : 2;
}

inline float load(const void *p, cudaDataType_t type, int64_t i) {
  switch (type) {
  case CUDA_R_16BF:
    return fromBf16(static_cast<const uint16_t *>(p)[i]);
  case CUDA_R_16F:
    return fromHalf(static_cast<const uint16_t *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}

inline void store(void *p, cudaDataType_t type, int64_t i, float v) {
  switch (type) {
  case CUDA_R_16BF:
    static_cast<uint16_t *>(p)[i] = toBf16(v);
    break;
  case CUDA_R_16F:
    static_cast<uint16_t *>(p)[i] = toHalf(v);
    break;
  default:
    static_cast<float *>(p)[i] = v;
  }
}

/// Bytes a layout's matrices span from their first element.
inline size_t spanBytes(const cublasLtMatrixLayoutOpaque_t &l) {
  if (l.rows == 0 || l.cols == 0)
    return 0;
  uint64_t elements = (l.cols - 1) * uint64_t(l.ld) + l.rows +
                      uint64_t(l.batch - 1) * uint64_t(l.stride);
  return elements * typeBytes(l.type);
}

inline bool hasBias(cublasLtEpilogue_t e) { return (e & 4) != 0; }
inline bool hasGelu(cublasLtEpilogue_t e) { return (e & 32) != 0; }
inline bool hasAux(cublasLtEpilogue_t e) { return (e & 128) != 0; }
/// DGELU: D is the product times GeLU'(aux), the aux matrix read (the
/// forward's GELU_AUX writes it).
inline bool hasGeluGrad(cublasLtEpilogue_t e) { return (e & 64) != 0; }
/// BGRADA / BGRADB: the sums over k of op(A)'s rows / op(B)'s columns into
/// the bias pointer's vector (D's type), besides D.
inline bool hasBiasGrad(cublasLtEpilogue_t e) { return (e & 768) != 0; }

inline float geluTanh(float x) {
  return 0.5f * x *
         (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

/// The tanh GeLU's derivative at x.
inline float geluTanhDerivative(float x) {
  const float k = 0.7978845608028654f, c = 0.044715f;
  float t = std::tanh(k * (x + c * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
}

} // namespace tpcrt::emu::lt

inline const char *cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
inline const char *cublasLtGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "success"
                                         : "emulated cuBLASLt refused it";
}

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  tpcrt::emu::noteResourceCall("cublasLtCreate");
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  tpcrt::emu::noteResourceCall("cublasLtDestroy");
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                               cublasComputeType_t compute,
                                               cudaDataType_t scale) {
  tpcrt::emu::noteResourceCall("cublasLtMatmulDescCreate");
  if (scale != CUDA_R_32F)
    return tpcrt::emu::lt::refuse("scale type other than CUDA_R_32F");
  *desc = new cublasLtMatmulDescOpaque_t;
  (*desc)->compute = compute;
  (*desc)->scale = scale;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  tpcrt::emu::noteResourceCall("cublasLtMatmulDescDestroy");
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                               cublasLtMatmulDescAttributes_t attribute,
                               const void *value, size_t bytes) {
  auto set = [&](auto &field) {
    if (bytes != sizeof field)
      return tpcrt::emu::lt::refuse("descriptor attribute " +
                                    std::to_string(attribute) + " of " +
                                    std::to_string(bytes) + " bytes");
    std::memcpy(&field, value, bytes);
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attribute) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return set(desc->transA);
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return set(desc->transB);
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return set(desc->epilogue);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return set(desc->bias);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    return set(desc->aux);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    return set(desc->auxLd);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
    return set(desc->auxStride);
  }
  return tpcrt::emu::lt::refuse("descriptor attribute " +
                                std::to_string(attribute));
}

inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                                 cudaDataType_t type,
                                                 uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  tpcrt::emu::noteResourceCall("cublasLtMatrixLayoutCreate");
  if (ld < 1 || uint64_t(ld) < rows)
    return tpcrt::emu::lt::refuse("layout of " + std::to_string(rows) +
                                  " rows with leading dimension " +
                                  std::to_string(ld));
  *layout = new cublasLtMatrixLayoutOpaque_t;
  (*layout)->type = type;
  (*layout)->rows = rows;
  (*layout)->cols = cols;
  (*layout)->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  tpcrt::emu::noteResourceCall("cublasLtMatrixLayoutDestroy");
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                 cublasLtMatrixLayoutAttribute_t attribute,
                                 const void *value, size_t bytes) {
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
      bytes == sizeof(int32_t)) {
    std::memcpy(&layout->batch, value, bytes);
    return layout->batch >= 1 ? CUBLAS_STATUS_SUCCESS
                              : tpcrt::emu::lt::refuse("batch count below 1");
  }
  if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET &&
      bytes == sizeof(int64_t)) {
    std::memcpy(&layout->stride, value, bytes);
    return CUBLAS_STATUS_SUCCESS;
  }
  return tpcrt::emu::lt::refuse("layout attribute " +
                                std::to_string(attribute) + " of " +
                                std::to_string(bytes) + " bytes");
}

inline cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *preference) {
  tpcrt::emu::noteResourceCall("cublasLtMatmulPreferenceCreate");
  *preference = new cublasLtMatmulPreferenceOpaque_t;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  tpcrt::emu::noteResourceCall("cublasLtMatmulPreferenceDestroy");
  delete preference;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t preference,
    cublasLtMatmulPreferenceAttributes_t attribute, const void *value,
    size_t bytes) {
  if (attribute == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
      bytes == sizeof(uint64_t)) {
    std::memcpy(&preference->workspaceBytes, value, bytes);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
      attribute <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES &&
      bytes == sizeof(uint32_t)) {
    std::memcpy(
        &preference->alignment[attribute -
                               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES],
        value, bytes);
    return CUBLAS_STATUS_SUCCESS;
  }
  return tpcrt::emu::lt::refuse("preference attribute " +
                                std::to_string(attribute));
}

namespace tpcrt::emu::lt {

/// Whether the four layouts make one problem with the descriptor's
/// transposes; its sizes when they do.
inline cublasStatus_t problemOf(const cublasLtMatmulDescOpaque_t &desc,
                                const cublasLtMatrixLayoutOpaque_t &a,
                                const cublasLtMatrixLayoutOpaque_t &b,
                                const cublasLtMatrixLayoutOpaque_t &c,
                                const cublasLtMatrixLayoutOpaque_t &d,
                                uint64_t &m, uint64_t &n, uint64_t &k) {
  m = d.rows;
  n = d.cols;
  k = desc.transA == CUBLAS_OP_T ? a.rows : a.cols;
  uint64_t aRows = desc.transA == CUBLAS_OP_T ? a.cols : a.rows;
  uint64_t bRows = desc.transB == CUBLAS_OP_T ? b.cols : b.rows;
  uint64_t bCols = desc.transB == CUBLAS_OP_T ? b.rows : b.cols;
  auto shape = [](const char *name, const cublasLtMatrixLayoutOpaque_t &l) {
    return std::string(name) + " " + std::to_string(l.rows) + "x" +
           std::to_string(l.cols);
  };
  if (aRows != m || bRows != k || bCols != n || c.rows != m || c.cols != n)
    return refuse("layouts make no product: " + shape("A", a) +
                  (desc.transA == CUBLAS_OP_T ? "^T, " : ", ") + shape("B", b) +
                  (desc.transB == CUBLAS_OP_T ? "^T, " : ", ") + shape("C", c) +
                  ", " + shape("D", d));
  if (a.batch != d.batch || b.batch != d.batch || c.batch != d.batch)
    return refuse("batch counts differ");
  if (a.type != b.type)
    return refuse("A and B of different types");
  if (c.type != d.type)
    return refuse("C and D of different types");
  if (a.type == CUDA_R_32F && d.type != CUDA_R_32F)
    return refuse("fp32 inputs with a 16-bit output");
  if (hasBiasGrad(desc.epilogue) && d.batch > 1)
    return refuse("a bias gradient epilogue on a batched product");
  if (hasAux(desc.epilogue) && desc.auxLd < int64_t(m))
    return refuse("aux leading dimension " + std::to_string(desc.auxLd) +
                  " below the rows " + std::to_string(m));
  return CUBLAS_STATUS_SUCCESS;
}

/// Output columns whose dot products run side by side: independent sums
/// the processor overlaps, each still summed in order of l.
constexpr uint64_t kColumnsAtOnce = 4;

/// Batch `batch` of op(A) as m rows of k doubles (row i, element l at
/// i * k + l) and of op(B) as n columns of k (column j at j * k), from
/// column-major storage: each dot product then reads two contiguous lines.
inline void packOperands(const cublasLtMatmulDescOpaque_t &desc,
                         const cublasLtMatrixLayoutOpaque_t &a, const void *A,
                         const cublasLtMatrixLayoutOpaque_t &b, const void *B,
                         int64_t batch, uint64_t m, uint64_t n, uint64_t k,
                         std::vector<double> &opA, std::vector<double> &opB) {
  const bool ta = desc.transA == CUBLAS_OP_T, tb = desc.transB == CUBLAS_OP_T;
  const int64_t aBase = batch * a.stride, bBase = batch * b.stride;
  opA.resize(m * k);
  opB.resize(n * k);
  for (uint64_t i = 0; i < m; ++i)
    for (uint64_t l = 0; l < k; ++l)
      opA[i * k + l] = load(A, a.type,
                            ta ? aBase + int64_t(l + i * a.ld)
                               : aBase + int64_t(i + l * a.ld));
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t l = 0; l < k; ++l)
      opB[j * k + l] = load(B, b.type,
                            tb ? bBase + int64_t(j + l * b.ld)
                               : bBase + int64_t(l + j * b.ld));
}

/// sums[c * m + i] = sum over l, in order, of op(A)(i, l) op(B)(l, j0 + c)
/// in double (a product of two floats is exact there), for c < columns.
inline void dotProducts(const std::vector<double> &opA,
                        const std::vector<double> &opB, uint64_t j0,
                        uint64_t columns, uint64_t m, uint64_t k,
                        std::vector<double> &sums) {
  sums.assign(columns * m, 0.0);
  const double *b0 = opB.data() + j0 * k;
  for (uint64_t i = 0; i < m; ++i) {
    const double *row = opA.data() + i * k;
    if (columns == kColumnsAtOnce) {
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      for (uint64_t l = 0; l < k; ++l) {
        const double x = row[l];
        s0 += x * b0[l];
        s1 += x * b0[k + l];
        s2 += x * b0[2 * k + l];
        s3 += x * b0[3 * k + l];
      }
      sums[i] = s0;
      sums[m + i] = s1;
      sums[2 * m + i] = s2;
      sums[3 * m + i] = s3;
      continue;
    }
    for (uint64_t c = 0; c < columns; ++c) {
      double sum = 0.0;
      for (uint64_t l = 0; l < k; ++l)
        sum += row[l] * b0[c * k + l];
      sums[c * m + i] = sum;
    }
  }
}

} // namespace tpcrt::emu::lt

/// The algorithms the emulated heuristic offers at most.
constexpr int kEmulatedAlgorithms = 3;

inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t preference, int requested,
    cublasLtMatmulHeuristicResult_t *results, int *found) {
  tpcrt::emu::noteResourceCall("cublasLtMatmulAlgoGetHeuristic");
  *found = 0;
  if (!handle || !desc || !a || !b || !c || !d || !preference || requested < 1)
    return tpcrt::emu::lt::refuse("heuristic: a missing argument");
  uint64_t m, n, k;
  if (cublasStatus_t s =
          tpcrt::emu::lt::problemOf(*desc, *a, *b, *c, *d, m, n, k))
    return s;
  // Up to kEmulatedAlgorithms algorithms (1, 2, ...), all the same product
  // here: a caller that takes another than the first (TPCRT_CUDA_GEMM_ALGO)
  // must still hand cublasLtMatmul one the heuristic gave.
  *found = requested < kEmulatedAlgorithms ? requested : kEmulatedAlgorithms;
  for (int i = 0; i < *found; ++i) {
    results[i] = {};
    results[i].algo.data[0] = static_cast<uint64_t>(i + 1);
    results[i].state = CUBLAS_STATUS_SUCCESS;
    results[i].wavesCount = 1.0f;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/// Checks the call as cuBLASLt would, then enqueues the product on
/// `stream` with the descriptor's and layouts' values as they are now (a
/// later change of the shared descriptor's bias pointer does not reach a
/// matmul already enqueued, as on a GPU).
inline cublasStatus_t
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t descHandle,
               const void *alpha, const void *A, cublasLtMatrixLayout_t aHandle,
               const void *B, cublasLtMatrixLayout_t bHandle, const void *beta,
               const void *C, cublasLtMatrixLayout_t cHandle, void *D,
               cublasLtMatrixLayout_t dHandle, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  tpcrt::emu::Internal internal;
  using namespace tpcrt::emu;
  using namespace tpcrt::emu::lt;
  if (!handle || !descHandle || !aHandle || !bHandle || !cHandle || !dHandle ||
      !algo || algo->data[0] < 1 || algo->data[0] > kEmulatedAlgorithms)
    return refuse("matmul: a missing argument or an algorithm the heuristic "
                  "did not give");
  // Values, not the handles: the enqueued product keeps them.
  const cublasLtMatmulDescOpaque_t desc = *descHandle;
  const cublasLtMatrixLayoutOpaque_t a = *aHandle, b = *bHandle, c = *cHandle,
                                     d = *dHandle;
  uint64_t m, n, k;
  if (cublasStatus_t s = problemOf(desc, a, b, c, d, m, n, k))
    return s;
  if (workspaceBytes && !isDeviceRange(workspace, workspaceBytes))
    return refuse("matmul: the workspace is not inside one allocation");
  struct Operand {
    const char *name;
    const void *p;
    const cublasLtMatrixLayoutOpaque_t *layout;
  } operands[] = {{"A", A, &a}, {"B", B, &b}, {"C", C, &c}, {"D", D, &d}};
  const float alphaValue = *static_cast<const float *>(alpha);
  const float betaValue = *static_cast<const float *>(beta);
  for (const Operand &o : operands) {
    if (o.name[0] == 'C' && betaValue == 0.0f)
      continue;
    size_t bytes = spanBytes(*o.layout);
    if (bytes && !isDeviceRange(o.p, bytes))
      return refuse(std::string("matmul: ") + o.name + "'s " +
                    std::to_string(bytes) +
                    " bytes are not inside one allocation");
  }
  if (C == D && (c.ld != d.ld || c.stride != d.stride))
    return refuse("matmul: C is D with another layout");
  const bool bias = hasBias(desc.epilogue), gelu = hasGelu(desc.epilogue),
             geluGrad = hasGeluGrad(desc.epilogue),
             aux = hasAux(desc.epilogue) && !geluGrad;
  if (geluGrad) {
    cublasLtMatrixLayoutOpaque_t auxLayout = d;
    auxLayout.ld = desc.auxLd;
    auxLayout.stride = desc.auxStride;
    if (!isDeviceRange(desc.aux, spanBytes(auxLayout)))
      return refuse("matmul: the GeLU gradient's aux matrix is not inside "
                    "one allocation");
  }
  if (bias && !isDeviceRange(desc.bias, m * typeBytes(d.type)))
    return refuse("matmul: the bias epilogue's vector is not inside one "
                  "allocation");
  const bool gradA = desc.epilogue == CUBLASLT_EPILOGUE_BGRADA,
             gradB = desc.epilogue == CUBLASLT_EPILOGUE_BGRADB;
  if ((gradA || gradB) &&
      !isDeviceRange(desc.bias, (gradA ? m : n) * typeBytes(d.type)))
    return refuse("matmul: the bias gradient's vector is not inside one "
                  "allocation");
  if (aux) {
    cublasLtMatrixLayoutOpaque_t auxLayout = d;
    auxLayout.ld = desc.auxLd;
    auxLayout.stride = desc.auxStride;
    if (d.batch > 1 && desc.auxStride == 0)
      return refuse("matmul: a batched aux matrix without a batch stride");
    if (!isDeviceRange(desc.aux, spanBytes(auxLayout)))
      return refuse("matmul: the aux matrix is not inside one allocation");
  }
  enqueueWork(stream, [=] {
    Internal internal; // the packed operands are the emulation's memory
    const bool ta = desc.transA == CUBLAS_OP_T, tb = desc.transB == CUBLAS_OP_T;
    std::vector<double> opA, opB, sums;
    for (int64_t batch = 0; batch < d.batch; ++batch) {
      packOperands(desc, a, A, b, B, batch, m, n, k, opA, opB);
      const int64_t cBase = batch * c.stride, dBase = batch * d.stride,
                    auxBase = batch * desc.auxStride;
      for (uint64_t j0 = 0; j0 < n; j0 += kColumnsAtOnce) {
        const uint64_t columns = std::min<uint64_t>(kColumnsAtOnce, n - j0);
        dotProducts(opA, opB, j0, columns, m, k, sums);
        for (uint64_t j = j0; j < j0 + columns; ++j)
          for (uint64_t i = 0; i < m; ++i) {
            float v = static_cast<float>(alphaValue * sums[(j - j0) * m + i]);
            if (betaValue != 0.0f)
              v += betaValue * load(C, c.type, cBase + int64_t(i + j * c.ld));
            if (bias)
              v += load(desc.bias, d.type, int64_t(i));
            if (aux)
              store(desc.aux, d.type, auxBase + int64_t(i + j * desc.auxLd), v);
            if (gelu)
              v = geluTanh(v);
            if (geluGrad)
              v *= geluTanhDerivative(load(
                  desc.aux, d.type, auxBase + int64_t(i + j * desc.auxLd)));
            store(D, d.type, dBase + int64_t(i + j * d.ld), v);
          }
      }
    }
    // The bias gradient (unbatched): each row of op(A), or column of
    // op(B), summed over k, rounded once to D's type. Row i of op(A) is
    // A's row i (N) or column i (T); column j of op(B) is B's column j (N)
    // or row j (T).
    if (gradA || gradB) {
      const void *x = gradA ? A : B;
      const cublasLtMatrixLayoutOpaque_t &layout = gradA ? a : b;
      // The summed line's elements lie ld apart when it runs along a
      // stored column, 1 apart along a stored row; lines the other way.
      const bool alongColumn = gradA ? !ta : tb;
      const int64_t along = alongColumn ? layout.ld : 1,
                    across = alongColumn ? 1 : layout.ld;
      void *vector = const_cast<void *>(desc.bias);
      for (uint64_t i = 0; i < (gradA ? m : n); ++i) {
        double sum = 0.0;
        for (uint64_t l = 0; l < k; ++l)
          sum += load(x, layout.type, int64_t(i) * across + int64_t(l) * along);
        store(vector, d.type, int64_t(i), static_cast<float>(sum));
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

#endif // TPCRT_TEST_EMULATION_CUBLASLT_H
