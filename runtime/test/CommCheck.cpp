//===- CommCheck.cpp - tpcrt-comm-check: collectives against local math ---===//
//
// `tpcrt-comm-check --local` checks the one-rank communicator;
// `mpirun -np N tpcrt-comm-check` checks the MPI backend on N ranks. Each rank
// fills its buffers from its rank alone, so every rank can compute what each
// collective must return without communicating; values are small integers
// (exact in f32), so results are compared exactly. Exit 0 when all pass,
// 1 on any mismatch or error, 77 (skipped) when MPI is not built in.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Comm.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tpcrt;

namespace {

struct Checker {
  int rank = 0;
  int failures = 0;

  void expectOk(const char *what, const Status &s) {
    if (!s) {
      std::fprintf(stderr, "rank %d: %s: error: %s\n", rank, what,
                   s.message().c_str());
      ++failures;
    }
  }
  void expectError(const char *what, const Status &s) {
    if (s) {
      std::fprintf(stderr, "rank %d: %s: expected an error, got ok\n", rank,
                   what);
      ++failures;
    } else {
      std::printf("rank %d: %s: error as expected: %s\n", rank, what,
                  s.message().c_str());
    }
  }
  template <typename T>
  void expectEqual(const char *what, const std::vector<T> &got,
                   const std::vector<T> &want) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (got[i] != want[i]) {
        std::fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n",
                     rank, what, i, double(got[i]), double(want[i]));
        ++failures;
        return;
      }
    }
    std::printf("rank %d: %s: ok (%zu elements)\n", rank, what, want.size());
  }
};

/// Rank r's contribution: element i of its buffer of `n`.
float value(int r, std::size_t i) { return float(100 * r + int(i % 97) + 1); }

void checkCollectives(Communicator &comm, Checker &c, const char *group) {
  const int r = comm.rank(), p = comm.size();
  const std::size_t n = 1000;
  std::string prefix = std::string(group) + " ";
  auto name = [&](const char *what) { return prefix + what; };

  // allReduceSum: sum over ranks of value(q, i).
  std::vector<float> data(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    data[i] = value(r, i);
    for (int q = 0; q < p; ++q)
      want[i] += value(q, i);
  }
  c.expectOk(name("allReduceSum").c_str(), comm.allReduceSum(data.data(), n));
  c.expectEqual(name("allReduceSum").c_str(), data, want);

  // allReduceMax: the largest value(q, i) with its sign flipped on odd i,
  // so that the maximum comes from the last rank on even i and from rank 0
  // on odd i.
  std::vector<float> maxData(n), wantMax(n);
  for (std::size_t i = 0; i < n; ++i) {
    float sign = i % 2 ? -1.0f : 1.0f;
    maxData[i] = sign * value(r, i);
    wantMax[i] = sign * value(i % 2 ? 0 : p - 1, i);
  }
  c.expectOk(name("allReduceMax").c_str(),
             comm.allReduceMax(maxData.data(), n));
  c.expectEqual(name("allReduceMax").c_str(), maxData, wantMax);

  // allReduceSum on i64, with values beyond f32's exact integers.
  std::vector<int64_t> counts(n), wantCounts(n);
  for (std::size_t i = 0; i < n; ++i) {
    counts[i] = (int64_t(1) << 40) * (r + 1) + int64_t(i);
    for (int q = 0; q < p; ++q)
      wantCounts[i] += (int64_t(1) << 40) * (q + 1) + int64_t(i);
  }
  c.expectOk(name("allReduceSum i64").c_str(),
             comm.allReduceSum(counts.data(), n));
  c.expectEqual(name("allReduceSum i64").c_str(), counts, wantCounts);

  // allToAll: rank q sends chunk j = {1000 * q + 10 * j + k}; this rank
  // receives in chunk q what rank q sent to it.
  const std::size_t k = 5;
  std::vector<float> sendChunks(k * p), recvChunks(k * p), wantChunks(k * p);
  for (int j = 0; j < p; ++j)
    for (std::size_t e = 0; e < k; ++e) {
      sendChunks[j * k + e] = float(1000 * r + 10 * j + int(e));
      wantChunks[j * k + e] = float(1000 * j + 10 * r + int(e));
    }
  c.expectOk(name("allToAll").c_str(),
             comm.allToAll(sendChunks.data(), recvChunks.data(),
                           k * sizeof(float)));
  c.expectEqual(name("allToAll").c_str(), recvChunks, wantChunks);

  // allGather: rank q's block holds value(q, i).
  std::vector<float> mine(n), gathered(n * p), wantGathered(n * p);
  for (std::size_t i = 0; i < n; ++i)
    mine[i] = value(r, i);
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < n; ++i)
      wantGathered[q * n + i] = value(q, i);
  c.expectOk(name("allGather").c_str(),
             comm.allGather(mine.data(), gathered.data(), n * sizeof(float)));
  c.expectEqual(name("allGather").c_str(), gathered, wantGathered);

  // reduceScatterSum: chunk r of the sum of every rank's p*n buffer, where
  // rank q's element j is value(q, j).
  std::vector<float> full(n * p), chunk(n), wantChunk(n);
  for (std::size_t j = 0; j < n * p; ++j)
    full[j] = value(r, j);
  for (std::size_t i = 0; i < n; ++i)
    for (int q = 0; q < p; ++q)
      wantChunk[i] += value(q, r * n + i);
  c.expectOk(name("reduceScatterSum").c_str(),
             comm.reduceScatterSum(full.data(), chunk.data(), n));
  c.expectEqual(name("reduceScatterSum").c_str(), chunk, wantChunk);

  // broadcast from the last rank: everyone ends with its values.
  const int root = p - 1;
  std::vector<int64_t> bytes(n), wantBytes(n);
  for (std::size_t i = 0; i < n; ++i) {
    bytes[i] = int64_t(r) * 1000000 + int64_t(i);
    wantBytes[i] = int64_t(root) * 1000000 + int64_t(i);
  }
  c.expectOk(name("broadcast").c_str(),
             comm.broadcast(bytes.data(), n * sizeof(int64_t), root));
  c.expectEqual(name("broadcast").c_str(), bytes, wantBytes);

  c.expectOk(name("barrier").c_str(), comm.barrier());

  // Errors come back as values, on every rank alike (no rank blocks).
  c.expectError(name("broadcast to a bad root").c_str(),
                comm.broadcast(bytes.data(), 8, p));
  c.expectError(name("send to a bad peer").c_str(),
                comm.send(data.data(), 4, p + 3, 0));
  c.expectError(name("recv with a negative tag").c_str(),
                comm.recv(data.data(), 4, r == 0 ? p - 1 : 0, -2));
}

/// A ring: even ranks send first, so blocking sends cannot deadlock.
void checkRing(Communicator &comm, Checker &c) {
  const int r = comm.rank(), p = comm.size();
  if (p < 2)
    return;
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  const std::size_t n = 257;
  std::vector<float> out(n), in(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = value(r, i);
    want[i] = value(prev, i);
  }
  const int tag = 7;
  if (r % 2 == 0) {
    c.expectOk("send", comm.send(out.data(), n * sizeof(float), next, tag));
    c.expectOk("recv", comm.recv(in.data(), n * sizeof(float), prev, tag));
  } else {
    c.expectOk("recv", comm.recv(in.data(), n * sizeof(float), prev, tag));
    c.expectOk("send", comm.send(out.data(), n * sizeof(float), next, tag));
  }
  c.expectEqual("send/recv ring", in, want);

  // A length mismatch is reported, not truncated silently: rank 0 sends 8
  // bytes to rank 1, which asks for 16.
  if (r == 0)
    c.expectOk("short send", comm.send(out.data(), 8, 1, 8));
  else if (r == 1)
    c.expectError("recv of a shorter message",
                  comm.recv(in.data(), 16, 0, 8));
  // A longer message than the buffer is MPI's own error (MPI_ERR_TRUNCATE):
  // it must come back through MPI_ERRORS_RETURN instead of aborting.
  if (r == 0)
    c.expectOk("long send", comm.send(out.data(), 16, 1, 9));
  else if (r == 1)
    c.expectError("recv of a longer message", comm.recv(in.data(), 8, 0, 9));
}

int run(Communicator &world) {
  Checker c;
  c.rank = world.rank();
  std::printf("rank %d of %d (%s)\n", world.rank(), world.size(),
              world.backendName().c_str());
  checkCollectives(world, c, "world");
  checkRing(world, c);

  // Sub-groups as a mesh axis would use them: ranks {0,2,..} and {1,3,..},
  // ordered by rank, so sub-rank = rank / 2.
  std::unique_ptr<Communicator> sub;
  c.expectOk("split", world.split(world.rank() % 2, world.rank(), sub));
  if (sub) {
    int wantSize = (world.size() - world.rank() % 2 + 1) / 2;
    if (sub->rank() != world.rank() / 2 || sub->size() != wantSize) {
      std::fprintf(stderr, "rank %d: split: sub-rank %d of %d, expected %d of "
                   "%d\n", c.rank, sub->rank(), sub->size(), world.rank() / 2,
                   wantSize);
      ++c.failures;
    }
    checkCollectives(*sub, c, "split");
  }
  // One group of every rank, keyed in reverse: sub-rank = size - 1 - rank,
  // so on 2 ranks a split group with real traffic is checked too.
  std::unique_ptr<Communicator> reversed;
  c.expectOk("reversed split",
             world.split(0, world.size() - 1 - world.rank(), reversed));
  if (reversed) {
    if (reversed->rank() != world.size() - 1 - world.rank() ||
        reversed->size() != world.size()) {
      std::fprintf(stderr, "rank %d: reversed split: sub-rank %d of %d, "
                   "expected %d of %d\n", c.rank, reversed->rank(),
                   reversed->size(), world.size() - 1 - world.rank(),
                   world.size());
      ++c.failures;
    }
    checkCollectives(*reversed, c, "reversed");
  }
  c.expectOk("final barrier", world.barrier());
  if (c.failures) {
    std::fprintf(stderr, "rank %d: %d failure(s)\n", c.rank, c.failures);
    return 1;
  }
  std::printf("rank %d: all checks passed\n", c.rank);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--local") == 0) {
    std::unique_ptr<Communicator> local = createLocalCommunicator();
    return run(*local);
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: tpcrt-comm-check [--local]\n");
    return 1;
  }
  if (!hasMpiBackend()) {
    std::printf("built without MPI: skipped\n");
    return 77;
  }
  std::unique_ptr<Communicator> world;
  if (Status s = createMpiWorldCommunicator(world); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return run(*world);
}
