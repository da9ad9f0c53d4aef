//===- FlashEmulationTest.cpp - the tensor-core attention, emulated -------===//
//
// cuda/FlashAttention.cuh's kernels and HopperAttention.cuh's wgmma forward,
// the real headers compiled for the host with TPCRT_CUDA_EMULATION
// (CudaEmulation.h: CUDA's threads, barriers, shuffles and the PTX of
// cp.async, ldmatrix, mma.sync and wgmma, emulated), run
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

// Last: it defines CUDA's keywords and built-in variables as macros
// (TPCRT_CUDA_EMULATION, defined by the build, makes it the host's).
#include "HopperAttention.cuh"

#include "AttentionEmulation.h"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;
using namespace tpcrt::cuda::attn::test;

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
/// Element-wise the same roundings do not average out: each element's error
/// within 4 u of the largest element's magnitude (observed up to 1.4 u for
/// bf16 and 2.5 u for f16). One score leaking through a mask at a tile's
/// edge moves a few elements by more (5.7 u in the OffBy7 cases) while its
/// norm-wise error stays under the bound above.
constexpr double kBf16MaxTolerance = 4.0 / 256;
constexpr double kF16MaxTolerance = 4.0 / 2048;

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
  /// Every kernel on HopperAttention.cuh's wgmma instead of mma.sync.
  bool wgmma = false;
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

/// A forward kernel's launch (AttentionKernels.cu's runForward, tensor
/// path; HopperAttention.cu's): blocks of `rows` query rows.
using ForwardKernel = void (*)(ForwardParams);
std::string launchForward(const ForwardParams &p, int64_t rows, int threads,
                          size_t smemBytes, ForwardKernel withDropout,
                          ForwardKernel without, emu::CopyTiming timing) {
  const Shape &s = p.shape;
  int64_t tiles = (s.seqQ + rows - 1) / rows;
  if (s.batch * s.heads == 0 || tiles == 0)
    return "";
  ForwardKernel kernel = p.dropout.enabled ? withDropout : without;
  return emu::launch(
      tileGrid(tiles, s.batch * s.heads), dim3(threads), smemBytes,
      [&] { kernel(p); }, timing);
}

/// forwardKernel's launch (AttentionKernels.cu's runForward, tensor path).
template <typename T, int D>
std::string runForward(const ForwardParams &p, emu::CopyTiming timing,
                       bool wgmma) {
  if (wgmma)
    return launchForward(p, hopper::kBlockM, hopper::kThreads,
                         hopper::Config<D>::kSmemBytes,
                         hopper::forwardKernel<T, D, true>,
                         hopper::forwardKernel<T, D, false>, timing);
  using Cfg = flash::ForwardConfig<D>;
  return launchForward(p, Cfg::kBlockM, flash::kThreads, Cfg::kSmemBytes,
                       flash::forwardKernel<T, D, true>,
                       flash::forwardKernel<T, D, false>, timing);
}

/// The two backward kernels' launches (AttentionKernels.cu's
/// launchTensorBackward).
template <typename T, int D>
std::string runBackward(const BackwardParams &p, emu::CopyTiming timing,
                        bool wgmma) {
  using Cfg = flash::BackwardConfig<D>;
  const Shape &s = p.shape;
  if (s.seqK > 0 && wgmma) {
    using HCfg = hopper::KeyValueGradConfig<D>;
    dim3 grid = tileGrid((s.seqK + HCfg::kBlockKeys - 1) / HCfg::kBlockKeys,
                         s.batch * s.kvHeads);
    std::string error = emu::launch(
        grid, dim3(hopper::kThreads), HCfg::kSmemBytes,
        [&] { hopper::backwardKeyValueKernel<T, D>(p); }, timing);
    if (!error.empty())
      return "dK/dV (wgmma): " + error;
  } else if (s.seqK > 0) {
    dim3 grid =
        tileGrid((s.seqK + Cfg::kKeys - 1) / Cfg::kKeys, s.batch * s.kvHeads);
    std::string error = emu::launch(
        grid, dim3(flash::kThreads), Cfg::kKeyValueSmemBytes,
        [&] { flash::backwardKeyValueKernel<T, D>(p); }, timing);
    if (!error.empty())
      return "dK/dV: " + error;
  }
  if (s.seqQ > 0 && s.batch * s.heads > 0 && wgmma) {
    dim3 grid = tileGrid((s.seqQ + hopper::kBlockM - 1) / hopper::kBlockM,
                         s.batch * s.heads);
    std::string error = emu::launch(
        grid, dim3(hopper::kThreads), hopper::QueryGradConfig<D>::kSmemBytes,
        [&] { hopper::backwardQueryKernel<T, D>(p); }, timing);
    if (!error.empty())
      return "dQ (wgmma): " + error;
  } else if (s.seqQ > 0 && s.batch * s.heads > 0) {
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
  Problem problem;
  problem.layout = c.layout;
  problem.batch = b, problem.heads = h, problem.kvHeads = kv;
  problem.seqQ = sq, problem.seqK = sk;
  problem.headDim = problem.valueDim = D;
  problem.causal = c.causal, problem.dropout = c.dropout;
  problem.splitDropout = c.splitDropout;
  Shape shape;
  Dropout dropout;
  cpu::AttentionDropout cpuDropout;
  setUp(problem, shape, dropout, cpuDropout);

  // The kernels: the forward, then attention_grad's sequence
  // (AttentionKernels.cu's runAttentionGrad): the statistics pass, dK/dV,
  // dQ.
  DeviceTensors tensors;
  tensors.q = q, tensors.k = k, tensors.v = v, tensors.dO = t.dO.data();
  tensors.o = t.o.data();
  if (packed) {
    tensors.dq = t.dqkv.data() + problem.part(0);
    tensors.dk = t.dqkv.data() + problem.part(1);
    tensors.dv = t.dqkv.data() + problem.part(2);
  } else {
    tensors.dq = t.dq.data(), tensors.dk = t.dk.data();
    tensors.dv = t.dv.data();
  }
  tensors.storage = storage;
  Statistics statistics(problem);
  Launches launches = launchesFor(tensors, shape, dropout, statistics.rows());
  ASSERT_EQ((runForward<T, D>(launches.forward, c.timing, c.wgmma)), "")
      << "forward";
  ASSERT_EQ((runForward<T, D>(launches.statisticsPass, c.timing, c.wgmma)), "")
      << "statistics";
  ASSERT_EQ((runBackward<T, D>(launches.backward, c.timing, c.wgmma)), "")
      << "backward";

  // The CPU device's kernels on the same values.
  Reference ref;
  runCpu(problem, toFloat(packed ? t.qkv : t.q), toFloat(t.k), toFloat(t.v),
         toFloat(t.dO), cpuDropout, ref);
  if (::testing::Test::HasFatalFailure())
    return;
  const double tolerance = c.bf16 ? kBf16Tolerance : kF16Tolerance;
  const double maxTolerance = c.bf16 ? kBf16MaxTolerance : kF16MaxTolerance;
  expectClose("O", toFloat(t.o), ref.o, tolerance, maxTolerance);
  if (packed) {
    expectClose("dQKV", toFloat(t.dqkv), ref.dqkv, tolerance, maxTolerance);
  } else {
    expectClose("dQ", toFloat(t.dq), ref.dq, tolerance, maxTolerance);
    expectClose("dK", toFloat(t.dk), ref.dk, tolerance, maxTolerance);
    expectClose("dV", toFloat(t.dv), ref.dv, tolerance, maxTolerance);
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

// Rows whose streams start on a block of 16 (firstIndex and s_k multiples
// of 16, as most tensors' do): the kernels draw four scores a hash there
// (keptColumns, keptKeys), elsewhere a pair or one.
TEST(FlashEmulation, Bf16D64HeadMajorCausalDropoutRowsOn16) {
  Case c;
  c.heads = 4, c.kvHeads = 2, c.seqQ = 80, c.seqK = 96, c.causal = true;
  c.dropout = true;
  run(c);
}
TEST(FlashEmulation, F16D128SeqMajorDropoutGroupedRowsOn16) {
  Case c;
  c.bf16 = false, c.dim = 128;
  c.layout = Layout::SeqMajor;
  c.batch = 2, c.heads = 2, c.kvHeads = 1, c.seqQ = 48, c.seqK = 128;
  c.dropout = true, c.timing = Timing::AtIssue;
  run(c);
}

// The wgmma forward (HopperAttention.cuh): two warpgroups of 64 rows, key
// tiles of 128; lengths across several query and key tiles and not
// multiples of them, each layout, causal and not, dropout, grouped heads.

TEST(FlashEmulation, WgmmaBf16D64HeadMajorCausalGrouped) {
  Case c;
  c.wgmma = true;
  c.heads = 4, c.kvHeads = 2, c.seqQ = 77, c.seqK = 260, c.causal = true;
  run(c);
}

TEST(FlashEmulation, WgmmaF16D128SeqMajorDropoutGrouped) {
  Case c;
  c.wgmma = true;
  c.bf16 = false, c.dim = 128;
  c.layout = Layout::SeqMajor;
  c.batch = 2, c.heads = 3, c.kvHeads = 1, c.seqQ = 133, c.seqK = 150;
  c.dropout = true, c.timing = Timing::AtIssue;
  run(c);
}

TEST(FlashEmulation, WgmmaBf16D128PackedCausalDropout) {
  Case c;
  c.wgmma = true;
  c.dim = 128;
  c.layout = Layout::PackedQkv;
  c.seqQ = c.seqK = 200, c.causal = true, c.dropout = true;
  run(c);
}

TEST(FlashEmulation, WgmmaF16D64HeadMajorMoreQueries) {
  Case c;
  c.wgmma = true;
  c.bf16 = false;
  c.heads = 2, c.kvHeads = 2, c.seqQ = 140, c.seqK = 37;
  run(c);
}

TEST(FlashEmulation, WgmmaBf16D128SeqMajorCausalSplitDropoutGrouped) {
  Case c;
  c.wgmma = true;
  c.dim = 128;
  c.layout = Layout::SeqMajor;
  c.heads = 4, c.kvHeads = 1, c.seqQ = 37, c.seqK = 170, c.causal = true;
  c.dropout = true, c.splitDropout = true, c.timing = Timing::AtIssue;
  run(c);
}

TEST(FlashEmulation, WgmmaBf16D128HeadMajorCausalDropoutGroupedRowsOn16) {
  Case c;
  c.wgmma = true;
  c.dim = 128;
  c.heads = 4, c.kvHeads = 2, c.seqQ = 144, c.seqK = 160, c.causal = true;
  c.dropout = true;
  run(c);
}
TEST(FlashEmulation, WgmmaF16D64PackedDropoutRowsOn16) {
  Case c;
  c.wgmma = true;
  c.bf16 = false;
  c.layout = Layout::PackedQkv;
  c.seqQ = c.seqK = 192, c.dropout = true, c.timing = Timing::AtIssue;
  run(c);
}
// Five key tiles, the running max changing along them: the accumulators are
// rescaled between wgmmas many times (a rescale while a wgmma into them is
// pending is a fault, not only a wrong value).
TEST(FlashEmulation, WgmmaBf16D64HeadMajorManyKeyTiles) {
  Case c;
  c.wgmma = true;
  c.heads = 1, c.kvHeads = 1, c.seqQ = 70, c.seqK = 600;
  run(c);
}

// The backward skips the per-score visibility checks on steps and tiles
// that every query sees whole; with s_k = s_q + 7 (the causal diagonal 7
// keys right) the last key of some 64-key tile is exactly one past a quad's
// first visible row, and some quad's key one past its step's first query:
// the boundaries where an off-by-one there shows (each tried).
Case causalDiagonalOffBy7(bool wgmma) {
  Case c;
  c.wgmma = wgmma;
  c.layout = Layout::SeqMajor;
  c.seqQ = 130, c.seqK = 137, c.causal = true;
  return c;
}

TEST(FlashEmulation, Bf16D64SeqMajorCausalDiagonalOffBy7) {
  run(causalDiagonalOffBy7(false));
}

TEST(FlashEmulation, WgmmaBf16D64SeqMajorCausalDiagonalOffBy7) {
  run(causalDiagonalOffBy7(true));
}

TEST(FlashEmulation, WgmmaBf16D64OneQueryCausalDropout) {
  Case c;
  c.wgmma = true;
  c.seqQ = 1, c.seqK = 129, c.causal = true, c.dropout = true;
  run(c);
}

} // namespace
