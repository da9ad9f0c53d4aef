//===- Gemm.cpp - linear and batch_matmul through cuBLASLt ----------------===//
//
// A GEMM call's GemmSpec (GemmSpec.h) says which of its tensors are
// cuBLASLt's A, B and bias, the column-major problem and what goes through
// fp32 scratch. At prepare each call gets its spec and, by the spec's key,
// a shared plan: the matmul descriptor (fp32 compute, TF32 only for fp32
// inputs when allowed; the bias epilogue, or bias and GeLU for a linear
// fused with its gelu), the matrix layouts and the
// algorithm the heuristic picks for the fixed workspace and the tensors'
// alignment. A run enqueues the staging casts, the matmul and the output
// cast on the call's stream, with nothing to look up but its kernel index.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "FusionPlan.h"
#include "GemmSpec.h"
#include "GemmStaging.h"

#include "tpcrt/Executable.h"
#include "tpcrt/ExecutableDType.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

/// The cuBLASLt workspace every plan is chosen for (the device places it in
/// its one allocation).
constexpr uint64_t kWorkspaceBytes = uint64_t(32) << 20;

/// TPCRT_CUDA_GEMM_ALGO's largest value: the heuristic's results asked for.
constexpr int kMostGemmAlgo = 7;

/// TPCRT_CUDA_GEMM_ALGO=N (0 to kMostGemmAlgo; unset: 0): every plan runs
/// the heuristic's N-th algorithm instead of its first, where it gives that
/// many (else its last), so that a benchmark can time the others
/// (test/gpu/device-check.sh 6a). nullopt with `error` set where the value
/// is not one.
std::optional<int> gemmAlgoChoice(std::string &error) {
  const char *text = std::getenv("TPCRT_CUDA_GEMM_ALGO");
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > kMostGemmAlgo) {
    error = std::string("TPCRT_CUDA_GEMM_ALGO=") + text +
            ": expected an integer from 0 to " + std::to_string(kMostGemmAlgo) +
            " (the heuristic's algorithm to run; 0, its first, by default)";
    return std::nullopt;
  }
  return static_cast<int>(value);
}

std::string cublasText(cublasStatus_t status) {
  return std::string(cublasLtGetStatusName(status)) + " (" +
         cublasLtGetStatusString(status) + ")";
}

Status checkLt(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::error(std::string(what) + " failed: " + cublasText(status));
}

cudaDataType_t cudaTypeOf(GemmType type) {
  switch (type) {
  case GemmType::BF16:
    return CUDA_R_16BF;
  case GemmType::F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

Storage gemmStorage(GemmType type) {
  switch (type) {
  case GemmType::BF16:
    return Storage::BF16;
  case GemmType::F16:
    return Storage::F16;
  default:
    return Storage::F32;
  }
}

bool isAligned(const void *p, uint32_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

/// One cuBLASLt problem, shared by the calls of its key.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo = {};

  LtPlan() = default;
  LtPlan(const LtPlan &) = delete;
  LtPlan &operator=(const LtPlan &) = delete;
  ~LtPlan() {
    for (cublasLtMatrixLayout_t layout : {a, b, d})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t *p) const {
    cublasLtMatmulPreferenceDestroy(p);
  }
};

/// A column-major [rows, cols] matrix with leading dimension ld, `batch`
/// of them `stride` elements apart.
Status makeLayout(cublasLtMatrixLayout_t &layout, GemmType type, int64_t rows,
                  int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  if (Status s =
          checkLt(cublasLtMatrixLayoutCreate(&layout, cudaTypeOf(type),
                                             static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld),
                  "cublasLtMatrixLayoutCreate");
      !s)
    return s;
  if (batch <= 1)
    return Status::ok();
  int32_t count = static_cast<int32_t>(batch);
  if (Status s = checkLt(
          cublasLtMatrixLayoutSetAttribute(
              layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      !s)
    return s;
  return checkLt(cublasLtMatrixLayoutSetAttribute(
                     layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                     &stride, sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

/// A planned call: its spec and its shared plan (null when there is
/// nothing to multiply); for a call fused with its next kernel, the plan
/// with the fused epilogue too (a call has at most one: a linear's GeLU,
/// an input gradient's GeLU gradient, a weight gradient's bias gradient).
struct CallPlan {
  bool planned = false;
  GemmSpec spec;
  GemmKey key;
  const LtPlan *plan = nullptr;
  GemmKey fusedKey;
  const LtPlan *fusedPlan = nullptr;
  /// The bias gradient's vector in scratch at this offset (copied into
  /// place after the matmul), and its bytes; none when not staged.
  bool biasGradStaged = false;
  uint64_t biasGradScratch = 0, biasGradBytes = 0;
};

std::string kernelText(const KernelCall &call) {
  return "kernel " + std::to_string(call.index) + " (" + opCodeName(call.op) +
         ")";
}

} // namespace

struct GemmEngine::Impl {
  cublasLtHandle_t handle = nullptr;
  bool allowTf32 = false;
  /// TPCRT_CUDA_GEMM_ALGO (gemmAlgoChoice), and whether a plan has said
  /// that it runs an earlier one.
  int algoChoice = 0;
  mutable bool saidFewerAlgos = false;
  void *workspace = nullptr;
  PlanCache<LtPlan> cache;
  /// By KernelCall::index.
  std::vector<CallPlan> calls;

  ~Impl() {
    cache.clear();
    if (handle)
      cublasLtDestroy(handle);
  }

  Status build(const GemmKey &key, LtPlan &plan) const;
  /// The plan() of `call`, or an error.
  Status plannedEntry(const KernelCall &call, CallPlan *&entry) {
    if (call.index >= calls.size() || !calls[call.index].planned)
      return Status::error(kernelText(call) + ": not planned");
    entry = &calls[call.index];
    return Status::ok();
  }
  /// Makes or finds the plan of `key`, a fused form of `entry`'s call, and
  /// keeps it as the entry's fused plan; an error names the call.
  Status planFused(const KernelCall &call, CallPlan &entry,
                   const GemmKey &key) {
    LtPlan *plan = nullptr;
    Status s = cache.get(
        key, [&](const GemmKey &k, LtPlan &made) { return build(k, made); },
        plan);
    if (!s)
      return s.withContext(kernelText(call) + " (" + describeGemm(entry.spec) +
                           ")");
    entry.fusedKey = key;
    entry.fusedPlan = plan;
    return Status::ok();
  }
  Status setDesc(LtPlan &plan, cublasLtMatmulDescAttributes_t attribute,
                 const void *value, size_t bytes, const char *name) const {
    return checkLt(
        cublasLtMatmulDescSetAttribute(plan.desc, attribute, value, bytes),
        name);
  }
};

Status GemmEngine::Impl::build(const GemmKey &key, LtPlan &plan) const {
  if (key.batch > INT32_MAX)
    return Status::error("cuBLASLt batches at most " +
                         std::to_string(INT32_MAX) + " matrices, not " +
                         std::to_string(key.batch));
  // fp32 inputs use TF32 only when allowed: the device check compares fp32
  // GEMMs with the CPU's within 1e-5.
  bool tf32 = allowTf32 && key.inputType == GemmType::F32;
  cublasComputeType_t compute =
      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (Status s =
          checkLt(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F),
                  "cublasLtMatmulDescCreate");
      !s)
    return s;
  cublasOperation_t transA = key.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t transB = key.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (Status s = setDesc(plan, CUBLASLT_MATMUL_DESC_TRANSA, &transA,
                         sizeof transA, "set TRANSA");
      !s)
    return s;
  if (Status s = setDesc(plan, CUBLASLT_MATMUL_DESC_TRANSB, &transB,
                         sizeof transB, "set TRANSB");
      !s)
    return s;
  cublasLtEpilogue_t epilogue =
      key.gelu == GemmGelu::GeluGrad ? CUBLASLT_EPILOGUE_DGELU
      : key.gelu == GemmGelu::GeluAux
          ? (key.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                      : CUBLASLT_EPILOGUE_GELU_AUX)
      : key.gelu == GemmGelu::Gelu
          ? (key.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
      : key.bias                        ? CUBLASLT_EPILOGUE_BIAS
      : key.biasGrad == GemmBiasGrad::A ? CUBLASLT_EPILOGUE_BGRADA
      : key.biasGrad == GemmBiasGrad::B ? CUBLASLT_EPILOGUE_BGRADB
                                        : CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    if (Status s = setDesc(plan, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                           sizeof epilogue, "set EPILOGUE");
        !s)
      return s;
  // The heuristic reads only the bias and aux pointers' alignment: give it
  // addresses exactly as aligned as the runs'. Runs set the real ones.
  auto setProbe = [&](cublasLtMatmulDescAttributes_t attribute,
                      uint32_t alignment, const char *name) {
    const void *probe =
        reinterpret_cast<const void *>(static_cast<uintptr_t>(alignment));
    return setDesc(plan, attribute, &probe, sizeof probe, name);
  };
  // The bias gradient's vector is the bias pointer too (written), of D's
  // type: cuBLASLt's default when BIAS_DATA_TYPE is unset.
  if (key.bias || key.biasGrad != GemmBiasGrad::None)
    if (Status s = setProbe(CUBLASLT_MATMUL_DESC_BIAS_POINTER, key.alignBias,
                            "set BIAS_POINTER");
        !s)
      return s;
  if (key.gelu == GemmGelu::GeluAux || key.gelu == GemmGelu::GeluGrad) {
    // The aux matrix (written by GELU_AUX, read by DGELU) is laid out as D,
    // in D's type: cuBLASLt's default when EPILOGUE_AUX_DATA_TYPE is unset
    // (set, a combination it does not support fails only at
    // cublasLtMatmul, after the heuristic took it).
    int64_t ld = key.ldc, stride = key.strideC;
    if (Status s = setProbe(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                            key.alignAux, "set EPILOGUE_AUX_POINTER");
        !s)
      return s;
    if (Status s = setDesc(plan, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld,
                           sizeof ld, "set EPILOGUE_AUX_LD");
        !s)
      return s;
    if (key.batch > 1)
      if (Status s =
              setDesc(plan, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
                      &stride, sizeof stride, "set EPILOGUE_AUX_BATCH_STRIDE");
          !s)
        return s;
  }
  if (Status s = makeLayout(plan.a, key.inputType, key.transA ? key.k : key.m,
                            key.transA ? key.m : key.k, key.lda, key.batch,
                            key.strideA);
      !s)
    return s;
  if (Status s = makeLayout(plan.b, key.inputType, key.transB ? key.n : key.k,
                            key.transB ? key.k : key.n, key.ldb, key.batch,
                            key.strideB);
      !s)
    return s;
  if (Status s = makeLayout(plan.d, key.outputType, key.m, key.n, key.ldc,
                            key.batch, key.strideC);
      !s)
    return s;

  cublasLtMatmulPreference_t rawPreference = nullptr;
  if (Status s = checkLt(cublasLtMatmulPreferenceCreate(&rawPreference),
                         "cublasLtMatmulPreferenceCreate");
      !s)
    return s;
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>
      preference(rawPreference);
  uint64_t workspaceBytes = kWorkspaceBytes;
  struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    uint32_t value;
  } alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignA},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignB},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignD},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignD}};
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      rawPreference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
      sizeof workspaceBytes);
  for (const auto &alignment : alignments)
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulPreferenceSetAttribute(
          rawPreference, alignment.attribute, &alignment.value,
          sizeof alignment.value);
  if (Status s = checkLt(status, "cublasLtMatmulPreferenceSetAttribute"); !s)
    return s;

  cublasLtMatmulHeuristicResult_t results[kMostGemmAlgo + 1] = {};
  int found = 0;
  status = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.a, plan.b,
                                          plan.d, plan.d, rawPreference,
                                          algoChoice + 1, results, &found);
  const cublasLtMatmulHeuristicResult_t &result = results[0];
  if (status != CUBLAS_STATUS_SUCCESS || found < 1 ||
      result.state != CUBLAS_STATUS_SUCCESS)
    return Status::error(
        "cuBLASLt has no algorithm for " + describeGemmKey(key) +
        (tf32 ? ", TF32" : "") + " within " + std::to_string(kWorkspaceBytes) +
        " bytes of workspace" +
        (status != CUBLAS_STATUS_SUCCESS ? ": " + cublasText(status)
         : found > 0 && result.state != CUBLAS_STATUS_SUCCESS
             ? ": " + cublasText(result.state)
             : ""));
  // TPCRT_CUDA_GEMM_ALGO's, or the last usable one before it.
  int pick = std::min(algoChoice, found - 1);
  while (pick > 0 && results[pick].state != CUBLAS_STATUS_SUCCESS)
    --pick;
  if (pick != algoChoice && !saidFewerAlgos) {
    saidFewerAlgos = true;
    std::fprintf(stderr,
                 "tpcrt: TPCRT_CUDA_GEMM_ALGO=%d: cuBLASLt's heuristic gave "
                 "%d usable algorithm(s) for %s; it runs its #%d (and so "
                 "wherever it gives fewer)\n",
                 algoChoice, pick + 1, describeGemmKey(key).c_str(), pick);
  }
  plan.algo = results[pick].algo;
  return Status::ok();
}

bool cuda::isGemmKernel(fb::OpCode op) {
  return op == fb::OpCode::Linear || op == fb::OpCode::LinearInputGrad ||
         op == fb::OpCode::LinearWeightGrad ||
         op == fb::OpCode::LinearWeightGradAccumulate ||
         op == fb::OpCode::BatchMatmul;
}

std::string cuda::unalignedRowsNote(const Program &program) {
  constexpr int64_t kRowAlignmentBytes = 16;
  auto rowBytes = [](const TensorRef &t) -> int64_t {
    return t.shape.empty()
               ? 0
               : t.shape.back() *
                     static_cast<int64_t>(executableDTypeSize(t.dtype));
  };
  size_t products = 0, unaligned = 0;
  std::string first;
  for (const KernelCall &call : program.calls) {
    if (!isGemmKernel(call.op) || call.operands.empty() ||
        (call.operands[0].dtype != fb::DType::BF16 &&
         call.operands[0].dtype != fb::DType::F16))
      continue;
    ++products;
    const TensorRef *odd = nullptr;
    for (const auto *refs : {&call.operands, &call.results})
      for (const TensorRef &t : *refs)
        if (!odd && rowBytes(t) % kRowAlignmentBytes != 0)
          odd = &t;
    if (!odd)
      continue;
    if (unaligned++ == 0) {
      const char *name = opCodeName(call.op);
      first = "kernel " + std::to_string(call.index) + " " +
              (name ? name : "?") + ": a row of " +
              std::to_string(odd->shape.back()) + " elements";
    }
  }
  if (unaligned == 0)
    return "";
  return "tpcrt: note: " + std::to_string(unaligned) + " of " +
         std::to_string(products) +
         " 16-bit matrix products have rows of no whole 16 bytes (" + first +
         "): cuBLASLt runs them off its tensor-core fast kernels (an H100 "
         "ran GPT-2's unpadded LM head at a tenth of its peak); "
         "tpc-compile --target cuda pads the vocabulary (--pad-vocab)";
}

GemmEngine::GemmEngine() : impl_(std::make_unique<Impl>()) {}
GemmEngine::~GemmEngine() = default;

Status GemmEngine::init(bool allowTf32) {
  impl_->allowTf32 = allowTf32;
  std::string error;
  std::optional<int> choice = gemmAlgoChoice(error);
  if (!choice)
    return Status::error(error);
  impl_->algoChoice = *choice;
  if (impl_->handle)
    return Status::ok();
  return checkLt(cublasLtCreate(&impl_->handle), "cublasLtCreate");
}

Status GemmEngine::plan(const KernelCall &call, uint64_t &scratchBytes) {
  scratchBytes = 0;
  if (!impl_->handle)
    return Status::error(kernelText(call) +
                         ": the GEMM engine is not initialized");
  CallPlan entry;
  entry.spec = gemmSpecOf(call);
  if (!entry.spec.valid)
    return Status::error(kernelText(call) + ": not a GEMM kernel");
  // An accumulating call reads D as C: a staged D would not hold the sum.
  if (entry.spec.accumulate && entry.spec.stageOutput)
    return Status::error(kernelText(call) +
                         ": accumulates into a result cuBLASLt cannot write "
                         "directly (" +
                         describeGemm(entry.spec) + ")");
  entry.key = gemmKeyOf(entry.spec);
  if (!entry.spec.empty() && !entry.spec.fillOnly()) {
    LtPlan *plan = nullptr;
    Status s = impl_->cache.get(
        entry.key,
        [&](const GemmKey &key, LtPlan &made) {
          return impl_->build(key, made);
        },
        plan);
    if (!s)
      return s.withContext(kernelText(call) + " (" + describeGemm(entry.spec) +
                           ")");
    entry.plan = plan;
  }
  entry.planned = true;
  if (impl_->calls.size() <= call.index)
    impl_->calls.resize(static_cast<size_t>(call.index) + 1);
  impl_->calls[call.index] = entry;
  scratchBytes = entry.spec.scratchBytes;
  return Status::ok();
}

Status GemmEngine::planGelu(const KernelCall &linear, const KernelCall &gelu,
                            bool aux) {
  CallPlan *planned = nullptr;
  if (Status s = impl_->plannedEntry(linear, planned); !s)
    return s;
  CallPlan &entry = *planned;
  if (linear.op != fb::OpCode::Linear || gelu.results.size() != 1)
    return Status::error(kernelText(linear) + " and " + kernelText(gelu) +
                         ": not a linear and its gelu");
  if (const char *why = geluEpilogueRefusal(entry.spec, aux))
    return Status::error(kernelText(linear) + ": no GeLU epilogue: " + why);
  return impl_->planFused(
      linear, entry,
      geluKeyOf(entry.spec, aux, gemmAlignmentOf(gelu.results[0])));
}

Status GemmEngine::planGeluGrad(const KernelCall &inputGrad,
                                const KernelCall &geluGrad) {
  CallPlan *planned = nullptr;
  if (Status s = impl_->plannedEntry(inputGrad, planned); !s)
    return s;
  CallPlan &entry = *planned;
  if (inputGrad.op != fb::OpCode::LinearInputGrad ||
      geluGrad.op != fb::OpCode::GeluGrad || geluGrad.operands.size() != 2 ||
      geluGrad.results.size() != 1)
    return Status::error(kernelText(inputGrad) + " and " +
                         kernelText(geluGrad) +
                         ": not an input gradient and its gelu_grad");
  if (const char *why = geluGradEpilogueRefusal(entry.spec))
    return Status::error(kernelText(inputGrad) +
                         ": no GeLU gradient epilogue: " + why);
  return impl_->planFused(inputGrad, entry,
                          geluGradKeyOf(entry.spec,
                                        gemmAlignmentOf(geluGrad.results[0]),
                                        gemmAlignmentOf(geluGrad.operands[1])));
}

Status GemmEngine::planBiasGrad(const KernelCall &weightGrad,
                                const KernelCall &sum, bool staged,
                                uint64_t &scratchBytes) {
  scratchBytes = 0;
  CallPlan *planned = nullptr;
  if (Status s = impl_->plannedEntry(weightGrad, planned); !s)
    return s;
  CallPlan &entry = *planned;
  if ((weightGrad.op != fb::OpCode::LinearWeightGrad &&
       weightGrad.op != fb::OpCode::LinearWeightGradAccumulate) ||
      sum.op != fb::OpCode::SumTo || sum.operands.size() != 1 ||
      sum.results.size() != 1 || weightGrad.operands.size() < 2 ||
      sum.operands[0].buffer != weightGrad.operands[1].buffer)
    return Status::error(kernelText(weightGrad) + " and " + kernelText(sum) +
                         ": not a weight gradient and the sum of its dY");
  GemmBiasGrad which = GemmBiasGrad::None;
  const TensorRef &vector = sum.results[0];
  if (const char *why = biasGradEpilogueRefusal(entry.spec, /*summed=*/1,
                                                gemmTypeOf(vector.dtype),
                                                vector.elements, which))
    return Status::error(kernelText(weightGrad) +
                         ": no bias gradient epilogue: " + why);
  if (Status s = impl_->planFused(
          weightGrad, entry,
          biasGradKeyOf(entry.spec, which,
                        staged ? 256 : gemmAlignmentOf(vector)));
      !s)
    return s;
  entry.biasGradStaged = staged;
  entry.biasGradBytes = vector.bytes;
  // After the call's own staging, on a 256-byte boundary.
  entry.biasGradScratch = (entry.spec.scratchBytes + 255) / 256 * 256;
  scratchBytes =
      staged ? entry.biasGradScratch + vector.bytes : entry.spec.scratchBytes;
  return Status::ok();
}

Status GemmEngine::planAdd(const KernelCall &product, const KernelCall &add) {
  CallPlan *planned = nullptr;
  if (Status s = impl_->plannedEntry(product, planned); !s)
    return s;
  CallPlan &entry = *planned;
  if ((product.op != fb::OpCode::Linear &&
       product.op != fb::OpCode::LinearInputGrad) ||
      add.op != fb::OpCode::Add || add.operands.size() != 2 ||
      add.results.size() != 1 || product.results.size() != 1)
    return Status::error(kernelText(product) + " and " + kernelText(add) +
                         ": not a product and the add of it");
  const GemmSpec &spec = entry.spec;
  if (spec.empty() || spec.fillOnly() || spec.hasBias() || spec.accumulate)
    return Status::error(kernelText(product) +
                         ": no added C: the product is empty, has a bias or "
                         "accumulates");
  // C and D have D's layout and type: an output cuBLASLt does not write
  // in the result's type (staged) cannot take the addend.
  if (spec.stageOutput)
    return Status::error(kernelText(product) +
                         ": no added C: the output is staged (" +
                         describeGemm(spec) + ")");
  GemmKey key = entry.key;
  const TensorRef &addend = add.operands[fusion::addendOperand(product, add)];
  key.alignD =
      std::min(gemmAlignmentOf(add.results[0]), gemmAlignmentOf(addend));
  return impl_->planFused(product, entry, key);
}

uint64_t GemmEngine::workspaceBytes() const { return kWorkspaceBytes; }

void GemmEngine::setWorkspace(void *workspace) { impl_->workspace = workspace; }

size_t GemmEngine::planCount() const { return impl_->cache.size(); }

Status GemmEngine::run(const KernelCall &call, const KernelArgs &args,
                       const GemmEpilogue &epilogue) {
  void *geluResult = epilogue.geluResult;
  void *biasGradResult = epilogue.biasGrad;
  CallPlan *planned = nullptr;
  if (Status st = impl_->plannedEntry(call, planned); !st)
    return st;
  const CallPlan &entry = *planned;
  const bool fused = geluResult || biasGradResult || epilogue.sum;
  if (fused && !entry.fusedPlan)
    return Status::error(kernelText(call) + ": no fused epilogue planned");
  const GemmSpec &s = entry.spec;
  if (s.empty())
    return Status::ok();
  void *result = args.results[0];
  if (s.fillOnly() && s.accumulate)
    return Status::ok(); // nothing to add
  if (s.fillOnly()) {
    Status st =
        gemmFill(s.hasBias() ? args.operands[s.biasOperand] : nullptr,
                 gemmStorage(s.biasType), s.m, result,
                 gemmStorage(s.resultType), s.elementsResult, args.stream);
    return st ? st : st.withContext(kernelText(call));
  }
  if (!impl_->workspace)
    return Status::error(kernelText(call) + ": no cuBLASLt workspace set");
  const uint64_t needs = biasGradResult && entry.biasGradStaged
                             ? entry.biasGradScratch + entry.biasGradBytes
                             : s.scratchBytes;
  if (args.scratchBytes < needs || (needs && !args.scratch))
    return Status::error(kernelText(call) + ": " +
                         std::to_string(args.scratchBytes) +
                         " bytes of scratch, needs " + std::to_string(needs));

  auto *scratch = static_cast<char *>(args.scratch);
  auto stage = [&](bool staged, const void *&p, GemmType from, GemmType to,
                   int64_t elements, uint64_t offset) {
    if (!staged)
      return Status::ok();
    void *copy = scratch + offset;
    Status st = gemmCast(p, gemmStorage(from), copy, gemmStorage(to), elements,
                         args.stream);
    p = copy;
    return st;
  };
  const void *a = args.operands[s.aOperand];
  const void *b = args.operands[s.bOperand];
  // The bias, or the bias gradient's vector (written by the epilogue; in
  // scratch when staged).
  void *vector = biasGradResult && entry.biasGradStaged
                     ? scratch + entry.biasGradScratch
                     : biasGradResult;
  const void *bias = s.hasBias() ? args.operands[s.biasOperand] : vector;
  Status st = stage(s.stageA, a, s.aType, s.inputType, s.elementsA, s.scratchA);
  if (st)
    st = stage(s.stageB, b, s.bType, s.inputType, s.elementsB, s.scratchB);
  if (st)
    st = stage(s.stageBias, bias, s.biasType, s.outputType, s.elementsBias,
               s.scratchBias);
  if (!st)
    return st.withContext(kernelText(call));
  void *d = s.stageOutput ? scratch + s.scratchOutput : result;
  // With the GeLU epilogue D is the gelu's result and the linear's result
  // the aux matrix (unless the gelu writes over it: then it is not kept);
  // with the GeLU gradient epilogue D is the gelu_grad's result and the aux
  // matrix the GeLU's input (read).
  const void *aux = nullptr;
  if (geluResult) {
    aux = entry.fusedKey.gelu == GemmGelu::GeluAux    ? result
          : entry.fusedKey.gelu == GemmGelu::GeluGrad ? epilogue.geluInput
                                                      : nullptr;
    d = geluResult;
  }
  // With an added C (the add's other operand, in D's layout), D is the
  // add's result; else C is D, read only when accumulating.
  if (epilogue.sum)
    d = epilogue.sum;
  const void *c = epilogue.sum ? epilogue.addend : d;

  // The plan's algorithm assumed these alignments (from the tensors'
  // offsets and a 256-byte aligned arena).
  const GemmKey &key = fused ? entry.fusedKey : entry.key;
  if (!isAligned(a, key.alignA) || !isAligned(b, key.alignB) ||
      !isAligned(d, key.alignD) || !isAligned(c, key.alignD) ||
      (bias && !isAligned(bias, key.alignBias)) ||
      (aux && !isAligned(aux, key.alignAux)))
    return Status::error(kernelText(call) +
                         ": a GEMM operand is less aligned than its offset "
                         "(is the arena 256-byte aligned?)");

  const LtPlan &plan = fused ? *entry.fusedPlan : *entry.plan;
  if (aux) {
    cublasStatus_t status = cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
        sizeof aux);
    if (status != CUBLAS_STATUS_SUCCESS)
      return Status::error(
          kernelText(call) +
          ": setting the aux pointer failed: " + cublasText(status));
  }
  // Runs are serialized on the device's host thread: setting the shared
  // descriptor's bias pointer just before the matmul is safe.
  if (bias) {
    cublasStatus_t status = cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (status != CUBLAS_STATUS_SUCCESS)
      return Status::error(
          kernelText(call) +
          ": setting the bias pointer failed: " + cublasText(status));
  }
  // beta = 1 adds C: D itself in place, or the add's other operand.
  float alpha = s.alpha, beta = s.accumulate || epilogue.sum ? 1.0f : 0.0f;
  cublasStatus_t status = cublasLtMatmul(
      impl_->handle, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, c, plan.d,
      d, plan.d, &plan.algo, impl_->workspace, kWorkspaceBytes, args.stream);
  if (status != CUBLAS_STATUS_SUCCESS)
    return Status::error(kernelText(call) + ": cublasLtMatmul failed: " +
                         cublasText(status) + " (" + describeGemm(s) + ")");
  if (s.stageOutput) {
    st = gemmCast(d, gemmStorage(s.outputType), result,
                  gemmStorage(s.resultType), s.elementsResult, args.stream);
    if (!st)
      return st.withContext(kernelText(call));
  }
  if (vector != biasGradResult)
    if (cudaError_t err =
            cudaMemcpyAsync(biasGradResult, vector, entry.biasGradBytes,
                            cudaMemcpyDeviceToDevice, args.stream))
      return Status::error(kernelText(call) +
                           ": copying the bias gradient out of scratch: " +
                           cudaGetErrorString(err));
  return Status::ok();
}
