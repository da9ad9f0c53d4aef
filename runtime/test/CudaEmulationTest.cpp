//===- CudaEmulationTest.cpp - the kernel emulation's own checks ----------===//
//
// test/CudaEmulation.h runs the CUDA backend's kernels on the host for the
// emulation tests and the emulated backend. These tests hold it to what
// those rely on: its schedules (TPCRT_EMULATION_SCHEDULE) find a missing
// barrier that the default order hides, a barrier or warp collective that
// not every thread reaches is reported instead of hanging, and a bad
// schedule is refused with its value. And emulation/cuda_runtime_api.h's
// device memory: the device's operations reach it, host code does not;
// static shared memory is poisoned in every block. And DropoutStream's
// 32-bit draws equal Random.h's.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

// Last: it defines CUDA's keywords and built-in variables as macros.
#include "CudaCommon.cuh"

#include <cuda_runtime_api.h>

using namespace tpcrt;
using namespace tpcrt::cuda;
namespace emu = tpcrt::emu;

namespace {

constexpr int kThreads = 256;

/// blockSumOf (CudaCommon.cuh) without its first barrier: a second call's
/// lane 0 may overwrite shared[warp] while another warp still reads the
/// first call's value. Between the two, every thread only meets warp
/// shuffles.
float blockSumMissingBarrier(float v, float *shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warpSumOf(v);
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : 0.0f;
  return warpSumOf(v);
}

/// Two block sums in a row, of t + 1 and of 2 (t + 1), into out[t] and
/// out[blockDim.x + t].
template <bool Broken> void twoSumsKernel(float *out) {
  TPCRT_SHARED(float, shared, [32]);
  const int t = threadIdx.x, n = blockDim.x;
  float first = Broken ? blockSumMissingBarrier(float(t + 1), shared)
                       : blockSumOf(float(t + 1), shared);
  float second = Broken ? blockSumMissingBarrier(float(2 * (t + 1)), shared)
                        : blockSumOf(float(2 * (t + 1)), shared);
  out[t] = first;
  out[n + t] = second;
}

/// Whether every thread got both sums right.
template <bool Broken> bool twoSumsRight(const char *scheduleText) {
  emu::Schedule saved = emu::schedule();
  emu::schedule() = emu::parseSchedule(scheduleText);
  std::vector<float> out(2 * kThreads, -1.0f);
  std::string error = emu::launch(dim3(3), dim3(kThreads), 0,
                                  [&] { twoSumsKernel<Broken>(out.data()); });
  emu::schedule() = saved;
  EXPECT_EQ(error, "") << scheduleText;
  const float sum = kThreads * (kThreads + 1) / 2.0f;
  for (int t = 0; t < kThreads; ++t)
    if (out[t] != sum || out[kThreads + t] != 2 * sum)
      return false;
  return true;
}

const char *const kSchedules[] = {"forward", "reverse", "warps", "shuffle",
                                  "shuffle:7"};

TEST(CudaEmulation, EverySchedulePassesAKernelWithItsBarriers) {
  for (const char *s : kSchedules)
    EXPECT_TRUE(twoSumsRight<false>(s)) << s;
}

// The race above is what the default round robin cannot see (every thread
// reaches its next shuffle before any goes on), and why the other
// schedules exist: one warp running ahead, or random turns, expose it.
TEST(CudaEmulation, WarpsAndShuffleFindAMissingBarrier) {
  EXPECT_TRUE(twoSumsRight<true>("forward"))
      << "the default order found the race: this test's premise changed";
  EXPECT_FALSE(twoSumsRight<true>("warps"));
  EXPECT_FALSE(twoSumsRight<true>("shuffle"));
  EXPECT_FALSE(twoSumsRight<true>("shuffle:7"));
}

/// A block sum of 1 per thread into out[block]; `Broken` reads all 32
/// partial slots, not only the block's warps' (a block of 64 threads writes
/// two).
template <bool Broken> void slotSumKernel(float *out) {
  TPCRT_SHARED(float, partial, [32]);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    partial[warp] = 32.0f;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) >> 5;
    float v = Broken || lane < warps ? partial[lane] : 0.0f;
    v = warpSumOf(v);
    if (lane == 0)
      out[blockIdx.x] = v;
  }
}

// Static shared memory holds no zeros (or the last block's values) for a
// kernel to lean on: every block starts with it poisoned, the first on a
// host thread too, so the unwritten slots read as NaN.
TEST(CudaEmulation, StaticSharedIsPoisonedInEveryBlock) {
  for (bool broken : {false, true}) {
    std::vector<float> out(5, -1.0f);
    std::string error = emu::launch(
        dim3(5), dim3(64), 0,
        [&] {
          broken ? slotSumKernel<true>(out.data())
                 : slotSumKernel<false>(out.data());
        },
        emu::CopyTiming::AtWait, 2);
    EXPECT_EQ(error, "");
    for (size_t b = 0; b < out.size(); ++b)
      if (broken)
        EXPECT_TRUE(std::isnan(out[b])) << "block " << b << ": " << out[b];
      else
        EXPECT_EQ(out[b], 64.0f) << "block " << b;
  }
}

TEST(CudaEmulation, BarrierNotEveryThreadReachesIsReported) {
  for (const char *s : kSchedules) {
    emu::Schedule saved = emu::schedule();
    emu::schedule() = emu::parseSchedule(s);
    std::string error = emu::launch(dim3(2), dim3(64), 0, [] {
      if (threadIdx.x < 40)
        __syncthreads();
    });
    emu::schedule() = saved;
    EXPECT_NE(error.find("not every thread reaches"), std::string::npos)
        << s << ": " << error;
  }
}

TEST(CudaEmulation, ShuffleWithLanesGoneIsReported) {
  std::string error = emu::launch(dim3(1), dim3(32), 0, [] {
    if (threadIdx.x >= 16)
      return;
    (void)__shfl_xor_sync(0xffffffffu, 1.0f, 1);
  });
  EXPECT_NE(error.find("not every thread reaches"), std::string::npos) << error;
}

TEST(CudaEmulation, SchedulesParse) {
  struct Case {
    const char *text;
    emu::Schedule::Kind kind;
    uint64_t seed;
  } cases[] = {{"", emu::Schedule::Forward, 0},
               {"forward", emu::Schedule::Forward, 0},
               {"reverse", emu::Schedule::Reverse, 0},
               {"warps", emu::Schedule::Warps, 0},
               {"shuffle", emu::Schedule::Shuffle, 0},
               {"shuffle:42", emu::Schedule::Shuffle, 42}};
  for (const Case &c : cases) {
    emu::Schedule s = emu::parseSchedule(c.text);
    EXPECT_EQ(s.error, "") << c.text;
    EXPECT_EQ(s.kind, c.kind) << c.text;
    EXPECT_EQ(s.seed, c.seed) << c.text;
  }
  for (const char *bad : {"backward", "shuffle:", "shuffle:x", "shuffle:-1",
                          "shuffle:99999999999999999999", "shuffle7"}) {
    emu::Schedule s = emu::parseSchedule(bad);
    EXPECT_NE(s.error.find(std::string("=") + bad + ": expected"),
              std::string::npos)
        << bad << ": " << s.error;
  }
}

TEST(CudaEmulation, BadScheduleRefusesLaunches) {
  emu::Schedule saved = emu::schedule();
  emu::schedule() = emu::parseSchedule("sideways");
  bool ran = false;
  std::string error = emu::launch(dim3(1), dim3(32), 0, [&] { ran = true; });
  emu::schedule() = saved;
  EXPECT_FALSE(ran);
  EXPECT_EQ(error, "TPCRT_EMULATION_SCHEDULE=sideways: expected forward, "
                   "reverse, warps, shuffle or shuffle:SEED");
}

/// Doubles n floats in place.
__global__ void doubleKernel(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= 2.0f;
}

TEST(CudaEmulationMemory, OperationsReachDeviceMemory) {
  constexpr int n = 1000;
  std::vector<float> host(n), back(n, 0.0f);
  for (int i = 0; i < n; ++i)
    host[i] = float(i);
  float *device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host.data(), n * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  TPCRT_LAUNCH(doubleKernel, dim3(4), dim3(256), 0, nullptr, device, n);
  ASSERT_EQ(cudaMemcpy(back.data(), device, n * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(back[i], 2.0f * i) << i;
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

// Timing events (CudaDevice's run marks): the time between the stream
// reaching one and the other, the work between them included.
TEST(CudaEmulation, TimingEventsMeasureTheWorkBetweenThem) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaEvent_t start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&end), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming),
            cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start, stream), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, stream), cudaSuccess);
  tpcrt::emu::enqueueWork(stream, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  ASSERT_EQ(cudaEventRecord(end, stream), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(end), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_GE(ms, 20.0f);
  EXPECT_LT(ms, 20000.0f);
  // An event without timing has no time.
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed),
            cudaErrorInvalidResourceHandle);
  for (cudaEvent_t e : {start, end, untimed})
    EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// What a GPU would not allow (an illegal address, or garbage): the host
// dereferencing a device pointer. Here it stops, naming the allocation.
TEST(CudaEmulationMemoryDeathTest, HostTouchingDeviceMemoryStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        float *device = nullptr;
        if (cudaMalloc(&device, 4096 + 64) != cudaSuccess)
          std::abort();
        volatile float *p = device + 1030;
        *p = 1.0f;
      },
      "the host touched device memory at 0x[0-9a-f]+ \\(byte 4120 of a "
      "4160-byte cudaMalloc\\): a GPU's memory does not allow that");
}

// A kernel given a host pointer (an illegal address on a GPU) faults
// without running, and the device's next synchronization fails.
TEST(CudaEmulationMemoryDeathTest, KernelGivenAHostPointerFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::vector<float> host(8, 1.0f);
        TPCRT_LAUNCH(doubleKernel, dim3(1), dim3(32), 0, nullptr, host.data(),
                     8);
        cudaError_t error = cudaDeviceSynchronize();
        std::exit(error != cudaSuccess && host[0] == 1.0f ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "emulated kernel fault: argument 0 is 0x[0-9a-f]+, not device memory "
      "\\(a host pointer: an illegal address on a GPU\\)");
}

// CudaCommon.cuh's vectorAt: a vector access that is not aligned to its
// width faults, as on a GPU ("misaligned address").
TEST(CudaEmulation, MisalignedVectorAccessFaults) {
  alignas(16) float data[12] = {};
  std::string aligned = emu::launch(dim3(1), dim3(32), 0, [&] {
    (void)*vectorAt<float4>(data + 4);
    *vectorAt<float2>(data + 2) = make_float2(1.0f, 2.0f);
  });
  EXPECT_EQ(aligned, "");
  std::string misaligned = emu::launch(
      dim3(1), dim3(32), 0, [&] { (void)*vectorAt<float4>(data + 2); });
  EXPECT_NE(misaligned.find("misaligned address 0x"), std::string::npos)
      << misaligned;
  EXPECT_NE(misaligned.find("for a 16-byte access"), std::string::npos)
      << misaligned;
}

} // namespace

// DropoutStream (CudaCommon.cuh) draws in 32-bit halves what Random.h, the
// CPU device's stream, draws in 64 bits: every kernel's keep bits rest on
// the two agreeing. Random keys and indices, every field, and the
// thresholds at the ends (keep all, keep none, one from either, 2^16: the
// rate nearest 1 whose threshold rounds up to it).
TEST(DropoutStream, DrawsEqualRandomH) {
  uint64_t state = 12345;
  auto next = [&] { return state = splitmix64(state); };
  const uint64_t thresholds[] = {0, 1, 6554, 32768, 65535, 65536};
  int mismatches = 0, kept = 0, draws = 0;
  for (uint64_t threshold : thresholds)
    for (int k = 0; k < 4000; ++k) {
      DropoutStream stream;
      stream.key = next();
      stream.threshold = threshold;
      const uint64_t n = k % 3 == 0 ? next() : k; // also the first indices
      const unsigned quad =
          dropoutKeepQuad(stream.key, dropoutCounter(n), threshold);
      mismatches += stream.keptQuadAt(stream.counterInput(n)) != quad;
      mismatches +=
          stream.keptPairOf(n) != ((quad >> (dropoutField(n) & 2)) & 3u);
      mismatches +=
          stream.keepsIndex(n) != dropoutKeep(stream.key, n, threshold);
      // A counter stepped as the attention kernels step theirs.
      mismatches +=
          stream.keptQuadAt(stream.counterInput(n) + 4 * 5) !=
          dropoutKeepQuad(stream.key, dropoutCounter(n + 16 * 5), threshold);
      kept += __builtin_popcount(quad);
      draws += 4;
    }
  EXPECT_EQ(mismatches, 0);
  // Not all kept, not all dropped: the thresholds between the ends drew.
  EXPECT_GT(kept, draws / 6);
  EXPECT_LT(kept, draws);
}
