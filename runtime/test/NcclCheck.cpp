//===- NcclCheck.cpp - tpcrt-nccl-check: NCCL on device buffers -----------===//
//
// `tpcrt-nccl-check --count-devices` prints the number of CUDA devices (the
// ctest wrapper picks the rank count from it); `tpcrt-nccl-check --local`
// checks a one-rank NCCL communicator bootstrapped by the local one;
// `mpiexec -n N tpcrt-nccl-check` checks N ranks, rank r on device r, with
// the MPI world as bootstrap. Each rank fills device buffers from its rank
// alone, so it can compute what every call must return without
// communicating; the values are small integers (exact in f32) and are
// compared exactly after copying the results back. Exit 0 when all pass, 1
// on a mismatch or error, 77 (skipped) without a CUDA device or with fewer
// devices than ranks (without a device it first checks that creating a
// communicator fails with that reason).
//
//===----------------------------------------------------------------------===//

#include "RankChecker.h"
#include "tpcrt/Comm.h"
#include "tpcrt/Devices.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tpcrt;

namespace {

/// Every equal() that holds is said on stdout.
struct Checker : test::RankChecker {
  Checker() { sayPasses = true; }
  bool cuda(const std::string &what, cudaError_t err) {
    if (err == cudaSuccess)
      return true;
    fail(what + ": CUDA: " + cudaGetErrorString(err));
    return false;
  }
};

/// A device copy of a host vector; errors are counted by the checker and
/// leave an empty buffer (whose download is empty, hence a mismatch).
template <typename T> class DeviceVector {
public:
  DeviceVector(Checker &c, const std::vector<T> &host)
      : c_(c), size_(host.size()) {
    if (!c_.cuda("cudaMalloc",
                 cudaMalloc(reinterpret_cast<void **>(&data_), bytes()))) {
      data_ = nullptr;
      return;
    }
    c_.cuda("cudaMemcpy to device",
            cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  ~DeviceVector() {
    if (data_)
      cudaFree(data_);
  }
  DeviceVector(const DeviceVector &) = delete;
  DeviceVector &operator=(const DeviceVector &) = delete;

  T *data() { return data_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  std::vector<T> download() {
    std::vector<T> host(size_);
    if (!data_ ||
        !c_.cuda("cudaMemcpy to host", cudaMemcpy(host.data(), data_, bytes(),
                                                  cudaMemcpyDeviceToHost)))
      return {};
    return host;
  }

private:
  Checker &c_;
  std::size_t size_;
  T *data_ = nullptr;
};

/// Rank r's contribution: element i of its buffer.
float value(int r, std::size_t i) { return float(100 * r + int(i % 97) + 1); }

void checkCollectives(Communicator &comm, Checker &c,
                      const std::string &group) {
  const int r = comm.rank(), p = comm.size();
  const std::size_t n = 1000;
  auto name = [&](const char *what) { return group + " " + what; };

  // allReduceSum (f32): the sum over ranks of value(q, i).
  std::vector<float> data(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    data[i] = value(r, i);
    for (int q = 0; q < p; ++q)
      want[i] += value(q, i);
  }
  {
    DeviceVector<float> d(c, data);
    c.ok(name("allReduceSum"), comm.allReduceSum(d.data(), n));
    c.equal(name("allReduceSum"), d.download(), want);
  }

  // allReduceMax: the sign flips on odd i, so the maximum comes from the
  // last rank on even i and from rank 0 on odd i.
  std::vector<float> maxData(n), wantMax(n);
  for (std::size_t i = 0; i < n; ++i) {
    float sign = i % 2 ? -1.0f : 1.0f;
    maxData[i] = sign * value(r, i);
    wantMax[i] = sign * value(i % 2 ? 0 : p - 1, i);
  }
  {
    DeviceVector<float> d(c, maxData);
    c.ok(name("allReduceMax"), comm.allReduceMax(d.data(), n));
    c.equal(name("allReduceMax"), d.download(), wantMax);
  }

  // allReduceSum (i64) with values beyond f32's exact integers.
  std::vector<int64_t> counts(n), wantCounts(n);
  for (std::size_t i = 0; i < n; ++i) {
    counts[i] = (int64_t(1) << 40) * (r + 1) + int64_t(i);
    for (int q = 0; q < p; ++q)
      wantCounts[i] += (int64_t(1) << 40) * (q + 1) + int64_t(i);
  }
  {
    DeviceVector<int64_t> d(c, counts);
    c.ok(name("allReduceSum i64"), comm.allReduceSum(d.data(), n));
    c.equal(name("allReduceSum i64"), d.download(), wantCounts);
  }

  // allToAll: rank q sends chunk j = {1000 * q + 10 * j + e}; this rank
  // receives in chunk q what rank q sent to it.
  const std::size_t k = 5;
  std::vector<float> sendChunks(k * p), wantChunks(k * p);
  for (int j = 0; j < p; ++j)
    for (std::size_t e = 0; e < k; ++e) {
      sendChunks[j * k + e] = float(1000 * r + 10 * j + int(e));
      wantChunks[j * k + e] = float(1000 * j + 10 * r + int(e));
    }
  {
    DeviceVector<float> send(c, sendChunks);
    DeviceVector<float> recv(c, std::vector<float>(k * p, -1.0f));
    c.ok(name("allToAll"),
         comm.allToAll(send.data(), recv.data(), k * sizeof(float)));
    c.equal(name("allToAll"), recv.download(), wantChunks);
  }

  // allGather: rank q's block holds value(q, i).
  std::vector<float> mine(n), wantGathered(n * p);
  for (std::size_t i = 0; i < n; ++i)
    mine[i] = value(r, i);
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < n; ++i)
      wantGathered[q * n + i] = value(q, i);
  {
    DeviceVector<float> send(c, mine);
    DeviceVector<float> recv(c, std::vector<float>(n * p, -1.0f));
    c.ok(name("allGather"),
         comm.allGather(send.data(), recv.data(), n * sizeof(float)));
    c.equal(name("allGather"), recv.download(), wantGathered);
  }

  // reduceScatterSum: chunk r of the sum of every rank's p*n buffer, where
  // rank q's element j is value(q, j).
  std::vector<float> full(n * p), wantChunk(n);
  for (std::size_t j = 0; j < n * p; ++j)
    full[j] = value(r, j);
  for (std::size_t i = 0; i < n; ++i)
    for (int q = 0; q < p; ++q)
      wantChunk[i] += value(q, r * n + i);
  {
    DeviceVector<float> send(c, full);
    DeviceVector<float> recv(c, std::vector<float>(n, -1.0f));
    c.ok(name("reduceScatterSum"),
         comm.reduceScatterSum(send.data(), recv.data(), n));
    c.equal(name("reduceScatterSum"), recv.download(), wantChunk);
  }

  // broadcast from every root: everyone ends with the root's values.
  for (int root = 0; root < p; ++root) {
    std::vector<int64_t> bytes(n), wantBytes(n);
    for (std::size_t i = 0; i < n; ++i) {
      bytes[i] = int64_t(r) * 1000000 + int64_t(i);
      wantBytes[i] = int64_t(root) * 1000000 + int64_t(i);
    }
    DeviceVector<int64_t> d(c, bytes);
    std::string what = name("broadcast from ") + std::to_string(root);
    c.ok(what, comm.broadcast(d.data(), n * sizeof(int64_t), root));
    c.equal(what, d.download(), wantBytes);
  }

  c.ok(name("barrier"), comm.barrier());

  // Argument errors come back as values on every rank alike (no rank
  // enters NCCL, so none blocks).
  DeviceVector<float> scratch(c, std::vector<float>(4));
  c.expectError(name("broadcast from a bad root"),
                comm.broadcast(scratch.data(), 8, p));
  c.expectError(name("send to a bad peer"),
                comm.send(scratch.data(), 4, p + 3, 0));
  c.expectError(name("send to this rank"), comm.send(scratch.data(), 4, r, 0));
  c.expectError(name("recv with a negative tag"),
                comm.recv(scratch.data(), 4, r == 0 ? p - 1 : 0, -2));
  std::unique_ptr<Communicator> none;
  c.expectError(name("split with a negative color"), comm.split(-1, r, none));
}

/// A ring: NCCL's send waits for the matching recv, so even ranks send
/// first and odd ranks receive first.
void checkRing(Communicator &comm, Checker &c) {
  const int r = comm.rank(), p = comm.size();
  if (p < 2)
    return;
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  const std::size_t n = 257;
  std::vector<float> out(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = value(r, i);
    want[i] = value(prev, i);
  }
  DeviceVector<float> send(c, out);
  DeviceVector<float> recv(c, std::vector<float>(n, -1.0f));
  const std::size_t bytes = n * sizeof(float);
  const int tag = 7;
  if (r % 2 == 0) {
    c.ok("send", comm.send(send.data(), bytes, next, tag));
    c.ok("recv", comm.recv(recv.data(), bytes, prev, tag));
  } else {
    c.ok("recv", comm.recv(recv.data(), bytes, prev, tag));
    c.ok("send", comm.send(send.data(), bytes, next, tag));
  }
  c.equal("send/recv ring", recv.download(), want);
}

/// Sub-groups as a mesh axis would use them, like tpcrt-comm-check: ranks
/// {0,2,..} and {1,3,..} ordered by rank, then every rank in reverse order.
void checkSplits(Communicator &world, Checker &c) {
  const int r = world.rank(), p = world.size();
  std::unique_ptr<Communicator> sub;
  c.ok("split", world.split(r % 2, r, sub));
  if (sub) {
    int wantSize = (p - r % 2 + 1) / 2;
    if (sub->rank() != r / 2 || sub->size() != wantSize) {
      std::fprintf(stderr,
                   "rank %d: split: sub-rank %d of %d, expected %d of "
                   "%d\n",
                   r, sub->rank(), sub->size(), r / 2, wantSize);
      ++c.failures;
    }
    checkCollectives(*sub, c, "split");
  }
  std::unique_ptr<Communicator> reversed;
  c.ok("reversed split", world.split(0, p - 1 - r, reversed));
  if (reversed) {
    if (reversed->rank() != p - 1 - r || reversed->size() != p) {
      std::fprintf(stderr,
                   "rank %d: reversed split: sub-rank %d of %d, "
                   "expected %d of %d\n",
                   r, reversed->rank(), reversed->size(), p - 1 - r, p);
      ++c.failures;
    }
    checkCollectives(*reversed, c, "reversed");
    checkRing(*reversed, c);
  }
}

int run(Communicator &world, int devices) {
  Checker c;
  c.rank = world.rank();
  const int device = world.rank();
  if (!c.cuda("cudaSetDevice", cudaSetDevice(device)))
    return 1;

  // A device some rank cannot use fails the call on every rank, before any
  // enters NCCL: here rank 0 asks for one past the last.
  std::unique_ptr<Communicator> bad;
  c.expectError(
      "createNcclCommunicator with a bad device on rank 0",
      createNcclCommunicator(world, world.rank() == 0 ? devices : device, bad));

  std::unique_ptr<Communicator> nccl;
  if (Status s = createNcclCommunicator(world, device, nccl); !s) {
    std::fprintf(stderr, "rank %d: error: %s\n", c.rank, s.message().c_str());
    return 1;
  }
  std::printf("rank %d of %d (%s on CUDA device %d)\n", nccl->rank(),
              nccl->size(), nccl->backendName().c_str(), device);
  if (nccl->rank() != world.rank() || nccl->size() != world.size()) {
    std::fprintf(stderr,
                 "rank %d: the NCCL communicator is rank %d of %d, "
                 "expected %d of %d\n",
                 c.rank, nccl->rank(), nccl->size(), world.rank(),
                 world.size());
    ++c.failures;
  }
  checkCollectives(*nccl, c, "world");
  checkRing(*nccl, c);
  checkSplits(*nccl, c);
  c.ok("final barrier", nccl->barrier());
  if (c.failures) {
    std::fprintf(stderr, "rank %d: %d failure(s)\n", c.rank, c.failures);
    return 1;
  }
  std::printf("rank %d: all checks passed\n", c.rank);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const bool countDevices =
      argc == 2 && std::strcmp(argv[1], "--count-devices") == 0;
  const bool local = argc == 2 && std::strcmp(argv[1], "--local") == 0;
  if (argc > 2 || (argc == 2 && !countDevices && !local)) {
    std::fprintf(stderr,
                 "usage: tpcrt-nccl-check [--local | --count-devices]\n");
    return 1;
  }
  std::string reason;
  const int devices = cudaDeviceCount(&reason);
  if (countDevices) {
    std::printf("%d\n", devices);
    return 0;
  }
  if (!hasNcclBackend()) {
    std::printf("built without NCCL: skipped\n");
    return 77;
  }
  if (devices == 0) {
    // All that can be checked here: creating one fails, saying why.
    std::unique_ptr<Communicator> local = createLocalCommunicator(), nccl;
    Status s = createNcclCommunicator(*local, 0, nccl);
    if (s || s.message().find("no CUDA device") == std::string::npos) {
      std::fprintf(stderr,
                   "error: without a CUDA device, "
                   "createNcclCommunicator returned '%s'\n",
                   s ? "ok" : s.message().c_str());
      return 1;
    }
    std::printf("%s: skipped\n", s.message().c_str());
    return 77;
  }

  std::unique_ptr<Communicator> world;
  if (local) {
    world = createLocalCommunicator();
  } else if (!hasMpiBackend()) {
    std::printf("built without MPI: run with --local; skipped\n");
    return 77;
  } else if (Status s = createMpiWorldCommunicator(world); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (world->size() > devices) {
    std::printf("rank %d: %d ranks but %d CUDA device(s): skipped\n",
                world->rank(), world->size(), devices);
    return 77;
  }
  return run(*world, devices);
}
