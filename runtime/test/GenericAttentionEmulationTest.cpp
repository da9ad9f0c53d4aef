//===- GenericAttentionEmulationTest.cpp - fp32 FMA attention, emulated ---===//
//
// cuda/GenericAttention.cuh's kernels, the real header compiled for the
// host with TPCRT_CUDA_EMULATION (CudaEmulation.h: CUDA's threads,
// barriers, __syncwarp and shuffles, emulated), run as AttentionKernels.cu
// launches them (tileGrid, kThreadsGeneric, the shared memory sizes and
// capacities of the header) and compared with the CPU device's attention
// and attentionGrad on the same inputs. An emulation, not a GPU run: it
// tests the kernels' indexing, masks (keys past s_k, causal with s_q < s_k),
// dropout stream, head layouts (head-major, sequence-major, packed q/k/v),
// grouped kv heads, head_dim != value_dim and the three capacities (64,
// 128, 256), not the hardware. f32 and bf16 storage, lengths that are not
// multiples of the 32-row tiles. Every result (and the statistics) starts
// as NaN, so an element no kernel writes fails.
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
#include <cstring>
#include <random>
#include <string>
#include <vector>

// Last: it defines CUDA's keywords and built-in variables as macros
// (TPCRT_CUDA_EMULATION, defined by the build, makes it the host's).
#include "GenericAttention.cuh"

#include "AttentionEmulation.h"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::attn;
using namespace tpcrt::cuda::attn::generic;
using namespace tpcrt::cuda::attn::test;

namespace {

/// Norm-wise relative errors ||kernel - cpu|| / ||cpu|| allowed.
///
/// f32: 1e-5, the project's device-check bound for fp32. It holds because
/// the kernels compute as the CPU does, in fp32 from the same fp32 inputs,
/// with no rounding to a narrower type anywhere: the scores are fp32 dot
/// products (the CPU's sgemm), the softmax an fp32 exp of score - max (the
/// kernels' online rescaling by e^(old max - new max) is exact up to a few
/// ulps), P V, dO V^T, dS K and dS^T q fp32 sums over at most a few hundred
/// terms. Only the order of the sums and exp's last bits differ, a relative
/// error of a few ulps times sqrt(terms): about 1e-6 at most (observed: 2e-7
/// to 7e-7), while an indexing, masking or dropout error is of order 1.
///
/// bf16: 1e-2. The inputs are the same bf16 values for both (converted
/// exactly to float for the CPU) and the kernels compute in fp32, so the
/// difference is the results' rounding to bf16 on store, at most u = 2^-8
/// relative, at most u / sqrt(3) = 2.3e-3 rms (observed: 1.6e-3 to 1.7e-3).
constexpr double kF32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 1e-2;

struct Case {
  Storage storage = Storage::F32;
  int headDim = 40, valueDim = 24;
  AttentionLayout layout = AttentionLayout::HeadMajor;
  int64_t batch = 1, heads = 2, kvHeads = 2, seqQ = 37, seqK = 37;
  bool causal = false;
  bool dropout = false;
  /// The dropout of one rank's block of a split tensor (offsets and global
  /// sizes), not of the whole.
  bool splitDropout = false;
};

/// A tensor of f32 or bf16 elements.
struct Buffer {
  Storage storage = Storage::F32;
  std::vector<unsigned char> bytes;

  Buffer() = default;
  Buffer(Storage storage, int64_t n, float fill) : storage(storage) {
    bytes.resize(n * elementBytes());
    for (int64_t i = 0; i < n; ++i)
      set(i, fill);
  }
  size_t elementBytes() const { return storage == Storage::BF16 ? 2 : 4; }
  int64_t size() const {
    return static_cast<int64_t>(bytes.size() / elementBytes());
  }
  void set(int64_t i, float value) {
    storeFloat(bytes.data(), storage, i, value);
  }
  float get(int64_t i) const { return loadFloat(bytes.data(), storage, i); }
  /// Element i's address (a packed part's start).
  void *at(int64_t i) { return bytes.data() + i * elementBytes(); }
  std::vector<float> toFloat() const {
    std::vector<float> f(size());
    for (int64_t i = 0; i < size(); ++i)
      f[i] = get(i);
    return f;
  }
};

/// genericForwardKernel's launch (AttentionKernels.cu's runForward and
/// launchGenericForward).
template <int Cap> std::string runForward(const ForwardParams &p) {
  const Shape &s = p.shape;
  int64_t tiles = (s.seqQ + kRows - 1) / kRows;
  if (s.batch * s.heads == 0 || tiles == 0)
    return "";
  return emu::launch(tileGrid(tiles, s.batch * s.heads), dim3(kThreadsGeneric),
                     genericForwardSmem(s.headDim, s.valueDim),
                     [&] { genericForwardKernel<Cap>(p); });
}

/// The two backward kernels' launches (launchGenericBackward).
template <int Cap> std::string runBackward(const BackwardParams &p) {
  const Shape &s = p.shape;
  if (s.seqK > 0) {
    std::string error = emu::launch(
        tileGrid((s.seqK + kKeys - 1) / kKeys, s.batch * s.kvHeads),
        dim3(kThreadsGeneric), genericKeyValueSmem(s.headDim, s.valueDim),
        [&] { genericKeyValueKernel<Cap>(p); });
    if (!error.empty())
      return "dK/dV: " + error;
  }
  if (s.seqQ > 0 && s.batch * s.heads > 0) {
    std::string error = emu::launch(
        tileGrid((s.seqQ + kRows - 1) / kRows, s.batch * s.heads),
        dim3(kThreadsGeneric), genericQuerySmem(s.headDim, s.valueDim),
        [&] { genericQueryKernel<Cap>(p); });
    if (!error.empty())
      return "dQ: " + error;
  }
  return "";
}

template <int Cap> void runCase(const Case &c) {
  const bool packed = c.layout == AttentionLayout::PackedQkv;
  const int64_t b = c.batch, h = c.heads, kv = c.kvHeads, sq = c.seqQ,
                sk = c.seqK, d = c.headDim, dv = c.valueDim;
  ASSERT_TRUE(!packed || (kv == h && sq == sk && d == dv));
  ASSERT_EQ(capacityFor(d, dv), Cap);
  const Storage storage = c.storage;

  // Inputs: normal values (q and k with a wider spread: peaked softmaxes),
  // rounded to the storage.
  std::mt19937 rng(static_cast<unsigned>(d * 1000 + dv * 100 + sq * 10 + sk));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](int64_t n, float sd) {
    Buffer x(storage, n, 0.0f);
    for (int64_t i = 0; i < n; ++i)
      x.set(i, sd * normal(rng));
    return x;
  };
  const int64_t qSize = b * h * sq * d, kSize = b * kv * sk * d,
                vSize = b * kv * sk * dv, oSize = b * h * sq * dv;
  // Packed: q, k, v (and dq, dk, dv) the parts of one [b, s, 3, h, d].
  Buffer qkv, q, k, v;
  const void *qp, *kp, *vp;
  if (packed) {
    qkv = random(kQkvParts * qSize, 1.5f);
    qp = qkv.at(qkvPartOffset(0, h, d));
    kp = qkv.at(qkvPartOffset(1, h, d));
    vp = qkv.at(qkvPartOffset(2, h, d));
  } else {
    q = random(qSize, 1.5f);
    k = random(kSize, 1.5f);
    v = random(vSize, 1.0f);
    qp = q.bytes.data();
    kp = k.bytes.data();
    vp = v.bytes.data();
  }
  Buffer dO = random(oSize, 1.0f);
  Buffer o(storage, oSize, NAN), dqkv, dq, dk, dvBuf;
  if (packed) {
    dqkv = Buffer(storage, kQkvParts * qSize, NAN);
  } else {
    dq = Buffer(storage, qSize, NAN);
    dk = Buffer(storage, kSize, NAN);
    dvBuf = Buffer(storage, vSize, NAN);
  }

  // The shape and dropout as AttentionKernels.cu's attentionSetup builds
  // them, and the CPU's dropout of the same stream.
  Problem problem;
  problem.layout = c.layout;
  problem.batch = b, problem.heads = h, problem.kvHeads = kv;
  problem.seqQ = sq, problem.seqK = sk;
  problem.headDim = d, problem.valueDim = dv;
  problem.causal = c.causal, problem.dropout = c.dropout;
  problem.splitDropout = c.splitDropout;
  Shape shape;
  Dropout dropout;
  cpu::AttentionDropout cpuDropout;
  setUp(problem, shape, dropout, cpuDropout);

  // The kernels: the forward, then attention_grad's sequence
  // (AttentionKernels.cu's runAttentionGrad): the statistics pass (the
  // forward with o null), dK/dV, dQ.
  DeviceTensors tensors;
  tensors.q = qp, tensors.k = kp, tensors.v = vp;
  tensors.dO = dO.bytes.data();
  tensors.o = o.bytes.data();
  if (packed) {
    tensors.dq = dqkv.at(problem.part(0));
    tensors.dk = dqkv.at(problem.part(1));
    tensors.dv = dqkv.at(problem.part(2));
  } else {
    tensors.dq = dq.bytes.data(), tensors.dk = dk.bytes.data();
    tensors.dv = dvBuf.bytes.data();
  }
  tensors.storage = storage;
  Statistics statistics(problem);
  Launches launches = launchesFor(tensors, shape, dropout, statistics.rows());
  ASSERT_EQ(runForward<Cap>(launches.forward), "") << "forward";
  ASSERT_EQ(runForward<Cap>(launches.statisticsPass), "") << "statistics";
  ASSERT_EQ(runBackward<Cap>(launches.backward), "") << "backward";

  // The CPU device's kernels on the same values.
  Reference ref;
  runCpu(problem, (packed ? qkv : q).toFloat(), k.toFloat(), v.toFloat(),
         dO.toFloat(), cpuDropout, ref);
  if (::testing::Test::HasFatalFailure())
    return;
  const double tolerance =
      storage == Storage::F32 ? kF32Tolerance : kBf16Tolerance;
  expectClose("O", o.toFloat(), ref.o, tolerance);
  if (packed) {
    expectClose("dQKV", dqkv.toFloat(), ref.dqkv, tolerance);
  } else {
    expectClose("dQ", dq.toFloat(), ref.dq, tolerance);
    expectClose("dK", dk.toFloat(), ref.dk, tolerance);
    expectClose("dV", dvBuf.toFloat(), ref.dv, tolerance);
  }
}

/// The capacity AttentionKernels.cu picks (capacityFor).
void run(const Case &c) {
  switch (capacityFor(c.headDim, c.valueDim)) {
  case 64:
    return runCase<64>(c);
  case 128:
    return runCase<128>(c);
  default:
    return runCase<256>(c);
  }
}

using Layout = AttentionLayout;

// Together: f32 and bf16 at each capacity (d / dv 40 / 24, 96, 128 / 64,
// 200 / 256), each layout causal and not, with and without dropout (also a
// split block's); grouped kv heads in both unpacked layouts.

TEST(GenericAttentionEmulation, F32D40Dv24HeadMajorCausalDropoutGrouped) {
  Case c;
  c.layout = Layout::HeadMajor;
  c.heads = 4, c.kvHeads = 2, c.seqQ = 37, c.seqK = 70, c.causal = true;
  c.dropout = true;
  run(c);
}

TEST(GenericAttentionEmulation, Bf16D40Dv24SeqMajorMoreQueriesDropoutGrouped) {
  Case c;
  c.storage = Storage::BF16;
  c.layout = Layout::SeqMajor;
  c.batch = 2, c.heads = 2, c.kvHeads = 1, c.seqQ = 45, c.seqK = 37;
  c.dropout = true;
  run(c);
}

TEST(GenericAttentionEmulation, F32D200Dv256HeadMajorMoreQueriesSplitDropout) {
  Case c;
  c.headDim = 200, c.valueDim = 256;
  c.layout = Layout::HeadMajor;
  c.seqQ = 70, c.seqK = 45;
  c.dropout = true, c.splitDropout = true;
  run(c);
}

TEST(GenericAttentionEmulation, Bf16D200Dv256SeqMajorCausalGrouped) {
  Case c;
  c.storage = Storage::BF16;
  c.headDim = 200, c.valueDim = 256;
  c.layout = Layout::SeqMajor;
  c.heads = 2, c.kvHeads = 1, c.seqQ = 37, c.seqK = 70, c.causal = true;
  run(c);
}

TEST(GenericAttentionEmulation, F32D96PackedCausalDropout) {
  Case c;
  c.headDim = c.valueDim = 96;
  c.layout = Layout::PackedQkv;
  c.seqQ = c.seqK = 70, c.causal = true, c.dropout = true;
  run(c);
}

TEST(GenericAttentionEmulation, Bf16D40Packed) {
  Case c;
  c.storage = Storage::BF16;
  c.headDim = c.valueDim = 40;
  c.layout = Layout::PackedQkv;
  c.batch = 2, c.seqQ = c.seqK = 45;
  run(c);
}

TEST(GenericAttentionEmulation, F32D128Dv64SeqMajorCausalSplitDropoutGrouped) {
  Case c;
  c.headDim = 128, c.valueDim = 64;
  c.layout = Layout::SeqMajor;
  c.heads = 3, c.kvHeads = 1, c.seqQ = 45, c.seqK = 70, c.causal = true;
  c.dropout = true, c.splitDropout = true;
  run(c);
}

TEST(GenericAttentionEmulation, Bf16D24Dv40HeadMajorCausalSquare) {
  Case c;
  c.storage = Storage::BF16;
  c.headDim = 24, c.valueDim = 40;
  c.layout = Layout::HeadMajor;
  c.heads = 4, c.kvHeads = 1, c.seqQ = c.seqK = 70, c.causal = true;
  run(c);
}

TEST(GenericAttentionEmulation, F32D40Dv24OneQueryCausalDropout) {
  Case c;
  c.layout = Layout::HeadMajor;
  c.seqQ = 1, c.seqK = 37, c.causal = true, c.dropout = true;
  run(c);
}

} // namespace
