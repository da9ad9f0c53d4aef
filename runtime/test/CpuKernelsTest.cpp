#include "tpcrt/CpuKernels.h"
#include "../cpu/FastMath.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::cpu;

namespace {

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Naive row-major C = alpha op(A) op(B) + beta C, in double.
void naiveGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb,
               float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) *
               (tb ? b[j * ldb + p] : b[p * ldb + j]);
      double prior = beta == 0.0f ? 0.0 : beta * c[i * ldc + j];
      c[i * ldc + j] = static_cast<float>(alpha * sum + prior);
    }
}

double relError(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (a[i] - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

} // namespace

// The fallback is what a machine without OpenBLAS runs: test it directly,
// against a naive loop and (where built in) cblas, for every transpose, sizes
// that are not multiples of its blocks, padded leading dimensions and beta.
TEST(CpuKernelsTest, FallbackGemmMatchesNaiveAndBlas) {
  struct Dims {
    int64_t m, n, k;
  };
  for (Dims d :
       {Dims{1, 1, 1}, Dims{7, 5, 3}, Dims{33, 130, 257}, Dims{130, 3, 129}}) {
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 0.5f}) {
          int64_t lda = (ta ? d.m : d.k) + 2, ldb = (tb ? d.k : d.n) + 1,
                  ldc = d.n + 3;
          auto a = randomVector((ta ? d.k : d.m) * lda, 1);
          auto b = randomVector((tb ? d.n : d.k) * ldb, 2);
          auto c0 = randomVector(d.m * ldc, 3);
          auto expected = c0, fallback = c0, blas = c0;
          naiveGemm(ta, tb, d.m, d.n, d.k, 0.75f, a.data(), lda, b.data(), ldb,
                    beta, expected.data(), ldc);
          ASSERT_TRUE(gemmFallback(ta, tb, d.m, d.n, d.k, 0.75f, a.data(), lda,
                                   b.data(), ldb, beta, fallback.data(), ldc));
          ASSERT_TRUE(gemm(ta, tb, d.m, d.n, d.k, 0.75f, a.data(), lda,
                           b.data(), ldb, beta, blas.data(), ldc));
          // Sums of k <= 257 float32 products: sqrt(k) u = 9.6e-7 norm-wise
          // (docs/testing/tolerances.md).
          EXPECT_LE(relError(fallback, expected), 1e-6)
              << d.m << "x" << d.n << "x" << d.k << " ta " << ta << " tb " << tb
              << " beta " << beta;
          EXPECT_LE(relError(blas, expected), 1e-6)
              << (hasOpenBlas() ? "cblas " : "fallback ") << d.m << "x" << d.n
              << "x" << d.k;
        }
  }
}

TEST(CpuKernelsTest, GemmBetaZeroOverwritesNaN) {
  std::vector<float> a{1, 2}, b{3, 4}, c{NAN};
  ASSERT_TRUE(gemmFallback(false, false, 1, 1, 2, 1.0f, a.data(), 2, b.data(),
                           1, 0.0f, c.data(), 1));
  EXPECT_EQ(c[0], 11.0f);
  EXPECT_FALSE(gemmFallback(false, false, 2, 2, 2, 1.0f, a.data(), 1, b.data(),
                            2, 0.0f, c.data(), 2));
}

TEST(CpuKernelsTest, SoftmaxRowsSumToOneAndCausalMaskIsZero) {
  const int64_t outer = 3, q = 5, k = 8;
  auto x = randomVector(outer * q * k, 4);
  for (float &v : x)
    v *= 10.0f;
  for (bool causal : {false, true}) {
    std::vector<float> p(x.size());
    ASSERT_TRUE(softmax(x.data(), outer, q, k, causal, p.data()));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < q; ++i) {
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          float v = p[(o * q + i) * k + j];
          sum += v;
          if (causal && j > i + (k - q))
            EXPECT_EQ(v, 0.0f) << "masked (" << i << ", " << j << ")";
          else
            EXPECT_GT(v, 0.0f);
        }
        EXPECT_NEAR(sum, 1.0, 1e-6);
      }
  }
  std::vector<float> p(x.size());
  EXPECT_FALSE(softmax(x.data(), 1, k, q, true, p.data()))
      << "causal with fewer keys than queries";
}

TEST(CpuKernelsTest, CausalAttentionFirstRowReadsOnlyTheFirstKeys) {
  // With s_q == s_k, query 0 sees key 0 only, so its output is v[0].
  const int64_t s = 4, d = 3;
  auto q = randomVector(2 * s * d, 5), k = randomVector(s * d, 6),
       v = randomVector(s * d, 7);
  std::vector<float> out(2 * s * d), scratch(attentionScratchSize(s, s));
  ASSERT_TRUE(attention(q.data(), k.data(), v.data(), 1, 2, 1, s, s, d, d, true,
                        0.5f, scratch.data(), out.data()));
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < d; ++e)
      EXPECT_FLOAT_EQ(out[h * s * d + e], v[e]);
  EXPECT_FALSE(attention(q.data(), k.data(), v.data(), 1, 3, 2, s, s, d, d,
                         true, 0.5f, scratch.data(), out.data()));
}

TEST(CpuKernelsTest, CrossEntropyAllIgnoredGivesCountZero) {
  std::vector<float> logits = randomVector(4 * 6, 8);
  std::vector<int64_t> labels(4, -100);
  float loss = -1.0f;
  int64_t count = -1;
  ASSERT_TRUE(
      crossEntropy(logits.data(), labels.data(), 4, 6, -100, &loss, &count));
  EXPECT_EQ(count, 0);
  EXPECT_EQ(loss, 0.0f);
  labels[2] = 6;
  Status s =
      crossEntropy(logits.data(), labels.data(), 4, 6, -100, &loss, &count);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("label 6"), std::string::npos) << s.message();
}

TEST(CpuKernelsTest, CrossEntropyIsStableForLargeLogits) {
  std::vector<float> logits{1000.0f, 1000.0f};
  std::vector<int64_t> labels{0};
  float loss;
  int64_t count;
  ASSERT_TRUE(
      crossEntropy(logits.data(), labels.data(), 1, 2, -100, &loss, &count));
  EXPECT_EQ(count, 1);
  EXPECT_NEAR(loss, std::log(2.0f), 1e-6);
}

TEST(CpuKernelsTest, EmbeddingRejectsOutOfRangeIds) {
  std::vector<float> table = randomVector(3 * 2, 9), out(4);
  std::vector<int64_t> ids{2, 0};
  ASSERT_TRUE(embedding(table.data(), 3, 2, ids.data(), 2, out.data()));
  EXPECT_EQ(out[0], table[4]);
  EXPECT_EQ(out[3], table[1]);
  for (int64_t bad : {int64_t(3), int64_t(-1)}) {
    ids[1] = bad;
    Status s = embedding(table.data(), 3, 2, ids.data(), 2, out.data());
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("id " + std::to_string(bad)), std::string::npos)
        << s.message();
  }
}

TEST(CpuKernelsTest, EmbeddingGradAccumulateIsThePairsSumOnHitRows) {
  // sum + embedding_grad(dY, ids) (the add the pass folds), against the
  // accumulating scatter: the same bits on the rows an id hits (repeated
  // ids, out of order), the sum's own bits elsewhere, -0 included (the
  // add makes it +0); with a vocabulary block, another block's ids add
  // nothing; an id outside the vocabulary is an error.
  const int64_t rows = 9, hidden = 5;
  std::vector<int64_t> ids{7, 2, 7, 0, 2, 7, 8, 3};
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<float> dY = randomVector(n * hidden, 3);
  std::vector<float> sum = randomVector(rows * hidden, 4);
  sum[1 * hidden + 2] = -0.0f; // row 1: no id hits it
  for (int blocked = 0; blocked < 2; ++blocked) {
    cpu::VocabBlock block{3, rows + 3};
    const cpu::VocabBlock *b = blocked ? &block : nullptr;
    std::vector<int64_t> shifted = ids;
    if (blocked)
      for (int64_t &id : shifted)
        id = id == 0 ? 0 : id + 3; // 0: below the block, another's
    std::vector<float> share(rows * hidden), expected = sum, got = sum;
    ASSERT_TRUE(cpu::embeddingGrad(dY.data(), shifted.data(), n, rows, hidden,
                                   share.data(), b));
    std::vector<int64_t> order(n);
    std::vector<float> row(hidden);
    ASSERT_TRUE(cpu::embeddingGradAccumulate(dY.data(), shifted.data(), n, rows,
                                             hidden, got.data(), b,
                                             order.data(), row.data()));
    for (int64_t r = 0; r < rows; ++r) {
      bool hit = false;
      for (int64_t id : shifted)
        hit |= id - (b ? b->offset : 0) == r;
      for (int64_t c = 0; c < hidden; ++c) {
        int64_t i = r * hidden + c;
        float want = hit ? sum[i] + share[i] : sum[i];
        EXPECT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
            << "blocked " << blocked << " row " << r << " col " << c << ": "
            << got[i] << " vs " << want;
      }
    }
  }
  ids[4] = rows;
  std::vector<int64_t> order(n);
  std::vector<float> row(hidden);
  Status s = cpu::embeddingGradAccumulate(dY.data(), ids.data(), n, rows,
                                          hidden, sum.data(), nullptr,
                                          order.data(), row.data());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("id 9 at position 4"), std::string::npos)
      << s.message();
}

TEST(CpuKernelsTest, ShapeOpsRejectBadArguments) {
  std::vector<float> x(6), out(6);
  int64_t shape[] = {2, 3};
  int64_t notPerm[] = {0, 0};
  EXPECT_FALSE(transpose(x.data(), shape, 2, notPerm, out.data()));
  EXPECT_FALSE(slice(x.data(), shape, 2, 1, 2, 2, out.data()));
  EXPECT_FALSE(slice(x.data(), shape, 2, 2, 0, 1, out.data()));
  EXPECT_FALSE(repeatInterleave(x.data(), shape, 2, 0, 0, out.data()));
  EXPECT_FALSE(add(x.data(), 6, x.data(), 4, out.data()));
  EXPECT_FALSE(rotary(x.data(), 1, 2, 3, 10000.0, 0, out.data()));
}

TEST(RandomTest, SplitMix64ReferenceValues) {
  // The first outputs of the reference SplitMix64 generator seeded with 0
  // (state advanced by the golden gamma before each output).
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64(0x9E3779B97F4A7C15ull), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(dropoutThreshold(0.1), 6554u); // llround(0.1 * 2^16)
  EXPECT_EQ(dropoutThreshold(0.0), 0u);
  EXPECT_EQ(dropoutScale(0.5), 2.0f);
}

TEST(RandomTest, DropoutDrawsFourElementsPerHash) {
  // The contract (executable-format.md), written out: element i's draw is
  // the 16 bits of splitmix64(key + 4 (i / 16) + (i % 8) / 2) at bit
  // 48 - 16 (2 ((i / 8) % 2) + i % 2).
  const uint64_t key = dropoutKey(7, 11, 2);
  auto draw = [&](uint64_t i) {
    uint64_t hash = splitmix64(key + (i / 16) * 4 + (i % 8) / 2);
    uint64_t field = 2 * ((i / 8) % 2) + i % 2;
    return (hash >> (48 - 16 * field)) % (uint64_t(1) << 16);
  };
  for (uint64_t i :
       {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(7), uint64_t(8),
        uint64_t(9), uint64_t(15), uint64_t(16), uint64_t(1000001),
        ~uint64_t(0) - 8, ~uint64_t(0) - 1, ~uint64_t(0)}) {
    // Kept at a threshold equal to the draw, dropped one above it.
    EXPECT_TRUE(dropoutKeep(key, i, draw(i))) << i;
    EXPECT_FALSE(dropoutKeep(key, i, draw(i) + 1)) << i;
    unsigned quad = dropoutKeepQuad(key, dropoutCounter(i), draw(i));
    EXPECT_EQ((quad >> dropoutField(i)) & 1u, 1u) << i;
  }
  // Elements i, i + 1, i + 8 and i + 9 (i even, i % 16 < 8) are one hash's
  // four draws, and each hash draws four elements of its block of 16.
  for (uint64_t block : {uint64_t(0), uint64_t(48), ~uint64_t(15)}) {
    std::vector<int> uses(4 * 4, 0);
    for (uint64_t i = block; i - block < 16; ++i) {
      const uint64_t counter = dropoutCounter(i);
      ASSERT_GE(counter, block / 4) << i;
      ASSERT_LT(counter - block / 4, 4u) << i;
      ++uses[(counter - block / 4) * 4 + dropoutField(i)];
    }
    for (uint64_t i = block; i - block < 8; i += 2)
      for (uint64_t j : {i + 1, i + 8, i + 9})
        EXPECT_EQ(dropoutCounter(i), dropoutCounter(j)) << i << " " << j;
    EXPECT_EQ(uses, std::vector<int>(16, 1));
  }
  // The four draws of a hash are independent bits: at rate 0.5 all four
  // are dropped a sixteenth of the time (half, were they the same bits).
  const uint64_t half = dropoutThreshold(0.5);
  int64_t none = 0, counters = 100000;
  for (int64_t c = 0; c < counters; ++c)
    none += dropoutKeepQuad(key, static_cast<uint64_t>(c), half) == 0;
  // Binomial(1e5, 1/16): the standard deviation of the fraction is 0.00077.
  EXPECT_NEAR(static_cast<double>(none) / counters, 0.0625, 0.005);

  // forEachDropoutKeep visits every element once, in order, as dropoutKeep
  // draws it, wherever in a block of 16 the range starts and ends.
  const uint64_t threshold = dropoutThreshold(0.3);
  for (uint64_t first : {uint64_t(0), uint64_t(1), uint64_t(6), uint64_t(9),
                         uint64_t(16), ~uint64_t(0) - 20}) {
    for (int64_t count : {0, 1, 2, 3, 8, 11, 16, 17, 40}) {
      if (first + static_cast<uint64_t>(count) < first)
        continue; // past the last index
      int64_t next = 0;
      forEachDropoutKeep(
          key, first, count, threshold, [&](int64_t i, bool kept) {
            EXPECT_EQ(i, next++);
            EXPECT_EQ(kept, dropoutKeep(key, first + uint64_t(i), threshold))
                << first << " + " << i;
          });
      EXPECT_EQ(next, count) << first;
    }
  }
}

TEST(CpuKernelsTest, DropoutMaskFractionScaleAndDeterminism) {
  const int64_t n = 200000;
  const double rate = 0.1;
  std::vector<float> x(n, 1.0f), out(n), again(n), other(n);
  uint64_t key = dropoutKey(1234, 3, 0);
  ASSERT_TRUE(dropout(x.data(), n, key, rate, 0, out.data()));
  int64_t dropped = 0;
  for (float v : out) {
    if (v == 0.0f)
      ++dropped;
    else
      ASSERT_EQ(v, static_cast<float>(1.0 / (1.0 - rate)));
  }
  // Binomial(n, 0.1): the standard deviation of the fraction is 0.00067.
  EXPECT_NEAR(static_cast<double>(dropped) / n, rate, 0.004);

  ASSERT_TRUE(dropout(x.data(), n, key, rate, 0, again.data()));
  EXPECT_EQ(out, again);
  // The next step draws another mask.
  ASSERT_TRUE(
      dropout(x.data(), n, dropoutKey(1234, 3, 1), rate, 0, other.data()));
  EXPECT_NE(out, other);

  // A piece of the index range, at its global offset, draws what the whole
  // tensor drew there (in place, too).
  std::vector<float> piece(x.begin() + 1000, x.begin() + 1500);
  ASSERT_TRUE(dropout(piece.data(), 500, key, rate, 1000, piece.data()));
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), out.begin() + 1000));
  // At an odd offset too (the piece starts in the middle of a hash's pair).
  std::vector<float> odd(x.begin() + 1001, x.begin() + 1500);
  ASSERT_TRUE(dropout(odd.data(), 499, key, rate, 1001, odd.data()));
  EXPECT_TRUE(std::equal(odd.begin(), odd.end(), out.begin() + 1001));

  ASSERT_TRUE(dropout(x.data(), n, key, 0.0, 0, again.data()));
  EXPECT_EQ(again, x);
  EXPECT_FALSE(dropout(x.data(), n, key, 1.0, 0, out.data()));
  EXPECT_FALSE(dropout(x.data(), n, key, -0.1, 0, out.data()));
}

TEST(CpuKernelsTest, AttentionDropout) {
  const int64_t b = 1, h = 2, s = 6, d = 4;
  std::vector<float> q = randomVector(b * h * s * d, 1),
                     k = randomVector(b * h * s * d, 2),
                     v = randomVector(b * h * s * d, 3);
  std::vector<float> scratch(attentionScratchSize(s, s)), plain(q.size()),
      none(q.size()), dropped(q.size()), again(q.size());
  ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d, true,
                        0.5f, scratch.data(), plain.data()));
  AttentionDropout zero{dropoutKey(1, 2, 3), 0.0};
  ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d, true,
                        0.5f, scratch.data(), none.data(), &zero));
  EXPECT_EQ(plain, none);
  AttentionDropout half{dropoutKey(1, 2, 3), 0.5};
  ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d, true,
                        0.5f, scratch.data(), dropped.data(), &half));
  ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d, true,
                        0.5f, scratch.data(), again.data(), &half));
  EXPECT_NE(plain, dropped);
  EXPECT_EQ(dropped, again);
  AttentionDropout bad{0, 1.5};
  EXPECT_FALSE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d,
                         true, 0.5f, scratch.data(), again.data(), &bad));
}

TEST(CpuKernelsTest, CastRoundsToNearestEven) {
  // 1 + 2^-8 is halfway between two bf16 values: ties go to the even 1.0;
  // 1 + 3 * 2^-8 goes up to 1 + 2^-6.
  std::vector<float> x{1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 65520.0f, -2.5f};
  std::vector<uint16_t> bf16(4), f16(4);
  ASSERT_TRUE(cast(x.data(), FloatType::F32, 4, FloatType::BF16, bf16.data()));
  EXPECT_EQ(bfloat16ToFloat(bf16[0]), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(bf16[1]), 1.0f + 0x1p-6f);
  EXPECT_EQ(bfloat16ToFloat(bf16[3]), -2.5f);
  ASSERT_TRUE(cast(x.data(), FloatType::F32, 4, FloatType::F16, f16.data()));
  EXPECT_TRUE(std::isinf(halfToFloat(f16[2])));
  EXPECT_EQ(halfToFloat(f16[3]), -2.5f);
  // Widening is exact, and the same type copies.
  std::vector<float> back(4);
  ASSERT_TRUE(
      cast(bf16.data(), FloatType::BF16, 4, FloatType::F32, back.data()));
  EXPECT_EQ(back[1], 1.0f + 0x1p-6f);
  ASSERT_TRUE(cast(x.data(), FloatType::F32, 4, FloatType::F32, back.data()));
  EXPECT_EQ(back, x);
  EXPECT_FALSE(cast(x.data(), FloatType::F32, -1, FloatType::F16, f16.data()));
}

TEST(CpuKernelsTest, LossMeanAndCopy) {
  float sum = 6.0f, out = -1.0f;
  int64_t count = 4;
  ASSERT_TRUE(lossMean(&sum, &count, &out));
  EXPECT_EQ(out, 1.5f);
  count = 0;
  ASSERT_TRUE(lossMean(&sum, &count, &out));
  EXPECT_EQ(out, 0.0f);
  count = -2;
  EXPECT_FALSE(lossMean(&sum, &count, &out));

  // Overlapping copies move the bytes as memmove does.
  std::vector<int32_t> v{1, 2, 3, 4, 5};
  ASSERT_TRUE(copy(v.data(), 3 * 4, v.data() + 2));
  EXPECT_EQ(v, (std::vector<int32_t>{1, 2, 1, 2, 3}));
  EXPECT_FALSE(copy(v.data(), -4, v.data()));
}

TEST(CpuKernelsTest, FastMathAccuracy) {
  // The vectorizable exp and erf behind softmax, attention, cross-entropy,
  // gelu and silu, against double-precision libm over the range they see.
  double expError = 0.0, erfError = 0.0;
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    double expected = std::exp(static_cast<double>(x));
    expError =
        std::max(expError, std::fabs(fastmath::exp(x) - expected) / expected);
  }
  for (float x = -6.0f; x < 6.0f; x += 0.0001f)
    erfError = std::max(erfError, std::fabs(fastmath::erf(x) -
                                            std::erf(static_cast<double>(x))));
  EXPECT_LT(expError, 2e-7);
  EXPECT_LT(erfError, 1e-6);
  EXPECT_EQ(fastmath::exp(-100.0f), 0.0f);
  EXPECT_EQ(fastmath::exp(0.0f), 1.0f);
  EXPECT_TRUE(std::isfinite(fastmath::exp(1000.0f)));
  EXPECT_EQ(fastmath::tanh(50.0f), 1.0f);
  EXPECT_EQ(fastmath::tanh(-50.0f), -1.0f);
}

TEST(CpuKernelsTest, TrainingKernelErrors) {
  std::vector<float> dy(4, 1.0f), table(6);
  std::vector<int64_t> ids = {0, 3};
  EXPECT_FALSE(embeddingGrad(dy.data(), ids.data(), 2, 3, 2, table.data()))
      << "id 3 outside a vocabulary of 3";
  std::vector<int64_t> labels = {1, 9};
  std::vector<float> logits(2 * 4), dLogits(2 * 4);
  EXPECT_FALSE(crossEntropyGrad(logits.data(), labels.data(), 2, 4, -100, 1.0f,
                                dLogits.data()));
  labels = {-100, -100};
  ASSERT_TRUE(crossEntropyGrad(logits.data(), labels.data(), 2, 4, -100, 1.0f,
                               dLogits.data()));
  EXPECT_EQ(dLogits, std::vector<float>(8, 0.0f)) << "ignored rows are zero";
  int64_t count = 0;
  float inverse = -1.0f;
  ASSERT_TRUE(countTargets(labels.data(), 2, -100, &count));
  EXPECT_EQ(count, 0);
  ASSERT_TRUE(inverseCount(&count, &inverse));
  EXPECT_EQ(inverse, 0.0f) << "every target ignored";
  count = -1;
  EXPECT_FALSE(inverseCount(&count, &inverse));

  float lr = 0.0f;
  LrScheduleOptions cosine{LrScheduleKind::Cosine, 1.0, 0.1, 2, 6};
  EXPECT_FALSE(lrSchedule(0, cosine, &lr)) << "steps are 1-based";
  ASSERT_TRUE(lrSchedule(1, cosine, &lr));
  EXPECT_FLOAT_EQ(lr, 0.5f);
  ASSERT_TRUE(lrSchedule(2, cosine, &lr));
  EXPECT_FLOAT_EQ(lr, 1.0f);
  ASSERT_TRUE(lrSchedule(4, cosine, &lr));
  EXPECT_FLOAT_EQ(lr, 0.55f) << "half way down the cosine";
  ASSERT_TRUE(lrSchedule(100, cosine, &lr));
  EXPECT_FLOAT_EQ(lr, 0.1f);
  cosine.decaySteps = 2;
  EXPECT_FALSE(lrSchedule(3, cosine, &lr)) << "no room for the decay";

  float norm, coefficient;
  ASSERT_TRUE(clipCoefficient(16.0f, 0.0, &norm, &coefficient));
  EXPECT_EQ(norm, 4.0f);
  EXPECT_EQ(coefficient, 1.0f);
  ASSERT_TRUE(clipCoefficient(16.0f, 2.0, &norm, &coefficient));
  EXPECT_NEAR(coefficient, 0.5f, 1e-6f);
  EXPECT_FALSE(clipCoefficient(-1.0f, 2.0, &norm, &coefficient));

  std::vector<float> param(3, 1.0f), grad(3, 1.0f), m(3), v(3);
  EXPECT_FALSE(adamwUpdate(param.data(), grad.data(), m.data(), v.data(), 3,
                           0.1f, 0, AdamWOptions(), 1.0f))
      << "step 0";
  std::vector<int64_t> shape = {5, 2};
  std::vector<float> x(10), out(12);
  EXPECT_FALSE(pad(x.data(), shape.data(), 2, 0, 2, 6, out.data()))
      << "5 rows at offset 2 do not fit 6";
  EXPECT_FALSE(sumGroups(x.data(), shape.data(), 2, 0, 2, out.data()))
      << "5 is not a multiple of 2";
}

TEST(CpuKernelsTest, AttentionDropoutOfAPieceAtItsFirstIndex) {
  // A microbatch (batch 1 of 2) with its first index draws the mask the whole
  // batch draws there, forward and backward.
  const int64_t b = 2, h = 2, s = 5, d = 4;
  int64_t per = h * s * d;
  auto q = randomVector(b * per, 1), k = randomVector(b * per, 2),
       v = randomVector(b * per, 3), dO = randomVector(b * per, 4);
  std::vector<float> scratch(attentionGradScratchSize(s, s));
  AttentionDropout whole{dropoutKey(1, 2, 3), 0.3};
  AttentionDropout piece = whole;
  piece.firstIndex = static_cast<uint64_t>(h * s * s);
  std::vector<float> out(b * per), pieceOut(per);
  ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d, true,
                        0.5f, scratch.data(), out.data(), &whole));
  ASSERT_TRUE(attention(q.data() + per, k.data() + per, v.data() + per, 1, h, h,
                        s, s, d, d, true, 0.5f, scratch.data(), pieceOut.data(),
                        &piece));
  EXPECT_EQ(pieceOut, std::vector<float>(out.begin() + per, out.end()));
  std::vector<float> dq(b * per), dk(b * per), dv(b * per), pdq(per), pdk(per),
      pdv(per);
  ASSERT_TRUE(attentionGrad(dO.data(), q.data(), k.data(), v.data(), b, h, h, s,
                            s, d, d, true, 0.5f, scratch.data(), dq.data(),
                            dk.data(), dv.data(), &whole));
  ASSERT_TRUE(attentionGrad(dO.data() + per, q.data() + per, k.data() + per,
                            v.data() + per, 1, h, h, s, s, d, d, true, 0.5f,
                            scratch.data(), pdq.data(), pdk.data(), pdv.data(),
                            &piece));
  EXPECT_EQ(pdq, std::vector<float>(dq.begin() + per, dq.end()));
  EXPECT_EQ(pdv, std::vector<float>(dv.begin() + per, dv.end()));
}

namespace {

/// [b, x, y, d] -> [b, y, x, d].
std::vector<float> swapMiddle(const std::vector<float> &t, int64_t b,
                              int64_t x, int64_t y, int64_t d) {
  std::vector<float> out(t.size());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < x; ++j)
      for (int64_t l = 0; l < y; ++l)
        for (int64_t c = 0; c < d; ++c)
          out[((i * y + l) * x + j) * d + c] = t[((i * x + j) * y + l) * d + c];
  return out;
}

} // namespace

// The sequence-major layout is the head-major one with every tensor's middle
// dimensions swapped: the same values bit for bit (the same products in the
// same order, only strided), forward and backward, with grouped kv heads,
// causal, dropout, and no two sizes alike.
TEST(CpuKernelsTest, SeqMajorAttentionIsTheTransposedHeadMajor) {
  const int64_t b = 2, h = 6, kv = 2, sq = 7, sk = 9, d = 4, dv = 3;
  auto q = randomVector(b * h * sq * d, 1), k = randomVector(b * kv * sk * d, 2),
       v = randomVector(b * kv * sk * dv, 3),
       dO = randomVector(b * h * sq * dv, 4);
  auto qS = swapMiddle(q, b, h, sq, d), kS = swapMiddle(k, b, kv, sk, d),
       vS = swapMiddle(v, b, kv, sk, dv), dOS = swapMiddle(dO, b, h, sq, dv);
  std::vector<float> scratch(attentionGradScratchSize(sq, sk));
  AttentionDropout dropout{dropoutKey(4, 5, 6), 0.25};
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    std::vector<float> out(b * h * sq * dv), outS(out.size());
    ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, kv, sq, sk, d, dv,
                          causal, 0.4f, scratch.data(), out.data(), &dropout));
    ASSERT_TRUE(attention(qS.data(), kS.data(), vS.data(), b, h, kv, sq, sk, d,
                          dv, causal, 0.4f, scratch.data(), outS.data(),
                          &dropout, AttentionLayout::SeqMajor));
    EXPECT_EQ(outS, swapMiddle(out, b, h, sq, dv));
    std::vector<float> dq(q.size()), dk(k.size()), dvv(v.size()),
        dqS(q.size()), dkS(k.size()), dvS(v.size());
    ASSERT_TRUE(attentionGrad(dO.data(), q.data(), k.data(), v.data(), b, h,
                              kv, sq, sk, d, dv, causal, 0.4f, scratch.data(),
                              dq.data(), dk.data(), dvv.data(), &dropout));
    ASSERT_TRUE(attentionGrad(dOS.data(), qS.data(), kS.data(), vS.data(), b,
                              h, kv, sq, sk, d, dv, causal, 0.4f,
                              scratch.data(), dqS.data(), dkS.data(),
                              dvS.data(), &dropout,
                              AttentionLayout::SeqMajor));
    EXPECT_EQ(dqS, swapMiddle(dq, b, h, sq, d));
    EXPECT_EQ(dkS, swapMiddle(dk, b, kv, sk, d));
    EXPECT_EQ(dvS, swapMiddle(dvv, b, kv, sk, dv));
  }
}

// attention_qkv's layout: q, k and v the parts of one [b, s, 3, heads, d]
// tensor, their gradients written into the parts of another (poisoned
// first: every element is written), bit for bit the sequence-major kernels
// on the parts copied out.
TEST(CpuKernelsTest, PackedQkvAttentionIsTheSeqMajorOfItsParts) {
  const int64_t b = 2, h = 3, s = 7, d = 5, row = 3 * h * d;
  auto x = randomVector(b * s * row, 8), dO = randomVector(b * s * h * d, 9);
  // Part p of x as a [b, s, h, d] tensor.
  auto partOf = [&](const std::vector<float> &t, int64_t p) {
    std::vector<float> out;
    for (int64_t r = 0; r < b * s; ++r)
      out.insert(out.end(), t.begin() + r * row + p * h * d,
                 t.begin() + r * row + (p + 1) * h * d);
    return out;
  };
  auto q = partOf(x, 0), k = partOf(x, 1), v = partOf(x, 2);
  std::vector<float> scratch(attentionGradScratchSize(s, s));
  AttentionDropout dropout{dropoutKey(4, 5, 6), 0.25};
  const float *X = x.data();
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    std::vector<float> out(b * s * h * d), outP(out.size(), NAN);
    ASSERT_TRUE(attention(q.data(), k.data(), v.data(), b, h, h, s, s, d, d,
                          causal, 0.4f, scratch.data(), out.data(), &dropout,
                          AttentionLayout::SeqMajor));
    ASSERT_TRUE(attention(X, X + qkvPartOffset(1, h, d),
                          X + qkvPartOffset(2, h, d), b, h, h, s, s, d, d,
                          causal, 0.4f, scratch.data(), outP.data(), &dropout,
                          AttentionLayout::PackedQkv));
    EXPECT_EQ(outP, out);
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()),
        dx(x.size(), NAN);
    ASSERT_TRUE(attentionGrad(dO.data(), q.data(), k.data(), v.data(), b, h,
                              h, s, s, d, d, causal, 0.4f, scratch.data(),
                              dq.data(), dk.data(), dv.data(), &dropout,
                              AttentionLayout::SeqMajor));
    float *dX = dx.data();
    ASSERT_TRUE(attentionGrad(dO.data(), X, X + qkvPartOffset(1, h, d),
                              X + qkvPartOffset(2, h, d), b, h, h, s, s, d, d,
                              causal, 0.4f, scratch.data(), dX,
                              dX + qkvPartOffset(1, h, d),
                              dX + qkvPartOffset(2, h, d), &dropout,
                              AttentionLayout::PackedQkv));
    EXPECT_EQ(partOf(dx, 0), dq);
    EXPECT_EQ(partOf(dx, 1), dk);
    EXPECT_EQ(partOf(dx, 2), dv);
  }
  // Parts of one tensor have one shape.
  std::vector<float> out(b * s * h * d);
  Status refused = attention(X, X, X, b, h, 1, s, s, d, d, true, 0.4f,
                             scratch.data(), out.data(), nullptr,
                             AttentionLayout::PackedQkv);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find("packed q, k and v"), std::string::npos)
      << refused.message();
}

// Sequence-major rotary (positions along dim 1 of [b, s, heads, d]) is the
// head-major one on the transposed tensor, bit for bit, scaled or not.
TEST(CpuKernelsTest, SeqMajorRotaryIsTheTransposedHeadMajor) {
  const int64_t b = 2, h = 3, s = 5, d = 6;
  auto x = randomVector(b * h * s * d, 7);
  auto xS = swapMiddle(x, b, h, s, d);
  RopeScaling llama3{8.0, 1.0, 4.0, 8192.0};
  for (const RopeScaling *scaling : {(const RopeScaling *)nullptr,
                                     (const RopeScaling *)&llama3})
    for (bool inverse : {false, true}) {
      std::vector<float> out(x.size()), outS(x.size());
      ASSERT_TRUE(rotary(x.data(), b * h, s, d, 10000.0, 11, out.data(),
                         inverse, scaling));
      ASSERT_TRUE(rotary(xS.data(), b, s, d, 10000.0, 11, outS.data(), inverse,
                         scaling, h));
      EXPECT_EQ(outS, swapMiddle(out, b, h, s, d));
      EXPECT_NE(out, x);
    }
}
