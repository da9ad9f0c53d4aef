//===- AttentionEmulation.h - the attention emulation tests' shared part -===//
//
// FlashEmulationTest.cpp and GenericAttentionEmulationTest.cpp run the two
// families of CUDA attention kernels, emulated, against the CPU device's
// attention and attentionGrad. Shared here: one problem's sizes, the
// kernels' Shape and Dropout as AttentionKernels.cu's attentionSetup builds
// them (with the CPU's dropout of the same stream), the CPU's results, and
// the comparison. Include after the kernels' header (it uses their Shape,
// Dropout and the emulation's types).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_ATTENTIONEMULATION_H
#define TPCRT_TEST_ATTENTIONEMULATION_H

#include "tpcrt/AttentionRows.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace tpcrt::cuda::attn::test {

/// One attention call's sizes and attributes.
struct Problem {
  AttentionLayout layout = AttentionLayout::HeadMajor;
  int64_t batch = 1, heads = 2, kvHeads = 2, seqQ = 37, seqK = 37;
  int64_t headDim = 64, valueDim = 64;
  bool causal = false, dropout = false;
  /// The dropout of one rank's block of a split tensor (offsets and global
  /// sizes), not of the whole.
  bool splitDropout = false;

  bool packed() const { return layout == AttentionLayout::PackedQkv; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(headDim)); }
  int64_t qSize() const { return batch * heads * seqQ * headDim; }
  int64_t kSize() const { return batch * kvHeads * seqK * headDim; }
  int64_t vSize() const { return batch * kvHeads * seqK * valueDim; }
  int64_t oSize() const { return batch * heads * seqQ * valueDim; }
  /// Where part `part` (0 q, 1 k, 2 v) of a packed tensor starts.
  int64_t part(int64_t part) const {
    return qkvPartOffset(part, heads, headDim);
  }
};

/// The kernels' Shape and Dropout for `p`, and the CPU's dropout drawing
/// the same stream (`cpuDropout` only meaningful with p.dropout).
inline void setUp(const Problem &p, Shape &shape, Dropout &dropout,
                  cpu::AttentionDropout &cpuDropout) {
  shape = Shape();
  shape.batch = p.batch;
  shape.heads = p.heads;
  shape.kvHeads = p.kvHeads;
  shape.seqQ = p.seqQ;
  shape.seqK = p.seqK;
  shape.headDim = static_cast<int>(p.headDim);
  shape.valueDim = static_cast<int>(p.valueDim);
  shape.group = p.heads / p.kvHeads;
  shape.causal = p.causal;
  shape.causalOffset = p.seqK - p.seqQ;
  shape.scale = p.scale();
  shape.qRows = headRows(p.layout, p.heads, p.seqQ, p.headDim);
  shape.kRows = headRows(p.layout, p.kvHeads, p.seqK, p.headDim);
  shape.vRows = headRows(p.layout, p.kvHeads, p.seqK, p.valueDim);
  shape.oRows = resultRows(p.layout, p.heads, p.seqQ, p.valueDim);
  dropout = Dropout();
  cpuDropout = cpu::AttentionDropout();
  if (!p.dropout)
    return;
  const double rate = 0.25;
  cpuDropout.key = dropoutKey(1234, 7, 3);
  cpuDropout.rate = rate;
  // Whole tensors start at an even stream index (the kernels hash column
  // pairs there), split blocks at an odd one (a hash per column).
  cpuDropout.firstIndex = p.splitDropout ? 987654321 : 987654320;
  if (p.splitDropout) {
    cpuDropout.batchOffset = 1;
    cpuDropout.headOffset = 2;
    cpuDropout.queryOffset = 5;
    cpuDropout.globalHeads = p.heads + 3;
    cpuDropout.globalSeqQ = p.seqQ + 11;
  }
  dropout.enabled = true;
  dropout.key = cpuDropout.key;
  dropout.threshold = dropoutThreshold(rate);
  dropout.scale = dropoutScale(rate);
  dropout.firstIndex = cpuDropout.firstIndex;
  dropout.batchOffset = cpuDropout.batchOffset;
  dropout.headOffset = cpuDropout.headOffset;
  dropout.queryOffset = cpuDropout.queryOffset;
  dropout.globalHeads = p.splitDropout ? cpuDropout.globalHeads : p.heads;
  dropout.globalSeqQ = p.splitDropout ? cpuDropout.globalSeqQ : p.seqQ;
}

/// Where one run's tensors lie (host memory standing in for the device's),
/// all of one storage type.
struct DeviceTensors {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *dO = nullptr;
  void *o = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
  Storage storage = Storage::F32;
};

/// attention_grad's per-row statistics, NaN to start with.
struct Statistics {
  std::vector<float> max, invSum, dot;
  explicit Statistics(const Problem &p)
      : max(p.batch * p.heads * p.seqQ, NAN), invSum(max), dot(max) {}
  RowStats rows() {
    RowStats stats;
    stats.max = max.data();
    stats.invSum = invSum.data();
    stats.dot = dot.data();
    return stats;
  }
};

/// The kernels' parameters as AttentionKernels.cu's runAttention and
/// runAttentionGrad set them: the forward (writing o), attention_grad's
/// statistics pass (the forward with o null, reading dO) and its backward.
struct Launches {
  ForwardParams forward, statisticsPass;
  BackwardParams backward;
};

inline Launches launchesFor(const DeviceTensors &t, const Shape &shape,
                            const Dropout &dropout, RowStats stats) {
  Launches l;
  ForwardParams &f = l.forward;
  f.q = t.q;
  f.k = t.k;
  f.v = t.v;
  f.qType = f.kType = f.vType = t.storage;
  f.o = t.o;
  f.oType = t.storage;
  f.shape = shape;
  f.dropout = dropout;
  l.statisticsPass = f;
  l.statisticsPass.o = nullptr;
  l.statisticsPass.dO = t.dO;
  l.statisticsPass.dOType = t.storage;
  l.statisticsPass.stats = stats;
  BackwardParams &b = l.backward;
  b.q = t.q;
  b.k = t.k;
  b.v = t.v;
  b.dO = t.dO;
  b.qType = b.kType = b.vType = b.dOType = t.storage;
  b.dq = t.dq;
  b.dk = t.dk;
  b.dv = t.dv;
  b.dqType = b.dkType = b.dvType = t.storage;
  b.stats = stats;
  b.shape = shape;
  b.dropout = dropout;
  return l;
}

/// The CPU device's results for `p`: o, and dq, dk, dv (packed: dqkv).
struct Reference {
  std::vector<float> o, dq, dk, dv, dqkv;
};

/// cpu::attention and cpu::attentionGrad of q, k, v (packed: q is the
/// [b, s, 3, heads, d] tensor, k and v unused) and dO, as floats.
inline void runCpu(const Problem &p, const std::vector<float> &q,
                   const std::vector<float> &k, const std::vector<float> &v,
                   const std::vector<float> &dO,
                   const cpu::AttentionDropout &cpuDropout, Reference &ref) {
  const float *cq = q.data(), *ck = k.data(), *cv = v.data();
  if (p.packed()) {
    ck = q.data() + p.part(1);
    cv = q.data() + p.part(2);
  }
  std::vector<float> scratch(cpu::attentionGradScratchSize(p.seqQ, p.seqK));
  const cpu::AttentionDropout *drop = p.dropout ? &cpuDropout : nullptr;
  ref.o.assign(p.oSize(), NAN);
  Status st = cpu::attention(cq, ck, cv, p.batch, p.heads, p.kvHeads, p.seqQ,
                             p.seqK, p.headDim, p.valueDim, p.causal, p.scale(),
                             scratch.data(), ref.o.data(), drop, p.layout);
  ASSERT_TRUE(st) << st.message();
  float *gq, *gk, *gv;
  if (p.packed()) {
    ref.dqkv.assign(kQkvParts * p.qSize(), NAN);
    gq = ref.dqkv.data();
    gk = ref.dqkv.data() + p.part(1);
    gv = ref.dqkv.data() + p.part(2);
  } else {
    ref.dq.assign(p.qSize(), NAN);
    ref.dk.assign(p.kSize(), NAN);
    ref.dv.assign(p.vSize(), NAN);
    gq = ref.dq.data();
    gk = ref.dk.data();
    gv = ref.dv.data();
  }
  st =
      cpu::attentionGrad(dO.data(), cq, ck, cv, p.batch, p.heads, p.kvHeads,
                         p.seqQ, p.seqK, p.headDim, p.valueDim, p.causal,
                         p.scale(), scratch.data(), gq, gk, gv, drop, p.layout);
  ASSERT_TRUE(st) << st.message();
}

/// Expects `got` (the kernels' result, as floats; NaN where unwritten)
/// within `tolerance` of `want` norm-wise, ||got - want|| / ||want||, and
/// every element written. Prints the norm-wise error and the largest |got
/// - want| over the largest |want|.
/// The norm-wise error within `tolerance` and, where given, the largest
/// element's error within `maxTolerance` of the largest magnitude.
inline void expectClose(const char *name, const std::vector<float> &got,
                        const std::vector<float> &want, double tolerance,
                        double maxTolerance = INFINITY) {
  ASSERT_EQ(got.size(), want.size()) << name;
  double diff = 0.0, norm = 0.0, maxDiff = 0.0, maxWant = 0.0;
  int64_t nans = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i])) {
      ++nans;
      continue;
    }
    double d = double(got[i]) - want[i];
    diff += d * d;
    norm += double(want[i]) * want[i];
    maxDiff = std::max(maxDiff, std::abs(d));
    maxWant = std::max(maxWant, std::abs(double(want[i])));
  }
  double normwise = norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  double maxwise = maxWant > 0.0 ? maxDiff / maxWant : maxDiff;
  std::printf("  %-4s normwise %.2e maxwise %.2e\n", name, normwise, maxwise);
  EXPECT_EQ(nans, 0) << name << ": elements not written";
  EXPECT_LE(normwise, tolerance) << name;
  EXPECT_LE(maxwise, maxTolerance) << name << " (max-wise)";
}

} // namespace tpcrt::cuda::attn::test

#endif // TPCRT_TEST_ATTENTIONEMULATION_H
