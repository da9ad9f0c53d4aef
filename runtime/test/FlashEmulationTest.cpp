//===- FlashEmulationTest.cpp - the tensor-core attention, emulated -------===//
//
// cuda/FlashAttention.cuh's kernels, the real header compiled for the host
// with TPCRT_CUDA_EMULATION (CudaEmulation.h: CUDA's threads, barriers,
// shuffles and the PTX of cp.async, ldmatrix and mma.sync, emulated), run
// as AttentionKernels.cu launches them and compared with the CPU device's
// attention and attentionGrad on the same inputs. An emulation, not a GPU
// run: it tests the kernels' indexing, fragment layouts, masks (keys past
// s_k, causal with s_q <= s_k), dropout stream, head layouts (head-major,
// sequence-major, packed q/k/v) and grouped kv heads, not the hardware.
// bf16 and f16, head_dim 64 and 128, lengths that are not multiples of the
// tiles. Every result starts as NaN, so an element no kernel writes fails.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/AttentionRows.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

// Last: it defines CUDA's keywords and built-in variables as macros.
#define TPCRT_CUDA_EMULATION
#include "FlashAttention.cuh"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;

namespace {

/// Norm-wise relative errors ||kernel - cpu|| / ||cpu|| allowed. The
/// kernels and the CPU read the same 16-bit inputs (converted exactly to
/// float for the CPU), so the differences are the kernels' own roundings
/// to 16 bits, each at most u relative (unit roundoff u = 2^-8 = 3.9e-3
/// for bf16, 2^-11 = 4.9e-4 for f16): P (and Pd, dS) before each product
/// with V, dO, K or Q, whose errors average out over the keys or queries
/// summed, and the results on store, about u / sqrt(3) rms; fp32
/// accumulation in another order (~1e-6) and exp2 for exp add little. So
/// about u norm-wise (observed: 1.7e-3 to 2.9e-3 for bf16, 2.2e-4 to
/// 4.2e-4 for f16); the bounds, 2.6 u and 4 u, leave a margin, while an
/// indexing, masking or dropout error gives errors of order 1.
constexpr double kBf16Tolerance = 1e-2;
constexpr double kF16Tolerance = 2e-3;

struct Case {
  bool bf16 = true;
  int dim = 64;
  AttentionLayout layout = AttentionLayout::HeadMajor;
  int64_t batch = 1, heads = 2, kvHeads = 2, seqQ = 37, seqK = 37;
  bool causal = false;
  bool dropout = false;
  /// The dropout of one rank's block of a split tensor (offsets and global
  /// sizes), not of the whole.
  bool splitDropout = false;
  /// When the emulated cp.async copies land (both orders of hazards).
  emu::CopyTiming timing = emu::CopyTiming::AtWait;
};

uint16_t toStorage(bool bf16, float f) {
  return bf16 ? emu::toBf16(f) : emu::toHalf(f);
}
float fromStorage(bool bf16, uint16_t v) {
  return bf16 ? emu::fromBf16(v) : emu::fromHalf(v);
}

/// The 16-bit tensors of one call, their float copies for the CPU and the
/// results of both.
struct Tensors {
  // Inputs (qkv: q, k and v of PackedQkv).
  std::vector<uint16_t> q, k, v, qkv, dO;
  // Results (dqkv: PackedQkv's dq, dk, dv), NaN to start with.
  std::vector<uint16_t> o, dq, dk, dv, dqkv;
};

/// ||x - ref|| / ||ref|| (NaN when x holds a NaN), and the largest |x -
/// ref| over the largest |ref|.
struct Error {
  double normwise = 0.0, maxwise = 0.0;
  int64_t nans = 0;
};

Error compare(const std::vector<uint16_t> &x, bool bf16,
              const std::vector<float> &ref) {
  Error e;
  double diff = 0.0, norm = 0.0, maxDiff = 0.0, maxRef = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double got = fromStorage(bf16, x[i]);
    if (std::isnan(got)) {
      ++e.nans;
      continue;
    }
    double d = got - ref[i];
    diff += d * d;
    norm += double(ref[i]) * ref[i];
    maxDiff = std::max(maxDiff, std::abs(d));
    maxRef = std::max(maxRef, std::abs(double(ref[i])));
  }
  e.normwise = norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  e.maxwise = maxRef > 0.0 ? maxDiff / maxRef : maxDiff;
  if (e.nans)
    e.normwise = e.maxwise = NAN;
  return e;
}

/// forwardKernel's launch (AttentionKernels.cu's runForward, tensor path).
template <typename T, int D>
std::string runForward(const ForwardParams &p, emu::CopyTiming timing) {
  using Cfg = flash::ForwardConfig<D>;
  const Shape &s = p.shape;
  int64_t tiles = (s.seqQ + Cfg::kBlockM - 1) / Cfg::kBlockM;
  if (s.batch * s.heads == 0 || tiles == 0)
    return "";
  dim3 grid = tileGrid(tiles, s.batch * s.heads);
  if (p.dropout.enabled)
    return emu::launch(
        grid, dim3(flash::kThreads), Cfg::kSmemBytes,
        [&] { flash::forwardKernel<T, D, true>(p); }, timing);
  return emu::launch(
      grid, dim3(flash::kThreads), Cfg::kSmemBytes,
      [&] { flash::forwardKernel<T, D, false>(p); }, timing);
}

/// The two backward kernels' launches (AttentionKernels.cu's
/// launchTensorBackward).
template <typename T, int D>
std::string runBackward(const BackwardParams &p, emu::CopyTiming timing) {
  using Cfg = flash::BackwardConfig<D>;
  const Shape &s = p.shape;
  if (s.seqK > 0) {
    dim3 grid =
        tileGrid((s.seqK + Cfg::kKeys - 1) / Cfg::kKeys, s.batch * s.kvHeads);
    std::string error = emu::launch(
        grid, dim3(flash::kThreads), Cfg::kKeyValueSmemBytes,
        [&] { flash::backwardKeyValueKernel<T, D>(p); }, timing);
    if (!error.empty())
      return "dK/dV: " + error;
  }
  if (s.seqQ > 0 && s.batch * s.heads > 0) {
    dim3 grid =
        tileGrid((s.seqQ + Cfg::kRows - 1) / Cfg::kRows, s.batch * s.heads);
    std::string error = emu::launch(
        grid, dim3(flash::kThreads), Cfg::kQuerySmemBytes,
        [&] { flash::backwardQueryKernel<T, D>(p); }, timing);
    if (!error.empty())
      return "dQ: " + error;
  }
  return "";
}

template <typename T, int D> void runCase(const Case &c) {
  const bool packed = c.layout == AttentionLayout::PackedQkv;
  const int64_t b = c.batch, h = c.heads, kv = c.kvHeads, sq = c.seqQ,
                sk = c.seqK;
  ASSERT_TRUE(!packed || (kv == h && sq == sk));
  const Storage storage = c.bf16 ? Storage::BF16 : Storage::F16;
  const uint16_t nan = toStorage(c.bf16, NAN);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));

  // Inputs: normal values (q and k with a wider spread: peaked softmaxes),
  // rounded to 16 bits.
  std::mt19937 rng(static_cast<unsigned>(D * 1000 + sq * 10 + sk));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](int64_t n, float sd) {
    std::vector<uint16_t> x(n);
    for (uint16_t &e : x)
      e = toStorage(c.bf16, sd * normal(rng));
    return x;
  };
  auto toFloat = [&](const std::vector<uint16_t> &x) {
    std::vector<float> f(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      f[i] = fromStorage(c.bf16, x[i]);
    return f;
  };
  const int64_t qSize = b * h * sq * D, kvSize = b * kv * sk * D;
  Tensors t;
  const uint16_t *q, *k, *v;
  if (packed) {
    t.qkv = random(kQkvParts * qSize, 1.5f);
    q = t.qkv.data() + qkvPartOffset(0, h, D);
    k = t.qkv.data() + qkvPartOffset(1, h, D);
    v = t.qkv.data() + qkvPartOffset(2, h, D);
  } else {
    t.q = random(qSize, 1.5f);
    t.k = random(kvSize, 1.5f);
    t.v = random(kvSize, 1.0f);
    q = t.q.data();
    k = t.k.data();
    v = t.v.data();
  }
  t.dO = random(qSize, 1.0f);
  t.o.assign(qSize, nan);
  if (packed) {
    t.dqkv.assign(kQkvParts * qSize, nan);
  } else {
    t.dq.assign(qSize, nan);
    t.dk.assign(kvSize, nan);
    t.dv.assign(kvSize, nan);
  }

  // The shape and dropout as AttentionKernels.cu's attentionSetup builds
  // them, and the CPU's dropout of the same stream.
  Shape shape;
  shape.batch = b;
  shape.heads = h;
  shape.kvHeads = kv;
  shape.seqQ = sq;
  shape.seqK = sk;
  shape.headDim = shape.valueDim = D;
  shape.group = h / kv;
  shape.causal = c.causal;
  shape.causalOffset = sk - sq;
  shape.scale = scale;
  shape.qRows = headRows(c.layout, h, sq, D);
  shape.kRows = headRows(c.layout, kv, sk, D);
  shape.vRows = headRows(c.layout, kv, sk, D);
  shape.oRows = resultRows(c.layout, h, sq, D);
  const double rate = 0.25;
  cpu::AttentionDropout cpuDropout;
  Dropout dropout;
  if (c.dropout) {
    cpuDropout.key = dropoutKey(1234, 7, 3);
    cpuDropout.rate = rate;
    cpuDropout.firstIndex = 987654321;
    if (c.splitDropout) {
      cpuDropout.batchOffset = 1;
      cpuDropout.headOffset = 2;
      cpuDropout.queryOffset = 5;
      cpuDropout.globalHeads = h + 3;
      cpuDropout.globalSeqQ = sq + 11;
    }
    dropout.enabled = true;
    dropout.key = cpuDropout.key;
    dropout.threshold = dropoutThreshold(rate);
    dropout.scale = dropoutScale(rate);
    dropout.firstIndex = cpuDropout.firstIndex;
    dropout.batchOffset = cpuDropout.batchOffset;
    dropout.headOffset = cpuDropout.headOffset;
    dropout.queryOffset = cpuDropout.queryOffset;
    dropout.globalHeads = c.splitDropout ? cpuDropout.globalHeads : h;
    dropout.globalSeqQ = c.splitDropout ? cpuDropout.globalSeqQ : sq;
  }

  // The kernels: the forward, then attention_grad's sequence
  // (AttentionKernels.cu's runAttentionGrad): the statistics pass, dK/dV,
  // dQ.
  ForwardParams f;
  f.q = q;
  f.k = k;
  f.v = v;
  f.qType = f.kType = f.vType = storage;
  f.o = t.o.data();
  f.oType = storage;
  f.shape = shape;
  f.dropout = dropout;
  std::string error = runForward<T, D>(f, c.timing);
  ASSERT_EQ(error, "") << "forward";

  std::vector<float> rowMax(b * h * sq, NAN), rowInv(b * h * sq, NAN),
      rowDot(b * h * sq, NAN);
  RowStats stats;
  stats.max = rowMax.data();
  stats.invSum = rowInv.data();
  stats.dot = rowDot.data();
  ForwardParams statsPass = f;
  statsPass.o = nullptr;
  statsPass.dO = t.dO.data();
  statsPass.dOType = storage;
  statsPass.stats = stats;
  error = runForward<T, D>(statsPass, c.timing);
  ASSERT_EQ(error, "") << "statistics";

  BackwardParams p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.dO = t.dO.data();
  p.qType = p.kType = p.vType = p.dOType = storage;
  if (packed) {
    p.dq = t.dqkv.data() + qkvPartOffset(0, h, D);
    p.dk = t.dqkv.data() + qkvPartOffset(1, h, D);
    p.dv = t.dqkv.data() + qkvPartOffset(2, h, D);
  } else {
    p.dq = t.dq.data();
    p.dk = t.dk.data();
    p.dv = t.dv.data();
  }
  p.dqType = p.dkType = p.dvType = storage;
  p.stats = stats;
  p.shape = shape;
  p.dropout = dropout;
  error = runBackward<T, D>(p, c.timing);
  ASSERT_EQ(error, "") << "backward";

  // The CPU device's kernels on the same values.
  std::vector<float> qkvF, qF, kF, vF;
  const float *cq, *ck, *cv;
  if (packed) {
    qkvF = toFloat(t.qkv);
    cq = qkvF.data() + qkvPartOffset(0, h, D);
    ck = qkvF.data() + qkvPartOffset(1, h, D);
    cv = qkvF.data() + qkvPartOffset(2, h, D);
  } else {
    qF = toFloat(t.q);
    kF = toFloat(t.k);
    vF = toFloat(t.v);
    cq = qF.data();
    ck = kF.data();
    cv = vF.data();
  }
  std::vector<float> dOF = toFloat(t.dO);
  std::vector<float> scratch(cpu::attentionGradScratchSize(sq, sk));
  std::vector<float> o(qSize);
  const cpu::AttentionDropout *drop = c.dropout ? &cpuDropout : nullptr;
  Status st = cpu::attention(cq, ck, cv, b, h, kv, sq, sk, D, D, c.causal,
                             scale, scratch.data(), o.data(), drop, c.layout);
  ASSERT_TRUE(st) << st.message();
  std::vector<float> dqkv, dq, dk, dv;
  float *gq, *gk, *gv;
  if (packed) {
    dqkv.assign(kQkvParts * qSize, NAN);
    gq = dqkv.data() + qkvPartOffset(0, h, D);
    gk = dqkv.data() + qkvPartOffset(1, h, D);
    gv = dqkv.data() + qkvPartOffset(2, h, D);
  } else {
    dq.assign(qSize, NAN);
    dk.assign(kvSize, NAN);
    dv.assign(kvSize, NAN);
    gq = dq.data();
    gk = dk.data();
    gv = dv.data();
  }
  st = cpu::attentionGrad(dOF.data(), cq, ck, cv, b, h, kv, sq, sk, D, D,
                          c.causal, scale, scratch.data(), gq, gk, gv, drop,
                          c.layout);
  ASSERT_TRUE(st) << st.message();

  const double tolerance = c.bf16 ? kBf16Tolerance : kF16Tolerance;
  auto check = [&](const char *name, const std::vector<uint16_t> &got,
                   const std::vector<float> &want) {
    Error e = compare(got, c.bf16, want);
    std::printf("  %-4s normwise %.2e maxwise %.2e\n", name, e.normwise,
                e.maxwise);
    EXPECT_EQ(e.nans, 0) << name << ": elements not written";
    EXPECT_LE(e.normwise, tolerance) << name;
  };
  check("O", t.o, o);
  if (packed) {
    check("dQKV", t.dqkv, dqkv);
  } else {
    check("dQ", t.dq, dq);
    check("dK", t.dk, dk);
    check("dV", t.dv, dv);
  }
}

void run(const Case &c) {
  if (c.bf16 && c.dim == 64)
    runCase<__nv_bfloat16, 64>(c);
  else if (c.bf16)
    runCase<__nv_bfloat16, 128>(c);
  else if (c.dim == 64)
    runCase<__half, 64>(c);
  else
    runCase<__half, 128>(c);
}

using Layout = AttentionLayout;
using Timing = emu::CopyTiming;

// Together: bf16 and f16 at d 64 and 128, each layout causal and not, with
// and without dropout; grouped kv heads in both unpacked layouts.

TEST(FlashEmulation, Bf16D64HeadMajorCausalGrouped) {
  Case c;
  c.layout = Layout::HeadMajor;
  c.heads = 4, c.kvHeads = 2, c.seqQ = 77, c.seqK = 130, c.causal = true;
  run(c);
}

TEST(FlashEmulation, F16D64SeqMajorDropoutGrouped) {
  Case c;
  c.bf16 = false;
  c.layout = Layout::SeqMajor;
  c.batch = 2, c.heads = 2, c.kvHeads = 1, c.seqQ = 37, c.seqK = 77;
  c.dropout = true, c.timing = Timing::AtIssue;
  run(c);
}

TEST(FlashEmulation, Bf16D128PackedCausalDropout) {
  Case c;
  c.dim = 128;
  c.layout = Layout::PackedQkv;
  c.seqQ = c.seqK = 130, c.causal = true, c.dropout = true;
  run(c);
}

TEST(FlashEmulation, F16D128HeadMajorMoreQueries) {
  Case c;
  c.bf16 = false, c.dim = 128;
  c.layout = Layout::HeadMajor;
  c.heads = 2, c.kvHeads = 2, c.seqQ = 130, c.seqK = 37;
  c.timing = Timing::AtIssue;
  run(c);
}

TEST(FlashEmulation, Bf16D64Packed) {
  Case c;
  c.layout = Layout::PackedQkv;
  c.batch = 2, c.seqQ = c.seqK = 77;
  c.timing = Timing::AtIssue;
  run(c);
}

TEST(FlashEmulation, F16D64PackedCausalDropout) {
  Case c;
  c.bf16 = false;
  c.layout = Layout::PackedQkv;
  c.seqQ = c.seqK = 37, c.causal = true, c.dropout = true;
  run(c);
}

TEST(FlashEmulation, Bf16D128SeqMajorCausalSplitDropoutGrouped) {
  Case c;
  c.dim = 128;
  c.layout = Layout::SeqMajor;
  c.heads = 4, c.kvHeads = 1, c.seqQ = 37, c.seqK = 77, c.causal = true;
  c.dropout = true, c.splitDropout = true, c.timing = Timing::AtIssue;
  run(c);
}

TEST(FlashEmulation, F16D128SeqMajorCausal) {
  Case c;
  c.bf16 = false, c.dim = 128;
  c.layout = Layout::SeqMajor;
  c.kvHeads = 1, c.seqQ = c.seqK = 130, c.causal = true;
  run(c);
}

TEST(FlashEmulation, Bf16D64OneQueryCausalDropout) {
  Case c;
  c.layout = Layout::HeadMajor;
  c.seqQ = 1, c.seqK = 65, c.causal = true, c.dropout = true;
  run(c);
}

} // namespace
