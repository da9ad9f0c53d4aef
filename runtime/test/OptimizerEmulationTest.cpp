//===- OptimizerEmulationTest.cpp - the multi-tensor update, emulated -----===//
//
// cuda/OptimizerKernels.cu compiled for the host with TPCRT_CUDA_EMULATION
// (CudaEmulation.h) and its kernels launched as adamwUpdateMany and
// runSumSquares launch them: the multi-tensor update (AdamW on 16-byte
// vectors where its arrays are aligned, element by element where not, and
// SGD) equals the CPU device's adamwUpdate / sgdUpdate bit for bit, and the
// partial sums of squares it writes beside the update are sum_squares'
// own, bit for bit (the CUDA device's norm in the updates must not differ
// from the standalone kernel's). Tensors of 1, 5, 1027 and 4099 elements
// (no multiple of a vector, a block or the grid) and one of 4096 whose
// arrays are offset by one element. An emulation, not a GPU run.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/CpuTrainingKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

// Last: it defines CUDA's keywords and built-in variables as macros
// (TPCRT_CUDA_EMULATION, defined by the build, makes it the host's). The
// kernels are in the file's anonymous namespace: included, not linked.
#include "OptimizerKernels.cu"

using namespace tpcrt;
using namespace tpcrt::cuda;

namespace {

constexpr double kBeta1 = 0.9, kBeta2 = 0.95, kEps = 1e-8, kDecay = 0.1;

/// A tensor's four arrays, each at a 16-byte boundary plus `offset`
/// elements.
struct Arrays {
  std::vector<float> storage[4];
  float *at[4];
  int64_t count;

  Arrays(int64_t count, int offset, std::mt19937 &rng) : count(count) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int a = 0; a < 4; ++a) {
      storage[a].assign(count + 8, NAN);
      auto address = reinterpret_cast<uintptr_t>(storage[a].data());
      at[a] =
          storage[a].data() + (16 - address % 16) % 16 / sizeof(float) + offset;
      for (int64_t i = 0; i < count; ++i)
        at[a][i] = a == 3 ? std::fabs(normal(rng)) * 0.01f // exp_avg_sq
                          : normal(rng);
    }
  }
  std::vector<float> copy(int a) const {
    return std::vector<float>(at[a], at[a] + count);
  }
};

bool sameBits(const float *a, const std::vector<float> &b) {
  return std::memcmp(a, b.data(), b.size() * sizeof(float)) == 0;
}

struct Case {
  int64_t count;
  int offset;
};

const Case kCases[] = {{1, 0}, {5, 0}, {1027, 0}, {4099, 0}, {4096, 1}};

/// updateManyKernel over kCases (AdamW, or SGD with momentum), with the
/// squares' partials or without, against the CPU; the partials against
/// squaresPartialsKernel's.
void runUpdateMany(bool adamw, bool squares) {
  std::mt19937 rng(adamw * 2 + squares + 11);
  std::vector<Arrays> arrays;
  for (const Case &c : kCases)
    arrays.emplace_back(c.count, c.offset, rng);
  const int n = static_cast<int>(arrays.size());
  std::vector<OptimizerTensor> list;
  std::vector<std::vector<float>> grads, params, state0, state1;
  int64_t most = 0;
  for (int j = 0; j < n; ++j) {
    Arrays &t = arrays[j];
    list.push_back({t.at[0], t.at[1], t.at[2], adamw ? t.at[3] : nullptr,
                    t.count, squares ? n - 1 - j : -1});
    grads.push_back(t.copy(1));
    params.push_back(t.copy(0));
    state0.push_back(t.copy(2));
    state1.push_back(t.copy(3));
    most = std::max(most, t.count);
  }
  float lr = 3e-3f, gradScale = 0.75f;
  int64_t step = 3;
  UpdateConstants k = adamwConstants(kBeta1, kBeta2, kEps, kDecay);
  UpdateConstants sgd = sgdConstants(kBeta1, kDecay);
  k.momentum = sgd.momentum, k.decay = sgd.decay, k.hasDecay = sgd.hasDecay;
  std::vector<double> partials(n * kSquaresBlocks, NAN);
  // adamwUpdateMany's grid.
  unsigned x = squares ? kSquaresBlocks
                       : static_cast<unsigned>(std::min<int64_t>(
                             updateGrid(most), (int64_t(1) << 17) / n));
  std::string error = emu::launch(dim3(x, n), dim3(kThreads), 0, [&] {
    updateManyKernel(list.data(), n, k, &lr, adamw ? &step : nullptr,
                     &gradScale, squares ? partials.data() : nullptr);
  });
  ASSERT_TRUE(error.empty()) << error;

  for (int j = 0; j < n; ++j) {
    std::string tag = std::to_string(kCases[j].count) + " elements at +" +
                      std::to_string(kCases[j].offset);
    Status s = adamw
                   ? cpu::adamwUpdate(params[j].data(), grads[j].data(),
                                      state0[j].data(), state1[j].data(),
                                      kCases[j].count, lr, step,
                                      {kBeta1, kBeta2, kEps, kDecay}, gradScale)
                   : cpu::sgdUpdate(params[j].data(), grads[j].data(),
                                    state0[j].data(), kCases[j].count, lr,
                                    kBeta1, kDecay, gradScale);
    ASSERT_TRUE(s) << s.message();
    EXPECT_TRUE(sameBits(arrays[j].at[0], params[j])) << tag << ": param";
    EXPECT_TRUE(sameBits(arrays[j].at[2], state0[j])) << tag << ": state 0";
    if (adamw) {
      EXPECT_TRUE(sameBits(arrays[j].at[3], state1[j])) << tag << ": state 1";
    }
    EXPECT_TRUE(sameBits(arrays[j].at[1], grads[j]))
        << tag << ": the gradient was written";
    // Nothing written past the tensor's end.
    EXPECT_TRUE(std::isnan(arrays[j].at[0][kCases[j].count])) << tag;
  }
  if (!squares)
    return;
  // sum_squares' first pass over the same gradients, operand n - 1 - j
  // being tensor j.
  SquaresBatch batch{};
  for (int j = 0; j < n; ++j) {
    batch.data[n - 1 - j] = grads[j].data();
    batch.count[n - 1 - j] = kCases[j].count;
    batch.type[n - 1 - j] = Storage::F32;
  }
  std::vector<double> standalone(n * kSquaresBlocks, NAN);
  error = emu::launch(dim3(kSquaresBlocks, n), dim3(kThreads), 0,
                      [&] { squaresPartialsKernel(batch, standalone.data()); });
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(std::memcmp(partials.data(), standalone.data(),
                        partials.size() * sizeof(double)),
            0)
      << "the update's partial sums of squares differ from sum_squares'";
  // And they sum to the squares (a check that the partials hold them all).
  for (int j = 0; j < n; ++j) {
    double total = 0.0, exact = 0.0;
    for (unsigned b = 0; b < kSquaresBlocks; ++b)
      total += partials[(n - 1 - j) * kSquaresBlocks + b];
    for (float g : grads[j])
      exact += static_cast<double>(g) * g;
    EXPECT_NEAR(total, exact, 1e-12 * exact) << "tensor " << j;
  }
}

TEST(OptimizerEmulation, AdamWManyWithSquares) { runUpdateMany(true, true); }
TEST(OptimizerEmulation, AdamWMany) { runUpdateMany(true, false); }
TEST(OptimizerEmulation, SgdManyWithSquares) { runUpdateMany(false, true); }

} // namespace
