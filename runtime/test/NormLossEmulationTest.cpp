//===- NormLossEmulationTest.cpp - norms and cross-entropy, emulated ------===//
//
// cuda/NormLossKernels.cuh's kernels, the real header compiled for the host
// with TPCRT_CUDA_EMULATION (CudaEmulation.h: CUDA's threads, barriers,
// shuffles and __shared__ arrays, emulated), run as ReductionKernels.cu
// launches them (rowGrid and kRowThreads per row, kTotalThreads for the
// loss total, paramGradChunks' grid and scratch for the parameter
// gradients, gridFor for their sum) and compared with the CPU device's
// layerNorm, rmsNorm, their input and parameter gradients, crossEntropy and
// crossEntropyGrad on the same inputs. An emulation, not a GPU run: it
// tests the kernels' indexing, block reductions, chunking and ignored
// labels, not the hardware. f32 and bf16 storage, rows and columns that are
// not multiples of the block sizes. Every result and every scratch value
// starts as NaN, so an element no kernel writes fails; a guard after each
// result catches stores past its end.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"

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
#include "NormLossKernels.cuh"

using namespace tpcrt;
using namespace tpcrt::cuda;
using namespace tpcrt::cuda::normloss;

namespace {

/// Norm-wise relative errors ||kernel - cpu|| / ||cpu|| allowed, as
/// DeviceCheck.cpp's. The kernels compute as the CPU does (statistics and
/// gradient sums in double, float products rounded once), so f32 differs
/// only by the order of the double sums and expf's last bits; bf16 by the
/// results' rounding to bf16 on store (at most 2^-8 relative).
constexpr double kF32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 1e-2;
/// Elements after each result that no kernel may write.
constexpr int64_t kGuard = 64;
constexpr float kGuardValue = 1024.0f;
constexpr int64_t kIgnore = -100;
constexpr float kEpsilon = 1e-5f;

double tolerance(Storage s) {
  return s == Storage::BF16 ? kBf16Tolerance : kF32Tolerance;
}
const char *storageName(Storage s) {
  return s == Storage::BF16 ? "bf16" : "f32";
}

/// A tensor of f32 or bf16 elements, and a guard after it.
struct Buffer {
  Storage storage = Storage::F32;
  int64_t n = 0;
  std::vector<unsigned char> bytes;

  Buffer(Storage storage, int64_t n, float fill)
      : storage(storage), n(n), bytes((n + kGuard) * elementBytes()) {
    for (int64_t i = 0; i < n; ++i)
      set(i, fill);
    for (int64_t i = n; i < n + kGuard; ++i)
      set(i, kGuardValue);
  }
  size_t elementBytes() const { return storage == Storage::BF16 ? 2 : 4; }
  void set(int64_t i, float value) {
    storeFloat(bytes.data(), storage, i, value);
  }
  float get(int64_t i) const { return loadFloat(bytes.data(), storage, i); }
  std::vector<float> toFloat() const {
    std::vector<float> f(n);
    for (int64_t i = 0; i < n; ++i)
      f[i] = get(i);
    return f;
  }
  bool guardIntact() const {
    for (int64_t i = n; i < n + kGuard; ++i)
      if (get(i) != kGuardValue)
        return false;
    return true;
  }
  In in() const { return {bytes.data(), storage}; }
  Out out() { return {bytes.data(), storage}; }
};

Buffer random(Storage storage, int64_t n, float mean, float sd,
              std::mt19937 &rng) {
  std::normal_distribution<float> normal(mean, sd);
  Buffer b(storage, n, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    b.set(i, normal(rng));
  return b;
}

/// ||x - ref|| / ||ref|| (||x - ref|| when ref is 0; NaN when x holds a
/// NaN).
double normwise(const std::vector<float> &x, const std::vector<float> &ref) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]))
      return NAN;
    double d = double(x[i]) - ref[i];
    diff += d * d;
    norm += double(ref[i]) * ref[i];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

/// Checks a result against the CPU's (and its guard), and prints the error.
void expectClose(const char *what, const Buffer &got,
                 const std::vector<float> &ref, const std::string &tag) {
  double e = normwise(got.toFloat(), ref);
  std::printf("  %-28s %s: normwise error %.3g\n", what, tag.c_str(), e);
  EXPECT_LE(e, tolerance(got.storage)) << what << " " << tag;
  EXPECT_TRUE(got.guardIntact()) << what << " " << tag << ": a store past it";
}

void expectLaunched(const std::string &error, const char *what) {
  EXPECT_TRUE(error.empty()) << what << ": " << error;
}

/// The CPU device's parameter gradients of layer_norm (weight and bias) or
/// rms_norm (weight).
Status cpuParamGrads(bool layer, const std::vector<float> &dY,
                     const std::vector<float> &x, int64_t rows, int64_t cols,
                     std::vector<float> &dW, std::vector<float> &dB) {
  std::vector<double> scratch(2 * cols);
  return layer ? cpu::layerNormParamGrad(dY.data(), x.data(), rows, cols,
                                         kEpsilon, scratch.data(), dW.data(),
                                         dB.data())
               : cpu::rmsNormParamGrad(dY.data(), x.data(), rows, cols,
                                       kEpsilon, scratch.data(), dW.data());
}

/// The input gradient as runNorm launches it.
void launchInputGrad(const Buffer &dY, const Buffer &x, const Buffer &weight,
                     bool layer, int64_t rows, int64_t cols, Buffer &dX) {
  expectLaunched(emu::launch(dim3(rowGrid(rows)), dim3(kRowThreads), 0,
                             [&] {
                               normInputGradKernel(dY.in(), x.in(), weight.in(),
                                                   layer, rows, cols, kEpsilon,
                                                   dX.out());
                             }),
                 "input grad");
}

/// The parameter gradients as runNormParamGrad launches them: statistics,
/// chunk partials, their sum; the scratch laid out as its (partialB after
/// the weight's partials). dB is left alone for rms_norm.
void launchParamGrads(const Buffer &dY, const Buffer &x, bool layer,
                      int64_t rows, int64_t cols, Buffer &dW, Buffer &dB) {
  const int64_t perRow = layer ? 2 : 1;
  RowChunks chunks = paramGradChunks(rows);
  std::vector<double> stats(perRow * rows, NAN);
  std::vector<double> partials(perRow * chunks.chunks * cols, NAN);
  double *partialW = partials.data();
  double *partialB = partialW + chunks.chunks * cols;
  expectLaunched(emu::launch(dim3(rowGrid(rows)), dim3(kRowThreads), 0,
                             [&] {
                               normStatsKernel(x.in(), rows, cols, kEpsilon,
                                               layer, stats.data());
                             }),
                 "stats");
  dim3 partialGrid(
      static_cast<unsigned>((cols + kRowThreads - 1) / kRowThreads),
      static_cast<unsigned>(chunks.chunks));
  expectLaunched(emu::launch(partialGrid, dim3(kRowThreads), 0,
                             [&] {
                               normParamPartialsKernel(
                                   dY.in(), x.in(), rows, cols,
                                   chunks.rowsPerChunk, stats.data(), layer,
                                   partialW, partialB);
                             }),
                 "partials");
  Out noOut{nullptr, Storage::F32};
  expectLaunched(emu::launch(dim3(gridFor(cols)), dim3(256), 0,
                             [&] {
                               normParamSumKernel(partialW, partialB,
                                                  chunks.chunks, cols, dW.out(),
                                                  layer ? dB.out() : noOut);
                             }),
                 "param sum");
}

bool sameBytes(const Buffer &a, const Buffer &b) { return a.bytes == b.bytes; }

/// layer_norm (layer) or rms_norm: the forward, the input gradient and the
/// parameter gradients, as runNorm and runNormParamGrad launch them.
void runNormCase(Storage storage, int64_t rows, int64_t cols, bool layer) {
  std::string tag = std::string(layer ? "layer" : "rms") + " " +
                    storageName(storage) + " " + std::to_string(rows) + "x" +
                    std::to_string(cols);
  std::mt19937 rng(static_cast<unsigned>(rows * 7919 + cols * 31 + layer));
  Buffer x = random(storage, rows * cols, 0.5f, 1.5f, rng);
  Buffer dY = random(storage, rows * cols, 0.0f, 1.0f, rng);
  Buffer weight = random(storage, cols, 1.0f, 0.5f, rng);
  Buffer bias = random(storage, cols, 0.0f, 0.5f, rng);
  std::vector<float> cx = x.toFloat(), cdY = dY.toFloat(),
                     cw = weight.toFloat(), cb = bias.toFloat();
  In none{nullptr, Storage::F32};
  const unsigned grid = rowGrid(rows);

  // Forward.
  Buffer y(storage, rows * cols, NAN);
  expectLaunched(emu::launch(dim3(grid), dim3(kRowThreads), 0,
                             [&] {
                               normKernel(x.in(), weight.in(),
                                          layer ? bias.in() : none, rows, cols,
                                          kEpsilon, y.out());
                             }),
                 "norm");
  std::vector<float> ref(rows * cols);
  Status st = layer ? cpu::layerNorm(cx.data(), cw.data(), cb.data(), rows,
                                     cols, kEpsilon, ref.data())
                    : cpu::rmsNorm(cx.data(), cw.data(), rows, cols, kEpsilon,
                                   ref.data());
  ASSERT_TRUE(st) << st.message();
  expectClose("y", y, ref, tag);

  // Input gradient.
  Buffer dX(storage, rows * cols, NAN);
  launchInputGrad(dY, x, weight, layer, rows, cols, dX);
  st = layer ? cpu::layerNormInputGrad(cdY.data(), cx.data(), cw.data(), rows,
                                       cols, kEpsilon, ref.data())
             : cpu::rmsNormInputGrad(cdY.data(), cx.data(), cw.data(), rows,
                                     cols, kEpsilon, ref.data());
  ASSERT_TRUE(st) << st.message();
  expectClose("dX", dX, ref, tag);

  // Parameter gradients.
  Buffer dW(storage, cols, NAN), dB(storage, cols, NAN);
  launchParamGrads(dY, x, layer, rows, cols, dW, dB);
  std::vector<float> refW(cols), refB(cols);
  st = cpuParamGrads(layer, cdY, cx, rows, cols, refW, refB);
  ASSERT_TRUE(st) << st.message();
  expectClose("dWeight", dW, refW, tag);
  if (layer)
    expectClose("dBias", dB, refB, tag);
  else
    EXPECT_TRUE(std::isnan(dB.get(0))) << "rms_norm wrote a bias gradient";
}

/// The fused norm backward (normBackwardKernel, then normParamSumKernel over
/// its chunks) as runNormGroup launches it, against the CPU's input and
/// parameter gradients and, bit for bit, the unfused kernels'; with `residual`,
/// the add of the input gradient to a residual r too (z against r + dX, dX
/// rounded to its storage first), and dX's buffer never written.
void runNormBackwardCase(Storage storage, int64_t rows, int64_t cols,
                         bool layer, bool residual, bool paramGrad = true) {
  std::string tag = std::string(layer ? "layer" : "rms") + " " +
                    storageName(storage) + " " + std::to_string(rows) + "x" +
                    std::to_string(cols) + (residual ? " + add" : "") +
                    (paramGrad ? "" : " without the parameter gradient");
  std::mt19937 rng(static_cast<unsigned>(rows * 131 + cols * 17 + layer));
  Buffer x = random(storage, rows * cols, 0.5f, 1.5f, rng);
  Buffer dY = random(storage, rows * cols, 0.0f, 1.0f, rng);
  Buffer weight = random(storage, cols, 1.0f, 0.5f, rng);
  Buffer r = random(storage, rows * cols, 0.0f, 1.0f, rng);
  std::vector<float> cx = x.toFloat(), cdY = dY.toFloat(),
                     cw = weight.toFloat();

  // Without the parameter gradient any chunking gives the same values:
  // runNormGroup's own (4096 chunks at most), here 5 rows a chunk.
  RowChunks chunks = paramGradChunks(rows);
  if (!paramGrad) {
    chunks.rowsPerChunk = 5;
    chunks.chunks = (rows + 4) / 5;
  }
  const int64_t perRow = layer ? 2 : 1;
  std::vector<double> partials(perRow * chunks.chunks * cols, NAN);
  Buffer dX(storage, rows * cols, NAN), z(storage, rows * cols, NAN);
  NormBackward p;
  p.dY = dY.in();
  p.x = x.in();
  p.weight = weight.in();
  p.layer = layer;
  p.rows = rows;
  p.cols = cols;
  p.rowsPerChunk = chunks.rowsPerChunk;
  p.epsilon = kEpsilon;
  p.dX = dX.out();
  p.dXType = storage;
  if (residual) {
    p.residual = r.in();
    p.sum = z.out();
    p.dXLhs = rows % 2 == 0;
  }
  p.partialW = paramGrad ? partials.data() : nullptr;
  p.partialB = paramGrad ? p.partialW + chunks.chunks * cols : nullptr;
  expectLaunched(
      emu::launch(dim3(static_cast<unsigned>(chunks.chunks)), dim3(kRowThreads),
                  paramGrad ? normBackwardSharedBytes(cols, layer) : 0,
                  [&] { normBackwardKernel(p); }),
      "norm backward");
  Buffer dW(storage, cols, NAN), dB(storage, cols, NAN);
  Out noOut{nullptr, Storage::F32};
  if (paramGrad)
    expectLaunched(emu::launch(dim3(gridFor(cols)), dim3(256), 0,
                               [&] {
                                 normParamSumKernel(
                                     p.partialW, p.partialB, chunks.chunks,
                                     cols, dW.out(), layer ? dB.out() : noOut);
                               }),
                   "param sum");

  std::vector<float> refX(rows * cols), refW(cols), refB(cols);
  Status st = layer ? cpu::layerNormInputGrad(cdY.data(), cx.data(), cw.data(),
                                              rows, cols, kEpsilon, refX.data())
                    : cpu::rmsNormInputGrad(cdY.data(), cx.data(), cw.data(),
                                            rows, cols, kEpsilon, refX.data());
  ASSERT_TRUE(st) << st.message();
  st = cpuParamGrads(layer, cdY, cx, rows, cols, refW, refB);
  ASSERT_TRUE(st) << st.message();
  // The unfused kernels' results, which the fused ones equal bit for bit
  // (the same row function, chunks and sums; the add of the stored dX).
  Buffer unfusedX(storage, rows * cols, NAN),
      unfusedZ(storage, rows * cols, NAN);
  Buffer unfusedW(storage, cols, NAN), unfusedB(storage, cols, NAN);
  launchInputGrad(dY, x, weight, layer, rows, cols, unfusedX);
  launchParamGrads(dY, x, layer, rows, cols, unfusedW, unfusedB);
  for (int64_t i = 0; i < rows * cols; ++i)
    unfusedZ.set(i, unfusedX.get(i) + r.get(i));
  if (residual) {
    std::vector<float> refZ(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i)
      refZ[i] = unfusedX.get(i) + r.get(i);
    expectClose("z = r + dX", z, refZ, tag);
    EXPECT_TRUE(sameBytes(z, unfusedZ)) << tag << ": z differs from unfused";
    for (int64_t i = 0; i < rows * cols; ++i)
      ASSERT_TRUE(std::isnan(dX.get(i))) << tag << ": dX written at " << i;
  } else {
    expectClose("dX", dX, refX, tag);
    EXPECT_TRUE(sameBytes(dX, unfusedX)) << tag << ": dX differs from unfused";
    EXPECT_TRUE(std::isnan(z.get(0))) << tag;
  }
  if (!paramGrad) {
    for (double partial : partials)
      ASSERT_TRUE(std::isnan(partial)) << tag << ": a parameter sum written";
    return;
  }
  expectClose("dWeight", dW, refW, tag);
  EXPECT_TRUE(sameBytes(dW, unfusedW)) << tag << ": dW differs from unfused";
  if (layer) {
    expectClose("dBias", dB, refB, tag);
    EXPECT_TRUE(sameBytes(dB, unfusedB)) << tag << ": dB differs from unfused";
  } else {
    EXPECT_TRUE(std::isnan(dB.get(0))) << "rms_norm wrote a bias gradient";
  }
}

/// cross_entropy (rows kernel, total kernel) and cross_entropy_grad as
/// runCrossEntropy launches them; every `ignoreEvery`-th label (0: none) is
/// the ignore index, the others random classes. With `classes` < cols the
/// vocabulary is padded (one device's [ignore, vocab]): the reference is
/// the CPU's kernels on the rows' first `classes` columns, and the padding
/// columns' gradient must be 0, whatever their logits (large ones here).
void runCrossEntropyCase(Storage storage, int64_t rows, int64_t cols,
                         int64_t ignoreEvery, int64_t classes = 0) {
  if (classes == 0)
    classes = cols;
  std::string tag = std::string(storageName(storage)) + " " +
                    std::to_string(rows) + "x" + std::to_string(cols) +
                    (classes < cols ? " of " + std::to_string(classes) : "");
  std::mt19937 rng(static_cast<unsigned>(rows * 104729 + cols + classes));
  Buffer logits = random(storage, rows * cols, 0.0f, 3.0f, rng);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = classes; c < cols; ++c)
      logits.set(r * cols + c, 50.0f);
  std::vector<int64_t> labels(rows);
  std::uniform_int_distribution<int64_t> cls(0, classes - 1);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = ignoreEvery > 0 && r % ignoreEvery == 0 ? kIgnore : cls(rng);
  std::vector<float> all = logits.toFloat(), cl;
  for (int64_t r = 0; r < rows; ++r)
    cl.insert(cl.end(), all.begin() + r * cols,
              all.begin() + r * cols + classes);

  std::vector<double> rowLoss(rows, NAN);
  expectLaunched(emu::launch(dim3(rowGrid(rows)), dim3(kRowThreads), 0,
                             [&] {
                               crossEntropyRowsKernel(
                                   logits.in(), labels.data(), rows, cols,
                                   classes, kIgnore, rowLoss.data());
                             }),
                 "rows");
  float lossSum = NAN;
  int64_t count = -1;
  expectLaunched(emu::launch(dim3(1), dim3(kTotalThreads), 0,
                             [&] {
                               crossEntropyTotalKernel(
                                   rowLoss.data(), labels.data(), rows,
                                   classes, kIgnore, &lossSum, &count);
                             }),
                 "total");
  float refLoss = NAN;
  int64_t refCount = -1;
  Status st = cpu::crossEntropy(cl.data(), labels.data(), rows, classes,
                                kIgnore, &refLoss, &refCount);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(count, refCount) << tag;
  double lossError = normwise({lossSum}, {refLoss});
  std::printf("  %-28s %s: error %.3g (%g, count %lld)\n", "loss sum",
              tag.c_str(), lossError, double(lossSum),
              static_cast<long long>(count));
  EXPECT_LE(lossError, kF32Tolerance) << tag; // a float result either way

  const float scale = refCount > 0 ? 1.0f / static_cast<float>(refCount) : 1.0f;
  Buffer dLogits(storage, rows * cols, NAN);
  expectLaunched(emu::launch(dim3(rowGrid(rows)), dim3(kRowThreads), 0,
                             [&] {
                               crossEntropyGradKernel(
                                   logits.in(), labels.data(), rows, cols,
                                   classes, kIgnore, &scale, dLogits.out(),
                                   nullptr);
                             }),
                 "grad");
  std::vector<float> real(rows * classes), ref(rows * cols, 0.0f);
  st = cpu::crossEntropyGrad(cl.data(), labels.data(), rows, classes, kIgnore,
                             scale, real.data());
  ASSERT_TRUE(st) << st.message();
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(real.begin() + r * classes, classes, ref.begin() + r * cols);
  expectClose("dLogits", dLogits, ref, tag);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (labels[r] == kIgnore || c >= classes) {
        ASSERT_EQ(dLogits.get(r * cols + c), 0.0f)
            << tag << " row " << r << " column " << c;
      }
    }
  }

  // cross_entropy and its gradient fused (the gradient kernel given the
  // rows' losses): the unfused kernels' values bit for bit.
  std::vector<double> fusedLoss(rows, NAN);
  Buffer fusedGrad(storage, rows * cols, NAN);
  expectLaunched(emu::launch(dim3(rowGrid(rows)), dim3(kRowThreads), 0,
                             [&] {
                               crossEntropyGradKernel(
                                   logits.in(), labels.data(), rows, cols,
                                   classes, kIgnore, &scale, fusedGrad.out(),
                                   fusedLoss.data());
                             }),
                 "loss + grad");
  EXPECT_EQ(
      std::memcmp(fusedLoss.data(), rowLoss.data(), rows * sizeof(double)), 0)
      << tag << ": the fused rows' losses differ";
  EXPECT_EQ(std::memcmp(fusedGrad.bytes.data(), dLogits.bytes.data(),
                        dLogits.bytes.size()),
            0)
      << tag << ": the fused gradient differs";
}

struct NormShape {
  int64_t rows, cols;
};
// 37 x 203 and 5 x 1000: columns not a multiple of the 256 threads (1000:
// four column tiles, a partial last); 75 x 40: two rows per
// parameter-gradient chunk and a shorter last chunk; 1 x 1.
constexpr NormShape kNormShapes[] = {{37, 203}, {5, 1000}, {75, 40}, {1, 1}};

TEST(NormLossEmulation, LayerNormF32) {
  for (NormShape s : kNormShapes)
    runNormCase(Storage::F32, s.rows, s.cols, true);
}
TEST(NormLossEmulation, LayerNormBf16) {
  for (NormShape s : kNormShapes)
    runNormCase(Storage::BF16, s.rows, s.cols, true);
}
TEST(NormLossEmulation, RmsNormF32) {
  for (NormShape s : kNormShapes)
    runNormCase(Storage::F32, s.rows, s.cols, false);
}
TEST(NormLossEmulation, RmsNormBf16) {
  for (NormShape s : kNormShapes)
    runNormCase(Storage::BF16, s.rows, s.cols, false);
}

// The fused norm backward: the shapes above, and 1100 rows (three rows a
// chunk, a shorter last chunk, 367 chunks).
TEST(NormLossEmulation, NormBackwardFused) {
  std::vector<NormShape> shapes(std::begin(kNormShapes), std::end(kNormShapes));
  shapes.push_back({1100, 40});
  for (Storage storage : {Storage::F32, Storage::BF16})
    for (bool layer : {true, false})
      for (bool residual : {false, true})
        for (NormShape s : shapes)
          runNormBackwardCase(storage, s.rows, s.cols, layer, residual);
}

// The input gradient and its residual add alone (no parameter gradient
// right before them), equal to the unfused pair bit for bit.
TEST(NormLossEmulation, NormInputGradAndAddFused) {
  std::vector<NormShape> shapes(std::begin(kNormShapes), std::end(kNormShapes));
  shapes.push_back({1100, 40});
  for (Storage storage : {Storage::F32, Storage::BF16})
    for (bool layer : {true, false})
      for (NormShape s : shapes)
        runNormBackwardCase(storage, s.rows, s.cols, layer, /*residual=*/true,
                            /*paramGrad=*/false);
}

TEST(NormLossEmulation, ParamGradChunks) {
  // At most kParamGradChunks chunks, every row in one, none empty.
  for (int64_t rows : {0, 1, 511, 512, 513, 1100, 16384, 100000}) {
    RowChunks c = paramGradChunks(rows);
    EXPECT_LE(c.chunks, kParamGradChunks) << rows;
    EXPECT_GE(c.chunks * c.rowsPerChunk, rows) << rows;
    EXPECT_LT((c.chunks - 1) * c.rowsPerChunk, std::max<int64_t>(rows, 1))
        << rows;
  }
}

TEST(NormLossEmulation, CrossEntropyF32) {
  runCrossEntropyCase(Storage::F32, 37, 203, 5);
  runCrossEntropyCase(Storage::F32, 5, 1000, 3);
}
TEST(NormLossEmulation, CrossEntropyBf16) {
  runCrossEntropyCase(Storage::BF16, 37, 203, 5);
  runCrossEntropyCase(Storage::BF16, 5, 1000, 3);
}
// A padded vocabulary on one device (--target cuda's --pad-vocab): 203
// classes in rows of 256 columns, 1000 in 1024.
TEST(NormLossEmulation, CrossEntropyPaddedF32) {
  runCrossEntropyCase(Storage::F32, 37, 256, 5, 203);
  runCrossEntropyCase(Storage::F32, 5, 1024, 3, 1000);
}
TEST(NormLossEmulation, CrossEntropyPaddedBf16) {
  runCrossEntropyCase(Storage::BF16, 37, 256, 5, 203);
}
TEST(NormLossEmulation, CrossEntropyAllIgnored) {
  runCrossEntropyCase(Storage::F32, 4, 50, 1);
}

// The total kernel alone over more rows than its 1024 threads (the rows
// kernel's losses given: emulating 3000 row blocks would be slow).
TEST(NormLossEmulation, CrossEntropyTotalManyRows) {
  const int64_t rows = 3000, cols = 11;
  std::mt19937 rng(3000);
  std::uniform_real_distribution<double> loss(0.0, 5.0);
  std::vector<int64_t> labels(rows);
  std::vector<double> rowLoss(rows);
  double sum = 0.0;
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) {
    bool ignored = r % 7 == 3;
    labels[r] = ignored ? kIgnore : r % cols;
    rowLoss[r] = ignored ? 0.0 : loss(rng);
    sum += rowLoss[r];
    n += !ignored;
  }
  float lossSum = NAN;
  int64_t count = -1;
  expectLaunched(emu::launch(dim3(1), dim3(kTotalThreads), 0,
                             [&] {
                               crossEntropyTotalKernel(
                                   rowLoss.data(), labels.data(), rows, cols,
                                   kIgnore, &lossSum, &count);
                             }),
                 "total");
  EXPECT_EQ(count, n);
  EXPECT_LE(std::abs(lossSum - sum) / sum, kF32Tolerance);
}

} // namespace
