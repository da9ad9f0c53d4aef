#include "tpcrt/Devices.h"

#include "gtest/gtest.h"

// The CUDA backend compiles wherever the toolkit is; it runs only where a GPU
// is. Without one this test is reported as skipped, never as passed.
TEST(DevicesTest, CudaDeviceIsUsable) {
  std::string reason;
  int count = tpcrt::cudaDeviceCount(&reason);
  if (count == 0)
    GTEST_SKIP() << "no CUDA device: " << reason;
  EXPECT_TRUE(tpcrt::hasCudaBackend());
  EXPECT_GT(count, 0);
}
