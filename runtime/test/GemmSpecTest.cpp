//===- GemmSpecTest.cpp - the CUDA GEMMs' cuBLAS problems, checked on CPU -===//
//
// Each GEMM kernel's GemmSpec (cuda/GemmSpec.h), evaluated with a naive
// implementation of column-major cublasGemmStridedBatched semantics plus
// cuBLASLt's bias epilogue, must give what the CPU kernel gives; the staging
// choices, the GeLU and bias gradient epilogues' conditions and keys, and
// the plan cache are
// checked without a GPU as well. ModelGemmsMatchCpu does the same for every
// GEMM of compiled models, and ModelGeluPairsTakeTheEpilogue checks that
// their linear + gelu pairs would run fused (ctest runtime.GemmSpecModels
// gives both the executables).
//
//===----------------------------------------------------------------------===//

#include "FusionPlan.h"
#include "GemmSpec.h"
#include "ModelPrograms.h"

#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

TensorRef tensor(fb::DType dtype, std::vector<int64_t> shape,
                 uint64_t offset = 0) {
  TensorRef t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.elements = 1;
  for (int64_t d : t.shape)
    t.elements *= d;
  t.bytes =
      static_cast<uint64_t>(t.elements) * (dtype == fb::DType::F32 ? 4 : 2);
  t.offset = offset;
  return t;
}

TensorRef f32(std::vector<int64_t> shape) {
  return tensor(fb::DType::F32, std::move(shape));
}

/// A kernel call with its sizes filled in by the loader's decoder.
KernelCall decoded(fb::OpCode op, std::vector<TensorRef> operands,
                   std::vector<TensorRef> results, uint32_t flags = 0,
                   std::vector<double> floats = {}) {
  KernelCall call;
  call.op = op;
  call.operands = std::move(operands);
  call.results = std::move(results);
  call.flags = flags;
  call.floatAttrs = std::move(floats);
  Status s = decodeKernel(call, Mesh{});
  EXPECT_TRUE(s.isOk()) << s.message();
  return call;
}

/// Column-major cublasGemmStridedBatched with beta 0 (1 when the call
/// accumulates: D starts as its accumulator operand, the last), then the
/// bias added to every column (CUBLASLT_EPILOGUE_BIAS), reading the call's
/// operands.
std::vector<float> evaluate(const GemmSpec &s,
                            const std::vector<std::vector<float>> &operands) {
  std::vector<float> d(static_cast<size_t>(s.batch * s.ldc * s.n), 0.0f);
  if (s.accumulate)
    std::copy(operands.back().begin(), operands.back().end(), d.begin());
  const float *a = operands[s.aOperand].data();
  const float *b = operands[s.bOperand].data();
  const float *bias = s.hasBias() ? operands[s.biasOperand].data() : nullptr;
  for (int64_t p = 0; p < s.batch; ++p) {
    const float *ap = a + p * s.strideA, *bp = b + p * s.strideB;
    float *dp = d.data() + p * s.strideC;
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t i = 0; i < s.m; ++i) {
        double sum = 0.0;
        for (int64_t l = 0; l < s.k; ++l) {
          double av = s.transA ? ap[l + i * s.lda] : ap[i + l * s.lda];
          double bv = s.transB ? bp[j + l * s.ldb] : bp[l + j * s.ldb];
          sum += av * bv;
        }
        float v = s.alpha * static_cast<float>(sum);
        if (bias)
          v += bias[i];
        dp[i + j * s.ldc] = s.accumulate ? dp[i + j * s.ldc] + v : v;
      }
  }
  return d;
}

std::vector<std::vector<float>> randomOperands(const KernelCall &call,
                                               uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> data;
  for (const TensorRef &t : call.operands) {
    data.emplace_back(static_cast<size_t>(t.elements));
    for (float &v : data.back())
      v = dist(rng);
  }
  return data;
}

/// What the CPU device computes for `call` (CpuDevice.cpp's dispatch).
std::vector<float> runCpu(const KernelCall &call,
                          const std::vector<std::vector<float>> &in) {
  std::vector<float> out(static_cast<size_t>(call.results[0].elements));
  auto layout =
      call.flags & 1 ? cpu::WeightLayout::OutIn : cpu::WeightLayout::InOut;
  Status s;
  switch (call.op) {
  case fb::OpCode::Linear:
    s = cpu::linear(in[0].data(), in[1].data(),
                    in.size() == 3 ? in[2].data() : nullptr, call.m, call.k,
                    call.n, layout, out.data());
    break;
  case fb::OpCode::LinearInputGrad:
    s = cpu::linearInputGrad(in[0].data(), in[1].data(), call.m, call.k, call.n,
                             layout, out.data());
    break;
  case fb::OpCode::LinearWeightGrad:
  case fb::OpCode::LinearWeightGradAccumulate: {
    // Accumulating: the result is the sum operand, updated in place.
    bool accumulate = call.op == fb::OpCode::LinearWeightGradAccumulate;
    if (accumulate)
      out = in[2];
    s = cpu::linearWeightGrad(in[0].data(), in[1].data(), call.m, call.k,
                              call.n, layout, out.data(), accumulate);
    break;
  }
  case fb::OpCode::BatchMatmul:
    s = cpu::batchMatmul(in[0].data(), in[1].data(), call.batch, call.m, call.k,
                         call.n, call.flags & 1, call.flags & 2,
                         static_cast<float>(call.floatAttrs[0]), out.data());
    break;
  default:
    ADD_FAILURE() << "not a GEMM";
  }
  EXPECT_TRUE(s.isOk()) << s.message();
  return out;
}

/// The spec of `call` evaluated equals the CPU kernel within 1e-5.
void expectMatchesCpu(const KernelCall &call, uint32_t seed = 1) {
  GemmSpec spec = gemmSpecOf(call);
  ASSERT_TRUE(spec.valid);
  SCOPED_TRACE(describeGemm(spec));
  // What cuBLAS requires of the stored matrices' leading dimensions.
  EXPECT_GE(spec.lda, std::max<int64_t>(1, spec.transA ? spec.k : spec.m));
  EXPECT_GE(spec.ldb, std::max<int64_t>(1, spec.transB ? spec.n : spec.k));
  // D is packed: the result's elements in cuBLAS's column-major order.
  EXPECT_EQ(spec.ldc, std::max<int64_t>(1, spec.m));
  EXPECT_EQ(spec.batch * spec.m * spec.n, call.results[0].elements);
  if (spec.batch > 1) {
    EXPECT_EQ(spec.strideC, spec.m * spec.n);
  }
  auto in = randomOperands(call, seed);
  std::vector<float> want = runCpu(call, in);
  std::vector<float> got = evaluate(spec, in);
  ASSERT_GE(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]),
              1e-5f * std::max(1.0f, std::fabs(want[i])))
        << "element " << i << ": spec " << got[i] << ", cpu " << want[i];
}

// m 5, k 7, n 3 (and batch 2): every size differs, so a swapped size or
// leading dimension shows.
constexpr int64_t M = 5, K = 7, N = 3;

KernelCall linearCall(bool outIn, bool bias) {
  std::vector<TensorRef> operands = {f32({M, K}),
                                     outIn ? f32({N, K}) : f32({K, N})};
  if (bias)
    operands.push_back(f32({N}));
  return decoded(fb::OpCode::Linear, operands, {f32({M, N})}, outIn);
}

} // namespace

TEST(GemmSpec, LinearMatchesCpu) {
  for (bool outIn : {false, true})
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(outIn ? "out_in" : "in_out") +
                   (bias ? " with bias" : ""));
      KernelCall call = linearCall(outIn, bias);
      EXPECT_EQ(call.m, M);
      EXPECT_EQ(call.k, K);
      EXPECT_EQ(call.n, N);
      expectMatchesCpu(call);
      GemmSpec spec = gemmSpecOf(call);
      EXPECT_EQ(spec.hasBias(), bias);
      EXPECT_EQ(spec.m, N); // the bias runs along cuBLAS's rows
      EXPECT_EQ(spec.alpha, 1.0f);
    }
}

TEST(GemmSpec, LinearWithLeadingDimsMatchesCpu) {
  // x [2, 3, k] flattens to m = 6; an out_in weight [n1, n2, k] to n = 4.
  KernelCall call =
      decoded(fb::OpCode::Linear, {f32({2, 3, K}), f32({2, 2, K}), f32({4})},
              {f32({2, 3, 4})}, 1);
  EXPECT_EQ(call.m, 6);
  EXPECT_EQ(call.n, 4);
  expectMatchesCpu(call, 7);
}

TEST(GemmSpec, LinearInputGradMatchesCpu) {
  for (bool outIn : {false, true}) {
    SCOPED_TRACE(outIn ? "out_in" : "in_out");
    KernelCall call = decoded(fb::OpCode::LinearInputGrad,
                              {f32({M, N}), outIn ? f32({N, K}) : f32({K, N})},
                              {f32({M, K})}, outIn);
    EXPECT_EQ(call.m, M);
    EXPECT_EQ(call.k, K);
    EXPECT_EQ(call.n, N);
    expectMatchesCpu(call, 2);
  }
}

TEST(GemmSpec, LinearWeightGradMatchesCpu) {
  for (bool outIn : {false, true}) {
    SCOPED_TRACE(outIn ? "out_in" : "in_out");
    KernelCall call =
        decoded(fb::OpCode::LinearWeightGrad, {f32({M, K}), f32({M, N})},
                {outIn ? f32({N, K}) : f32({K, N})}, outIn);
    EXPECT_EQ(call.m, M);
    EXPECT_EQ(call.k, K);
    EXPECT_EQ(call.n, N);
    expectMatchesCpu(call, 3);
  }
}

TEST(GemmSpec, LinearWeightGradAccumulateMatchesCpu) {
  for (bool outIn : {false, true}) {
    SCOPED_TRACE(outIn ? "out_in" : "in_out");
    TensorRef sum = outIn ? f32({N, K}) : f32({K, N});
    KernelCall call = decoded(fb::OpCode::LinearWeightGradAccumulate,
                              {f32({M, K}), f32({M, N}), sum}, {sum}, outIn);
    EXPECT_EQ(call.m, M);
    EXPECT_EQ(call.k, K);
    EXPECT_EQ(call.n, N);
    GemmSpec spec = gemmSpecOf(call);
    EXPECT_TRUE(spec.accumulate);
    EXPECT_FALSE(gemmSpecOf(decoded(fb::OpCode::LinearWeightGrad,
                                    {f32({M, K}), f32({M, N})}, {sum}, outIn))
                     .accumulate);
    // The sum's values (random, not zeros) are added to.
    expectMatchesCpu(call, 4);
  }
}

TEST(GemmSpec, BatchMatmulMatchesCpu) {
  constexpr int64_t B = 2;
  for (uint32_t flags = 0; flags < 4; ++flags) {
    SCOPED_TRACE("flags " + std::to_string(flags));
    bool tl = flags & 1, tr = flags & 2;
    KernelCall call = decoded(fb::OpCode::BatchMatmul,
                              {tl ? f32({B, K, M}) : f32({B, M, K}),
                               tr ? f32({B, N, K}) : f32({B, K, N})},
                              {f32({B, M, N})}, flags, {0.37});
    EXPECT_EQ(call.batch, B);
    EXPECT_EQ(call.m, M);
    EXPECT_EQ(call.k, K);
    EXPECT_EQ(call.n, N);
    GemmSpec spec = gemmSpecOf(call);
    EXPECT_EQ(spec.batch, B);
    EXPECT_FLOAT_EQ(spec.alpha, 0.37f);
    expectMatchesCpu(call, 4 + flags);
  }
}

TEST(GemmSpec, BatchMatmulSeveralBatchDimsMatchesCpu) {
  // [2, 3] batch dims: batch 6.
  KernelCall call =
      decoded(fb::OpCode::BatchMatmul, {f32({2, 3, K, M}), f32({2, 3, N, K})},
              {f32({2, 3, M, N})}, 3, {-1.5});
  EXPECT_EQ(call.batch, 6);
  expectMatchesCpu(call, 9);
}

TEST(GemmSpec, DegenerateSizes) {
  // k = 0: the bias broadcast (zeros without one), no matmul.
  KernelCall call = decoded(
      fb::OpCode::Linear, {f32({M, 0}), f32({0, N}), f32({N})}, {f32({M, N})});
  GemmSpec spec = gemmSpecOf(call);
  EXPECT_TRUE(spec.fillOnly());
  EXPECT_FALSE(spec.empty());
  EXPECT_EQ(spec.scratchBytes, 0u);
  expectMatchesCpu(call, 10);
  // m = 0: nothing at all.
  call = decoded(fb::OpCode::Linear, {f32({0, K}), f32({K, N})}, {f32({0, N})});
  spec = gemmSpecOf(call);
  EXPECT_TRUE(spec.empty());
  EXPECT_FALSE(spec.fillOnly());
  // Leading dimensions stay >= 1 (cuBLAS refuses 0).
  EXPECT_GE(spec.lda, 1);
  EXPECT_GE(spec.ldb, 1);
  EXPECT_GE(spec.ldc, 1);
}

TEST(GemmSpec, NotAGemm) {
  KernelCall call;
  call.op = fb::OpCode::Copy;
  EXPECT_FALSE(gemmSpecOf(call).valid);
}

namespace {

/// linear with the given storage for x, W, the bias (F32 and no bias when
/// `bias` is false) and the result.
GemmSpec linearSpec(fb::DType x, fb::DType w, fb::DType result,
                    bool bias = false, fb::DType biasType = fb::DType::F32) {
  std::vector<TensorRef> operands = {tensor(x, {M, K}), tensor(w, {K, N})};
  if (bias)
    operands.push_back(tensor(biasType, {N}));
  return gemmSpecOf(
      decoded(fb::OpCode::Linear, operands, {tensor(result, {M, N})}));
}

constexpr fb::DType F32 = fb::DType::F32, BF16 = fb::DType::BF16,
                    F16 = fb::DType::F16;

} // namespace

TEST(GemmSpec, NoStagingWhereCublasLtHasTheMix) {
  for (fb::DType t : {F32, BF16, F16}) {
    GemmSpec spec = linearSpec(t, t, t, true, t);
    EXPECT_EQ(spec.inputType, gemmTypeOf(t));
    EXPECT_EQ(spec.outputType, gemmTypeOf(t));
    EXPECT_FALSE(spec.stageA || spec.stageB || spec.stageBias ||
                 spec.stageOutput);
    EXPECT_EQ(spec.scratchBytes, 0u);
  }
  // 16-bit inputs into f32, with an f32 bias.
  for (fb::DType t : {BF16, F16}) {
    GemmSpec spec = linearSpec(t, t, F32, true, F32);
    EXPECT_EQ(spec.inputType, gemmTypeOf(t));
    EXPECT_EQ(spec.outputType, GemmType::F32);
    EXPECT_EQ(spec.scratchBytes, 0u);
  }
}

TEST(GemmSpec, StagesMixedInputsInF32) {
  // bf16 activation times an f32 weight: x (B) goes to f32 scratch.
  GemmSpec spec = linearSpec(BF16, F32, BF16);
  EXPECT_EQ(spec.inputType, GemmType::F32);
  EXPECT_FALSE(spec.stageA);
  EXPECT_TRUE(spec.stageB);
  EXPECT_EQ(spec.scratchB, 0u);
  // f32 inputs cannot give bf16: D goes through f32 scratch.
  EXPECT_EQ(spec.outputType, GemmType::F32);
  EXPECT_TRUE(spec.stageOutput);
  EXPECT_EQ(spec.scratchOutput, 256u); // M * K * 4 = 140 bytes, aligned
  EXPECT_EQ(spec.scratchBytes, 512u);
  // f32 activation times a bf16 weight: W (A) staged; D is f32.
  spec = linearSpec(F32, BF16, F32);
  EXPECT_TRUE(spec.stageA);
  EXPECT_FALSE(spec.stageB || spec.stageOutput);
  EXPECT_EQ(spec.scratchBytes, 256u);
  // bf16 times f16: both staged.
  spec = linearSpec(BF16, F16, F32);
  EXPECT_TRUE(spec.stageA && spec.stageB);
  EXPECT_EQ(spec.scratchBytes, 512u);
}

TEST(GemmSpec, StagesBiasAndOutput) {
  // A bf16 bias with an f32 D: the bias is cast (exactly) to f32.
  GemmSpec spec = linearSpec(BF16, BF16, F32, true, BF16);
  EXPECT_EQ(spec.outputType, GemmType::F32);
  EXPECT_TRUE(spec.stageBias);
  EXPECT_FALSE(spec.stageOutput);
  EXPECT_EQ(spec.scratchBytes, 256u);
  // An f32 bias with a bf16 result would round if cast: D in f32 instead,
  // cast to bf16 once after the bias is added.
  spec = linearSpec(BF16, BF16, BF16, true, F32);
  EXPECT_EQ(spec.inputType, GemmType::BF16);
  EXPECT_EQ(spec.outputType, GemmType::F32);
  EXPECT_FALSE(spec.stageBias);
  EXPECT_TRUE(spec.stageOutput);
  // bf16 inputs with an f16 result: D in f32, then cast.
  spec = linearSpec(BF16, BF16, F16);
  EXPECT_EQ(spec.outputType, GemmType::F32);
  EXPECT_TRUE(spec.stageOutput);
  // Staged operands are aligned for cuBLASLt whatever the tensor's offset.
  EXPECT_EQ(gemmKeyOf(spec).alignD, 256u);
}

TEST(GemmSpec, Alignment) {
  EXPECT_EQ(gemmAlignmentOf(tensor(F32, {4}, 0)), 256u);
  EXPECT_EQ(gemmAlignmentOf(tensor(F32, {4}, 4096 + 64)), 64u);
  EXPECT_EQ(gemmAlignmentOf(tensor(BF16, {4}, 1026)), 2u);
  TensorRef pooled = tensor(F32, {4}, 512);
  pooled.pool = 0;
  pooled.poolSlots = 2;
  pooled.poolStride = 192;
  EXPECT_EQ(gemmAlignmentOf(pooled), 64u);
  pooled.poolSlots = 1; // one slot: the stride is never added
  EXPECT_EQ(gemmAlignmentOf(pooled), 256u);

  // The key carries the tensors' alignment.
  KernelCall call = linearCall(false, true);
  GemmKey aligned = gemmKeyOf(gemmSpecOf(call));
  call.operands[1].offset = 4;
  GemmKey key = gemmKeyOf(gemmSpecOf(call));
  EXPECT_EQ(key.alignA, 4u);
  EXPECT_NE(key, aligned);
}

namespace {

struct FakePlan {
  int id = -1;
};

} // namespace

TEST(GemmSpec, PlanCacheBuildsOncePerKey) {
  PlanCache<FakePlan> cache;
  int built = 0;
  auto build = [&](const GemmKey &, FakePlan &plan) {
    plan.id = built++;
    return Status::ok();
  };
  std::vector<KernelCall> calls = {
      linearCall(false, false), linearCall(true, false),
      linearCall(false, true), linearCall(false, false), // again
      linearCall(true, false)};                          // again
  std::vector<FakePlan *> plans;
  for (const KernelCall &call : calls) {
    FakePlan *plan = nullptr;
    ASSERT_TRUE(cache.get(gemmKeyOf(gemmSpecOf(call)), build, plan).isOk());
    ASSERT_NE(plan, nullptr);
    plans.push_back(plan);
  }
  EXPECT_EQ(built, 3);
  EXPECT_EQ(cache.builds(), 3u);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(plans[3], plans[0]);
  EXPECT_EQ(plans[4], plans[1]);
  EXPECT_NE(plans[0], plans[1]);
  EXPECT_NE(plans[0], plans[2]);
  EXPECT_EQ(plans[2]->id, 2);

  // Alpha is no part of the key: batch_matmuls differing in scale share.
  auto bmm = [](double scale) {
    return decoded(fb::OpCode::BatchMatmul, {f32({2, M, K}), f32({2, K, N})},
                   {f32({2, M, N})}, 0, {scale});
  };
  EXPECT_EQ(gemmKeyOf(gemmSpecOf(bmm(0.5))), gemmKeyOf(gemmSpecOf(bmm(2.0))));

  // A batch_matmul of one matrix is a linear (x [m, k], W [k, n]).
  KernelCall one =
      decoded(fb::OpCode::BatchMatmul, {f32({1, M, K}), f32({1, K, N})},
              {f32({1, M, N})}, 0, {1.0});
  EXPECT_EQ(gemmKeyOf(gemmSpecOf(one)),
            gemmKeyOf(gemmSpecOf(linearCall(false, false))));
}

TEST(GemmSpec, PlanCacheKeepsNoFailedPlan) {
  PlanCache<FakePlan> cache;
  GemmKey key = gemmKeyOf(gemmSpecOf(linearCall(false, false)));
  FakePlan *plan = nullptr;
  auto fail = [](const GemmKey &, FakePlan &) {
    return Status::error("no algorithm");
  };
  EXPECT_FALSE(cache.get(key, fail, plan).isOk());
  EXPECT_EQ(cache.size(), 0u);
  auto build = [](const GemmKey &, FakePlan &p) {
    p.id = 7;
    return Status::ok();
  };
  ASSERT_TRUE(cache.get(key, build, plan).isOk());
  EXPECT_EQ(plan->id, 7);
  EXPECT_EQ(cache.builds(), 2u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(GemmSpec, KeysDifferingInAnyFieldDiffer) {
  GemmKey base = gemmKeyOf(gemmSpecOf(linearCall(false, true)));
  std::vector<std::function<void(GemmKey &)>> changes = {
      [](GemmKey &k) { k.inputType = GemmType::BF16; },
      [](GemmKey &k) { k.outputType = GemmType::F16; },
      [](GemmKey &k) { k.transA = !k.transA; },
      [](GemmKey &k) { k.transB = !k.transB; },
      [](GemmKey &k) { k.bias = !k.bias; },
      [](GemmKey &k) { ++k.m; },
      [](GemmKey &k) { ++k.n; },
      [](GemmKey &k) { ++k.k; },
      [](GemmKey &k) { ++k.lda; },
      [](GemmKey &k) { ++k.ldb; },
      [](GemmKey &k) { ++k.ldc; },
      [](GemmKey &k) { ++k.batch; },
      [](GemmKey &k) { ++k.strideA; },
      [](GemmKey &k) { ++k.strideB; },
      [](GemmKey &k) { ++k.strideC; },
      [](GemmKey &k) { k.alignA = 16; },
      [](GemmKey &k) { k.alignB = 16; },
      [](GemmKey &k) { k.alignBias = 16; },
      [](GemmKey &k) { k.alignD = 16; },
      [](GemmKey &k) { k.gelu = GemmGelu::Gelu; },
      [](GemmKey &k) { k.biasGrad = GemmBiasGrad::B; },
      [](GemmKey &k) { k.alignAux = 16; },
  };
  PlanCache<FakePlan> cache;
  auto build = [](const GemmKey &, FakePlan &) { return Status::ok(); };
  FakePlan *plan = nullptr;
  ASSERT_TRUE(cache.get(base, build, plan).isOk());
  GemmKeyHash hash;
  for (size_t i = 0; i < changes.size(); ++i) {
    GemmKey changed = base;
    changes[i](changed);
    EXPECT_NE(changed, base) << "field " << i;
    EXPECT_NE(hash(changed), hash(base)) << "field " << i;
    ASSERT_TRUE(cache.get(changed, build, plan).isOk());
  }
  EXPECT_EQ(cache.size(), changes.size() + 1);
  GemmKey copy = base;
  EXPECT_EQ(copy, base);
  EXPECT_EQ(hash(copy), hash(base));
}

TEST(GemmSpec, GeluEpilogue) {
  // A linear of 24 output features ([rows, 24] row-major: D's leading
  // dimension 24, a multiple of 8) takes the epilogue with or without the
  // aux matrix; its key is the linear's with D the gelu's result.
  KernelCall call =
      decoded(fb::OpCode::Linear, {f32({M, K}), f32({K, 24}), f32({24})},
              {tensor(F32, {M, 24}, 1024)});
  GemmSpec spec = gemmSpecOf(call);
  ASSERT_EQ(spec.ldc, 24);
  EXPECT_EQ(geluEpilogueRefusal(spec, true), nullptr);
  EXPECT_EQ(geluEpilogueRefusal(spec, false), nullptr);
  GemmKey plain = gemmKeyOf(spec);
  GemmKey fused = geluKeyOf(spec, true, 64);
  EXPECT_EQ(plain.gelu, GemmGelu::None);
  EXPECT_EQ(fused.gelu, GemmGelu::GeluAux);
  EXPECT_EQ(fused.alignD, 64u);             // the gelu's result
  EXPECT_EQ(fused.alignAux, plain.alignD);  // the linear's result
  EXPECT_NE(fused, plain);
  GemmKey inPlace = geluKeyOf(spec, false, 256);
  EXPECT_EQ(inPlace.gelu, GemmGelu::Gelu);
  EXPECT_NE(inPlace, fused);
  GemmKey back = inPlace;
  back.gelu = GemmGelu::None;
  back.alignD = plain.alignD;
  EXPECT_EQ(back, plain); // nothing else differs
  EXPECT_NE(describeGemmKey(fused).find("GeLU epilogue with aux"),
            std::string::npos);

  // N = 3 output features: no aux matrix (cuBLASLt wants its leading
  // dimension a multiple of 8), but the epilogue alone is possible.
  spec = gemmSpecOf(linearCall(false, true));
  ASSERT_EQ(spec.ldc, N);
  EXPECT_NE(geluEpilogueRefusal(spec, true), nullptr);
  EXPECT_EQ(geluEpilogueRefusal(spec, false), nullptr);

  // A staged output (bf16 inputs, f32 bias, bf16 result: D in f32 scratch)
  // cannot; nor can a GEMM with nothing to sum.
  spec = linearSpec(BF16, BF16, BF16, true, F32);
  ASSERT_TRUE(spec.stageOutput);
  EXPECT_STREQ(geluEpilogueRefusal(spec, false), "its output is staged");
  spec = gemmSpecOf(decoded(fb::OpCode::Linear, {f32({M, 0}), f32({0, 24})},
                            {f32({M, 24})}));
  EXPECT_STREQ(geluEpilogueRefusal(spec, false), "no matmul");
}

TEST(GemmSpec, GeluGradientEpilogue) {
  // An input gradient of 24 input features: D [24, M] column-major, its
  // (and the aux matrix's) leading dimension 24, a multiple of 8.
  KernelCall call =
      decoded(fb::OpCode::LinearInputGrad, {f32({M, N}), f32({N, 24})},
              {tensor(F32, {M, 24}, 1024)}, 1);
  GemmSpec spec = gemmSpecOf(call);
  ASSERT_EQ(spec.ldc, 24);
  EXPECT_EQ(geluGradEpilogueRefusal(spec), nullptr);
  GemmKey fused = geluGradKeyOf(spec, 64, 32);
  EXPECT_EQ(fused.gelu, GemmGelu::GeluGrad);
  EXPECT_EQ(fused.alignD, 64u);   // the gelu_grad's result
  EXPECT_EQ(fused.alignAux, 32u); // the GeLU's input
  GemmKey back = fused;
  back.gelu = GemmGelu::None;
  back.alignD = gemmKeyOf(spec).alignD;
  back.alignAux = 256;
  EXPECT_EQ(back, gemmKeyOf(spec)); // nothing else differs
  EXPECT_NE(describeGemmKey(fused).find("GeLU gradient epilogue"),
            std::string::npos);
  // K = 7 input features: the aux matrix's leading dimension is not a
  // multiple of 8.
  spec = gemmSpecOf(decoded(fb::OpCode::LinearInputGrad,
                            {f32({M, N}), f32({N, K})}, {f32({M, K})}, 1));
  EXPECT_STREQ(geluGradEpilogueRefusal(spec),
               "the aux matrix's leading dimension is not a multiple of 8");
  spec = gemmSpecOf(decoded(fb::OpCode::LinearInputGrad,
                            {f32({M, 0}), f32({0, 24})}, {f32({M, 24})}, 1));
  EXPECT_STREQ(geluGradEpilogueRefusal(spec), "no matmul");
}

TEST(GemmSpec, BiasGradientEpilogue) {
  // A weight gradient's dY [M, N] summed over its M tokens: the bias
  // gradient. dY is A (in_out: BGRADA, m = N sums) or B (out_in: BGRADB,
  // n = N sums); the sums over k of op(A)'s rows or op(B)'s columns, read
  // from the spec as cuBLASLt reads its operands, are dY's column sums.
  for (bool outIn : {false, true}) {
    SCOPED_TRACE(outIn ? "out_in" : "in_out");
    KernelCall call =
        decoded(fb::OpCode::LinearWeightGrad, {f32({M, K}), f32({M, N})},
                {outIn ? f32({N, K}) : f32({K, N})}, outIn);
    GemmSpec spec = gemmSpecOf(call);
    GemmBiasGrad which = GemmBiasGrad::None;
    EXPECT_EQ(biasGradEpilogueRefusal(spec, 1, GemmType::F32, N, which),
              nullptr);
    ASSERT_EQ(which, outIn ? GemmBiasGrad::B : GemmBiasGrad::A);
    auto in = randomOperands(call, 5);
    const bool a = which == GemmBiasGrad::A;
    const std::vector<float> &stored = in[a ? spec.aOperand : spec.bOperand];
    bool trans = a ? spec.transA : spec.transB;
    int64_t ld = a ? spec.lda : spec.ldb;
    for (int64_t i = 0; i < N; ++i) {
      double sum = 0.0, want = 0.0;
      for (int64_t l = 0; l < spec.k; ++l)
        sum += a ? (trans ? stored[l + i * ld] : stored[i + l * ld])
                 : (trans ? stored[i + l * ld] : stored[l + i * ld]);
      for (int64_t row = 0; row < M; ++row)
        want += in[1][row * N + i];
      EXPECT_NEAR(sum, want, 1e-9) << "feature " << i;
    }
    GemmKey fused = biasGradKeyOf(spec, which, 64);
    EXPECT_EQ(fused.biasGrad, which);
    EXPECT_EQ(fused.alignBias, 64u);
    GemmKey back = fused;
    back.biasGrad = GemmBiasGrad::None;
    back.alignBias = 256;
    EXPECT_EQ(back, gemmKeyOf(spec)); // nothing else differs
    EXPECT_NE(describeGemmKey(fused).find(outIn ? "bias gradient of B"
                                                : "bias gradient of A"),
              std::string::npos);

    // The vector in another type than D's, of another length, or the sum
    // of a tensor that is not an operand.
    EXPECT_STREQ(biasGradEpilogueRefusal(spec, 1, GemmType::BF16, N, which),
                 "the sum is not of the product's output type");
    EXPECT_EQ(which, GemmBiasGrad::None);
    EXPECT_NE(biasGradEpilogueRefusal(spec, 1, GemmType::F32, N + 1, which),
              nullptr);
    EXPECT_STREQ(biasGradEpilogueRefusal(spec, 2, GemmType::F32, N, which),
                 "the summed tensor is not an operand of the product");
  }
  GemmBiasGrad which = GemmBiasGrad::None;
  // A batched product, a scaled one, one with a bias.
  GemmSpec batched = gemmSpecOf(decoded(fb::OpCode::BatchMatmul,
                                        {f32({2, M, K}), f32({2, K, N})},
                                        {f32({2, M, N})}, 0, {1.0}));
  EXPECT_STREQ(biasGradEpilogueRefusal(batched, 0, GemmType::F32, N, which),
               "the product is batched");
  GemmSpec scaled = gemmSpecOf(decoded(fb::OpCode::BatchMatmul,
                                       {f32({1, M, K}), f32({1, K, N})},
                                       {f32({1, M, N})}, 0, {0.5}));
  EXPECT_STREQ(biasGradEpilogueRefusal(scaled, 0, GemmType::F32, N, which),
               "the product is scaled or has a bias");
  EXPECT_STREQ(biasGradEpilogueRefusal(gemmSpecOf(linearCall(false, true)), 0,
                                       GemmType::F32, N, which),
               "the product is scaled or has a bias");
}

namespace {

/// The spec of a model's GEMM call against the CPU kernel, within what
/// float32 promises for a k-term dot product: the CPU's sum in float32
/// (any order) and the reference's in double differ by at most
/// (k + 1) u sum_l |a_l b_l| (+ u |bias|), u = 2^-24; twice that is allowed.
void expectModelGemmMatchesCpu(const KernelCall &call, uint32_t seed) {
  GemmSpec spec = gemmSpecOf(call);
  ASSERT_TRUE(spec.valid);
  SCOPED_TRACE("kernel " + std::to_string(call.index) + ": " +
               describeGemm(spec));
  EXPECT_GE(spec.lda, std::max<int64_t>(1, spec.transA ? spec.k : spec.m));
  EXPECT_GE(spec.ldb, std::max<int64_t>(1, spec.transB ? spec.n : spec.k));
  EXPECT_EQ(spec.batch * spec.m * spec.n, call.results[0].elements);
  auto in = randomOperands(call, seed);
  std::vector<float> want = runCpu(call, in);
  std::vector<float> got = evaluate(spec, in);
  auto magnitudes = in;
  for (auto &operand : magnitudes)
    for (float &v : operand)
      v = std::fabs(v);
  GemmSpec positive = spec;
  positive.alpha = std::fabs(spec.alpha);
  std::vector<float> bound = evaluate(positive, magnitudes);
  const double u = std::ldexp(1.0, -24);
  ASSERT_GE(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(static_cast<double>(got[i]) - want[i]),
              2.0 * (spec.k + 2) * u * bound[i] + 1e-30)
        << "element " << i << ": spec " << got[i] << ", cpu " << want[i];
}

} // namespace

// Disabled unless runtime.GemmSpecModels runs it with
// TPCRT_GEMM_SPEC_MODELS (executables compiled by tpc-compile).
TEST(GemmSpec, DISABLED_ModelGemmsMatchCpu) {
  size_t checked = 0;
  test::forEachModel([&](const std::string &path, const Program &program) {
    size_t gemms = 0;
    for (const KernelCall &call : program.calls) {
      if (!gemmSpecOf(call).valid)
        continue;
      ++gemms;
      expectModelGemmMatchesCpu(call, static_cast<uint32_t>(call.index + 1));
      if (HasFatalFailure())
        return;
    }
    EXPECT_GT(gemms, 0u) << "no GEMM kernel";
    std::printf("%s: %zu GEMM calls match the CPU kernels\n", path.c_str(),
                gemms);
    checked += gemms;
  });
  EXPECT_GT(checked, 0u);
}

// Each linear + gelu pair the CUDA device would fuse (FusionPlan.h) takes
// the GeLU epilogue, each input gradient + gelu_grad pair the GeLU gradient
// epilogue, and each weight gradient + sum_to pair the bias
// gradient epilogue, as far as their specs go (only cuBLASLt's heuristic
// can still refuse them on a GPU). Run by runtime.GemmSpecModels.
TEST(GemmSpec, DISABLED_ModelGeluPairsTakeTheEpilogue) {
  test::forEachModel([](const std::string &path, const Program &program) {
    std::vector<std::string> refusals;
    std::vector<FusionStep> plan = planFusions(program, &refusals);
    size_t geluGradCandidates = 0;
    for (size_t p = 0; p < program.calls.size(); ++p)
      geluGradCandidates += fusion::isInputGradGeluCandidate(program, p);
    // An input gradient + gelu_grad pair is refused only where the memory
    // plan gives the gelu_grad's result the bytes of the input gradient's
    // dY, which the fused matmul still reads.
    for (const std::string &why : refusals)
      if (why.find("(linear_input_grad)") != std::string::npos) {
        EXPECT_NE(why.find("overlaps an operand of the input gradient"),
                  std::string::npos)
            << why;
      }
    size_t geluPairs = 0, maskPairs = 0, biasGradPairs = 0, geluGradPairs = 0,
           addPairs = 0, biasAddGroups = 0, addNormGroups = 0, withNorm = 0,
           swigluPairs = 0;
    for (size_t p = 0; p < program.calls.size(); ++p) {
      const KernelCall &call = program.calls[p];
      if (plan[call.index].role != FusionRole::Head)
        continue;
      if (call.op == fb::OpCode::ApplyMask || call.op == fb::OpCode::Add) {
        // The forward's residual add groups (no GEMM): the dropout and the
        // add; a row-parallel bias, its dropout (if any) and the residual
        // add; or the residual add alone; each with the next norm where it
        // joins them.
        size_t q = p + 1;
        while (q + 1 < program.calls.size() &&
               plan[program.calls[q].index].role == FusionRole::Link)
          ++q;
        const KernelCall &tail = program.calls[q];
        bool norm =
            tail.op == fb::OpCode::LayerNorm || tail.op == fb::OpCode::RmsNorm;
        withNorm += norm;
        if (call.op == fb::OpCode::ApplyMask)
          ++maskPairs;
        else if (norm && q == p + 1)
          ++addNormGroups;
        else
          ++biasAddGroups;
        continue;
      }
      if (call.op == fb::OpCode::LayerNormParamGrad ||
          call.op == fb::OpCode::RmsNormParamGrad ||
          call.op == fb::OpCode::CrossEntropy)
        continue; // ModelNormBackwardsAreFused
      if (call.op == fb::OpCode::Silu || call.op == fb::OpCode::Mul) {
        // SwiGLU's pairs: no GEMM.
        ++swigluPairs;
        continue;
      }

      if (program.calls[p + 1].op == fb::OpCode::Add) {
        // A product and the add of it: C added, D the add's result.
        ++addPairs;
        GemmSpec spec = gemmSpecOf(call);
        EXPECT_FALSE(spec.stageOutput || spec.hasBias() || spec.accumulate)
            << "kernel " << call.index << ": " << describeGemm(spec);
        continue;
      }
      if (call.op == fb::OpCode::LinearInputGrad) {
        ++geluGradPairs;
        const char *why = geluGradEpilogueRefusal(gemmSpecOf(call));
        EXPECT_EQ(why, nullptr) << "kernel " << call.index << ": " << why;
        continue;
      }
      if (call.op != fb::OpCode::Linear) {
        // A weight gradient and the sum_to of its dY.
        ++biasGradPairs;
        const TensorRef &db = program.calls[p + 1].results[0];
        GemmBiasGrad which = GemmBiasGrad::None;
        const char *why = biasGradEpilogueRefusal(
            gemmSpecOf(call), 1, gemmTypeOf(db.dtype), db.elements, which);
        EXPECT_EQ(why, nullptr) << "kernel " << call.index << ": " << why;
        continue;
      }
      ++geluPairs;
      bool aux = plan[call.index].writesHead;
      const char *why = geluEpilogueRefusal(gemmSpecOf(call), aux);
      EXPECT_EQ(why, nullptr) << "kernel " << call.index << ": " << why;
    }
    std::printf("%s: %zu linear + gelu pairs, %zu input gradient + "
                "gelu_grad pairs, %zu apply_mask + add groups, %zu weight "
                "gradient + bias gradient pairs, %zu product + add pairs, "
                "%zu bias + add groups, %zu add + norm pairs (%zu groups "
                "ending in a norm), %zu SwiGLU pairs\n",
                path.c_str(), geluPairs, geluGradPairs, maskPairs,
                biasGradPairs, addPairs, biasAddGroups, addNormGroups, withNorm,
                swigluPairs);
    // GPT-2's MLP: one pair per layer in the forward (the models here have
    // two layers); Llama's SiLU has none. GPT-2's four linears with a bias
    // per layer each give a bias gradient pair (its tied head has no bias),
    // on a tensor-parallel mesh too: the row-parallel ones (the two c_proj)
    // sum dY after its all_reduce, as their weight gradients read it
    // (dist-propagate; before 2026-12-05 they summed the partial dY and
    // only 4 pairs formed there); Llama's linears have no bias.
    bool gpt2 = path.find("gpt2") != std::string::npos;
    EXPECT_EQ(geluPairs, gpt2 ? 2u : 0u);
    // The backward's input gradient + gelu_grad: a candidate per layer,
    // fused unless refused as above.
    EXPECT_EQ(geluGradCandidates, gpt2 ? 2u : 0u);
    EXPECT_LE(geluGradPairs, geluGradCandidates);
    EXPECT_EQ(biasGradPairs, gpt2 ? 8u : 0u);
    // Llama's products added at once, five per layer: the attention's and
    // the MLP's output projections to the residual stream, and in the
    // backward k's and v's input gradients to q's, up's to gate's. GPT-2's
    // linears have a bias and its input gradients go to a norm or an
    // attention first: none.
    EXPECT_EQ(addPairs, gpt2 ? 0u : 10u);
    // With tp > 1 GPT-2 adds each row-parallel output's bias after the
    // reduction: with the branch's dropout (if any) and the residual add,
    // one group per branch (two a layer); on one device the bias is the
    // GEMM's epilogue.
    bool tp = path.find("tp2") != std::string::npos;
    EXPECT_EQ(biasAddGroups, gpt2 && tp ? 4u : 0u);
    // GPT-2's residual adds go into the next norm (two a layer: the second
    // norm and the next layer's first, or the final norm): every branch's
    // group takes it; without dropout on one device the add is alone (the
    // product's bias keeps it from the product). Llama's adds are the
    // products' (C).
    bool dropout = path.find("nodrop") == std::string::npos;
    EXPECT_EQ(withNorm, gpt2 ? 4u : 0u);
    EXPECT_EQ(addNormGroups, gpt2 && !dropout && !tp ? 4u : 0u);
    // Llama's MLP: up * silu(gate) forward, and backward up's gradient with
    // silu(gate) recomputed and the silu's output gradient with silu_grad:
    // three pairs per layer.
    EXPECT_EQ(swigluPairs, gpt2 ? 0u : 6u);
  });
}

// Each norm's parameter gradient and its input gradient right after are
// fused (FusionPlan.h), and so are the residual add after them wherever one
// follows and the dropout of the result; and the loss with its gradient. Run by
// runtime.GemmSpecModels.
TEST(GemmSpec, DISABLED_ModelNormBackwardsAreFused) {
  test::forEachModel([](const std::string &path, const Program &program) {
    std::vector<std::string> refusals;
    std::vector<FusionStep> plan = planFusions(program, &refusals);
    size_t paramGrads = 0, candidates = 0, groups = 0, withAdd = 0,
           withMask = 0;
    for (size_t p = 0; p < program.calls.size(); ++p) {
      const KernelCall &call = program.calls[p];
      if (call.op != fb::OpCode::LayerNormParamGrad &&
          call.op != fb::OpCode::RmsNormParamGrad)
        continue;
      ++paramGrads;
      candidates += fusion::isNormBackwardCandidate(program, p);
      if (plan[call.index].role != FusionRole::Head)
        continue;
      ++groups;
      // The members after the head: the input gradient, then the add and
      // the mask where they joined, the last the tail.
      size_t q = p + 1;
      while (plan[program.calls[q].index].role == FusionRole::Link)
        ++q;
      EXPECT_EQ(plan[program.calls[q].index].role, FusionRole::Tail);
      EXPECT_EQ(program.calls[p + 1].op,
                call.op == fb::OpCode::LayerNormParamGrad
                    ? fb::OpCode::LayerNormInputGrad
                    : fb::OpCode::RmsNormInputGrad);
      bool add = q > p + 1 && program.calls[p + 2].op == fb::OpCode::Add;
      bool mask = program.calls[q].op == fb::OpCode::ApplyMask;
      EXPECT_EQ(q, p + 1 + add + mask);
      withAdd += add;
      withMask += mask;
    }
    for (const std::string &why : refusals)
      if (why.find("norm_") != std::string::npos)
        std::printf("  %s\n", why.c_str());
    std::printf("%s: %zu norm parameter gradients, %zu fused with the input "
                "gradient, %zu of them with the residual add, %zu with "
                "the dropout of the result\n",
                path.c_str(), paramGrads, groups, withAdd, withMask);
    EXPECT_EQ(groups, candidates);
    // The loss and its gradient: one pair (but on a tensor-parallel rank,
    // whose vocabulary is split: the device's phases).
    size_t lossPairs = 0;
    unsigned unwritten = 0;
    for (const KernelCall &call : program.calls)
      if (call.op == fb::OpCode::CrossEntropy &&
          plan[call.index].role == FusionRole::Head) {
        ++lossPairs;
        unwritten |= plan[call.index].unwrittenHeadResults;
      }
    std::printf("%s: %zu cross_entropy + gradient pairs (loss results left "
                "unwritten: %u)\n",
                path.c_str(), lossPairs, unwritten);
    bool tpRank = path.find("tp2") != std::string::npos;
    EXPECT_EQ(lossPairs, tpRank ? 0u : 1u);
    // Every model has two norms a layer (two layers) and the final one, all
    // fused (with microbatches too: their sums come after the input
    // gradient; on a tensor- or data-parallel rank too: the reductions of
    // the parameter gradients are issued after the group,
    // rt-issue-reductions-early), and but for the final norm (whose input
    // gradient meets the embedding's, not a residual) the add joins them.
    EXPECT_EQ(paramGrads, 5u);
    EXPECT_EQ(groups, 5u);
    EXPECT_EQ(withAdd, 4u);
    // With dropout every group's result is masked at once (a residual
    // branch's gradient; the first layer's norm, the embedding's dropout;
    // with microbatches too, gpt2.tpcx: the norms' parameter gradients go
    // into their sums after the mask, tpc-lower-to-rt).
    bool dropout = path.find("nodrop") == std::string::npos &&
                   path.find("llama") == std::string::npos;
    EXPECT_EQ(withMask, dropout ? 5u : 0u);
  });
}
