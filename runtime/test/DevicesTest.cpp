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

#include "tpcrt/CudaBackend.h"

#include <cstdlib>

using tpcrt::Status;

// Which GPU a rank takes: its local rank, or the one asked for; never two
// ranks on one GPU.
TEST(DevicesTest, SelectCudaDevice) {
  int device = -7;
  EXPECT_TRUE(tpcrt::selectCudaDevice(-1, 0, 1, 1, device));
  EXPECT_EQ(device, 0);
  EXPECT_TRUE(tpcrt::selectCudaDevice(-1, 3, 4, 8, device));
  EXPECT_EQ(device, 3);
  EXPECT_TRUE(tpcrt::selectCudaDevice(5, 0, 1, 8, device));
  EXPECT_EQ(device, 5);

  Status s = tpcrt::selectCudaDevice(-1, 1, 4, 2, device);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "4 ranks on this node but 2 CUDA devices visible: "
                         "one rank per GPU (two ranks on one GPU would "
                         "deadlock NCCL)");
  s = tpcrt::selectCudaDevice(2, 0, 1, 2, device);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "CUDA device 2 does not exist (2 visible: 0..1)");
  s = tpcrt::selectCudaDevice(-1, 0, 1, 0, device);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "no CUDA device");
  EXPECT_FALSE(tpcrt::selectCudaDevice(-1, 2, 2, 4, device));
}

TEST(DevicesTest, LocalRankFromTheLauncher) {
  const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALRANKID",
                         "MPI_LOCALNRANKS", "SLURM_LOCALID",
                         "SLURM_NTASKS_PER_NODE"};
  for (const char *name : names)
    ::unsetenv(name);
  int rank = -1, ranks = -1;
  tpcrt::localRankFromEnvironment(rank, ranks);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(ranks, 1);

  ::setenv("SLURM_LOCALID", "2", 1);
  ::setenv("SLURM_NTASKS_PER_NODE", "4", 1);
  tpcrt::localRankFromEnvironment(rank, ranks);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(ranks, 4);

  // Open MPI first; a missing size means at least rank + 1.
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  tpcrt::localRankFromEnvironment(rank, ranks);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(ranks, 2);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "8", 1);
  tpcrt::localRankFromEnvironment(rank, ranks);
  EXPECT_EQ(ranks, 8);
  // Not a number: the next launcher's.
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x", 1);
  tpcrt::localRankFromEnvironment(rank, ranks);
  EXPECT_EQ(rank, 2);
  for (const char *name : names)
    ::unsetenv(name);
}

// Without a GPU, a CUDA device is refused with the reason; with one, it is
// made (the real checks are test/gpu/device-check.sh's).
TEST(DevicesTest, CudaDeviceOrTheReason) {
  std::unique_ptr<tpcrt::Device> device;
  Status s = tpcrt::createCudaDevice(tpcrt::CudaDeviceOptions(), device);
  std::string reason;
  if (tpcrt::cudaDeviceCount(&reason) > 0) {
    ASSERT_TRUE(s) << s.message();
    EXPECT_STREQ(device->name(), "cuda");
    return;
  }
  ASSERT_FALSE(s);
  EXPECT_FALSE(device);
  EXPECT_FALSE(s.message().empty());
  if (tpcrt::hasCudaBackend() && tpcrt::loadCudaBackend()) {
    EXPECT_EQ(s.message().rfind("no CUDA device: ", 0), 0u) << s.message();
  }
}
