//===- NcclEmulationTest.cpp - the NCCL emulation's own checks ------------===//
//
// test/emulation/NcclEmulation.cpp stands in for NCCL between the ranks of
// the emulated CUDA backend's runs (test/gpu/emulated-*.sh). A fault of its
// own shows there as a hang or a wrong value of the device under test, so
// it is held here to what those runs rely on, with two ranks of one
// communicator in this process (their messages are files either way).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

class NcclEmulation : public ::testing::Test {
protected:
  void SetUp() override {
    char folder[] = "/tmp/tpcrt-nccl-emulation-test-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    dir_ = folder;
    setenv("TPCRT_NCCL_EMULATION_DIR", dir_.c_str(), 1);
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(ncclCommInitRank(&comms_[r], 2, id, r), ncclSuccess);
      ASSERT_EQ(cudaStreamCreate(&streams_[r]), cudaSuccess);
    }
    ASSERT_EQ(cudaMalloc(&device_, 8 * sizeof(float)), cudaSuccess);
    std::vector<float> values = {1, 2, 0, 0, 0, 0, 0, 0};
    ASSERT_EQ(cudaMemcpy(device_, values.data(), values.size() * sizeof(float),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  void TearDown() override {
    cudaFree(device_);
    for (int r = 0; r < 2; ++r) {
      if (comms_[r])
        ncclCommAbort(comms_[r]);
      if (streams_[r])
        cudaStreamDestroy(streams_[r]);
    }
    std::string command = "rm -rf '" + dir_ + "'";
    (void)std::system(command.c_str());
  }

  /// Whether `stream`'s work so far is done, after letting it run.
  static bool finished(cudaStream_t stream) {
    cudaEvent_t event;
    cudaEventCreate(&event);
    cudaEventRecord(event, stream);
    bool done = false;
    for (int i = 0; i < 100 && !done; ++i)
      done = cudaEventQuery(event) == cudaSuccess;
    cudaEventDestroy(event);
    return done;
  }

  std::string dir_;
  ncclComm_t comms_[2] = {nullptr, nullptr};
  cudaStream_t streams_[2] = {nullptr, nullptr};
  float *device_ = nullptr;
};

// A group of two receives whose messages arrive apart (the CUDA device
// groups a pipeline rank's started transfers; the peer sends them from two
// flushes): the group completes once both are there. It used to ask each
// receive again on every poll, and the first, which had taken its message
// (its file removed), then never said done: tp x pp interleaved 1F1B hung
// on the emulated device.
TEST_F(NcclEmulation, GroupOfReceivesArrivingApartCompletes) {
  float *sent = device_, *received = device_ + 4;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclRecv(received, 1, ncclFloat, 0, comms_[1], streams_[1]),
            ncclSuccess);
  ASSERT_EQ(ncclRecv(received + 1, 1, ncclFloat, 0, comms_[1], streams_[1]),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(ncclSend(sent, 1, ncclFloat, 1, comms_[0], streams_[0]),
            ncclSuccess);
  EXPECT_TRUE(finished(streams_[0]));
  EXPECT_FALSE(finished(streams_[1])) << "done with one message of two";
  ASSERT_EQ(ncclSend(sent + 1, 1, ncclFloat, 1, comms_[0], streams_[0]),
            ncclSuccess);
  EXPECT_TRUE(finished(streams_[1])) << "the group never completed";
  float got[2] = {0, 0};
  ASSERT_EQ(cudaMemcpy(got, received, sizeof got, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 2.0f);
}

// The same for a group of two all-reduces, one rank's parts posted before
// the other's: each read once, the sums right.
TEST_F(NcclEmulation, GroupOfAllReducesCompletesOnce) {
  // Rank 0 reduces [0, 2), rank 1 [2, 4): each rank's own buffers.
  float *mine[2] = {device_, device_ + 2};
  std::vector<float> values = {1, 2, 10, 20};
  ASSERT_EQ(cudaMemcpy(device_, values.data(), 4 * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int k = 0; k < 2; ++k)
      ASSERT_EQ(ncclAllReduce(mine[r] + k, mine[r] + k, 1, ncclFloat, ncclSum,
                              comms_[r], streams_[r]),
                ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  EXPECT_TRUE(finished(streams_[0]));
  EXPECT_TRUE(finished(streams_[1]));
  float got[4];
  ASSERT_EQ(cudaMemcpy(got, device_, sizeof got, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(got[0], 11.0f);
  EXPECT_EQ(got[1], 22.0f);
  EXPECT_EQ(got[2], 11.0f);
  EXPECT_EQ(got[3], 22.0f);
}

} // namespace
