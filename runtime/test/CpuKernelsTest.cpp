#include "tpcrt/CpuKernels.h"

#include "gtest/gtest.h"

#include <cmath>
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
  std::vector<float> out(2 * s * d), scratch(attentionScratchSize(s));
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
