//===- CommCheck.cpp - tpcrt-comm-check: collectives against local math ---===//
//
// `tpcrt-comm-check --local` checks the one-rank communicator;
// `mpirun -np N tpcrt-comm-check` checks the MPI backend on N ranks. Each rank
// fills its buffers from its rank alone, so every rank can compute what each
// collective must return without communicating; values are small integers
// (exact in f32), so results are compared exactly. Point-to-point messages
// name their sender and position in every word. Exit 0 when all pass,
// 1 on any mismatch or error, 77 (skipped) when MPI is not built in.
//
//===----------------------------------------------------------------------===//

#include "RankChecker.h"
#include "tpcrt/Comm.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tpcrt;

namespace {

/// Every equal() that holds is said on stdout.
struct Checker : test::RankChecker {
  Checker() { sayPasses = true; }
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
  c.ok(name("allReduceSum").c_str(), comm.allReduceSum(data.data(), n));
  c.equal(name("allReduceSum").c_str(), data, want);

  // allReduceMax: the largest value(q, i) with its sign flipped on odd i,
  // so that the maximum comes from the last rank on even i and from rank 0
  // on odd i.
  std::vector<float> maxData(n), wantMax(n);
  for (std::size_t i = 0; i < n; ++i) {
    float sign = i % 2 ? -1.0f : 1.0f;
    maxData[i] = sign * value(r, i);
    wantMax[i] = sign * value(i % 2 ? 0 : p - 1, i);
  }
  c.ok(name("allReduceMax").c_str(), comm.allReduceMax(maxData.data(), n));
  c.equal(name("allReduceMax").c_str(), maxData, wantMax);

  // allReduceSum on i64, with values beyond f32's exact integers.
  std::vector<int64_t> counts(n), wantCounts(n);
  for (std::size_t i = 0; i < n; ++i) {
    counts[i] = (int64_t(1) << 40) * (r + 1) + int64_t(i);
    for (int q = 0; q < p; ++q)
      wantCounts[i] += (int64_t(1) << 40) * (q + 1) + int64_t(i);
  }
  c.ok(name("allReduceSum i64").c_str(), comm.allReduceSum(counts.data(), n));
  c.equal(name("allReduceSum i64").c_str(), counts, wantCounts);

  // allToAll: rank q sends chunk j = {1000 * q + 10 * j + k}; this rank
  // receives in chunk q what rank q sent to it.
  const std::size_t k = 5;
  std::vector<float> sendChunks(k * p), recvChunks(k * p), wantChunks(k * p);
  for (int j = 0; j < p; ++j)
    for (std::size_t e = 0; e < k; ++e) {
      sendChunks[j * k + e] = float(1000 * r + 10 * j + int(e));
      wantChunks[j * k + e] = float(1000 * j + 10 * r + int(e));
    }
  c.ok(name("allToAll").c_str(),
       comm.allToAll(sendChunks.data(), recvChunks.data(), k * sizeof(float)));
  c.equal(name("allToAll").c_str(), recvChunks, wantChunks);

  // allGather: rank q's block holds value(q, i).
  std::vector<float> mine(n), gathered(n * p), wantGathered(n * p);
  for (std::size_t i = 0; i < n; ++i)
    mine[i] = value(r, i);
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < n; ++i)
      wantGathered[q * n + i] = value(q, i);
  c.ok(name("allGather").c_str(),
       comm.allGather(mine.data(), gathered.data(), n * sizeof(float)));
  c.equal(name("allGather").c_str(), gathered, wantGathered);

  // reduceScatterSum: chunk r of the sum of every rank's p*n buffer, where
  // rank q's element j is value(q, j).
  std::vector<float> full(n * p), chunk(n), wantChunk(n);
  for (std::size_t j = 0; j < n * p; ++j)
    full[j] = value(r, j);
  for (std::size_t i = 0; i < n; ++i)
    for (int q = 0; q < p; ++q)
      wantChunk[i] += value(q, r * n + i);
  c.ok(name("reduceScatterSum").c_str(),
       comm.reduceScatterSum(full.data(), chunk.data(), n));
  c.equal(name("reduceScatterSum").c_str(), chunk, wantChunk);

  // broadcast from the last rank: everyone ends with its values.
  const int root = p - 1;
  std::vector<int64_t> bytes(n), wantBytes(n);
  for (std::size_t i = 0; i < n; ++i) {
    bytes[i] = int64_t(r) * 1000000 + int64_t(i);
    wantBytes[i] = int64_t(root) * 1000000 + int64_t(i);
  }
  c.ok(name("broadcast").c_str(),
       comm.broadcast(bytes.data(), n * sizeof(int64_t), root));
  c.equal(name("broadcast").c_str(), bytes, wantBytes);

  c.ok(name("barrier").c_str(), comm.barrier());

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
    c.ok("send", comm.send(out.data(), n * sizeof(float), next, tag));
    c.ok("recv", comm.recv(in.data(), n * sizeof(float), prev, tag));
  } else {
    c.ok("recv", comm.recv(in.data(), n * sizeof(float), prev, tag));
    c.ok("send", comm.send(out.data(), n * sizeof(float), next, tag));
  }
  c.equal("send/recv ring", in, want);

  // A length mismatch is reported, not truncated silently: rank 0 sends 8
  // bytes to rank 1, which asks for 16.
  if (r == 0)
    c.ok("short send", comm.send(out.data(), 8, 1, 8));
  else if (r == 1)
    c.expectError("recv of a shorter message",
                  comm.recv(in.data(), 16, 0, 8));
  // A longer message than the buffer is MPI's own error (MPI_ERR_TRUNCATE):
  // it must come back through MPI_ERRORS_RETURN instead of aborting.
  if (r == 0)
    c.ok("long send", comm.send(out.data(), 16, 1, 9));
  else if (r == 1)
    c.expectError("recv of a longer message", comm.recv(in.data(), 8, 0, 9));
}

/// Rank r's word i of a point-to-point message: distinct for every (r, i)
/// below 256 ranks and 2^24 words, so a shifted, truncated or misrouted
/// message differs.
uint32_t word(int r, std::size_t i) {
  return uint32_t(r) << 24 | uint32_t(i & 0xffffff);
}

std::vector<uint32_t> message(int r, std::size_t n) {
  std::vector<uint32_t> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = word(r, i);
  return out;
}

/// sendRecv, startSend/startRecv and wait: a ring and pairwise exchanges in
/// which every rank sends first with 4 MiB messages (far beyond MPI's eager
/// limit, so blocking sends would be rendezvous and deadlock), and the
/// argument errors. On one rank, only the copy to itself and the errors.
void checkPointToPoint(Communicator &comm, Checker &c, const char *group) {
  const int r = comm.rank(), p = comm.size();
  std::string prefix = std::string(group) + " ";
  auto name = [&](const char *what) { return prefix + what; };
  const std::size_t big = (std::size_t(4) << 20) / sizeof(uint32_t);

  // Waiting on nothing in flight is ok, again and again.
  Request none;
  c.ok(name("wait on a default request"), comm.wait(none));
  c.ok(name("wait on it again"), comm.wait(none));
  Request nones[3];
  c.ok(name("waitAll on default requests"), comm.waitAll(nones, 3));
  c.ok(name("waitAll on no requests"), comm.waitAll(nullptr, 0));

  // sendRecv with this rank as both peers copies.
  {
    std::vector<uint32_t> out = message(r, big), in(big);
    c.ok(name("sendRecv to itself"),
         comm.sendRecv(out.data(), big * 4, r, in.data(), big * 4, r, 3));
    c.equal(name("sendRecv to itself"), in, out);
  }

  // Argument errors come back as values on every rank alike.
  std::vector<uint32_t> small(4), smallIn(4);
  const int other = r == 0 ? p - 1 : 0; // this rank on one rank
  c.expectError(
      name("sendRecv to a bad peer"),
      comm.sendRecv(small.data(), 16, p + 3, smallIn.data(), 16, other, 0));
  c.expectError(
      name("sendRecv from a bad peer"),
      comm.sendRecv(small.data(), 16, other, smallIn.data(), 16, -1, 0));
  c.expectError(
      name("sendRecv with a negative tag"),
      comm.sendRecv(small.data(), 16, other, smallIn.data(), 16, other, -1));
  c.expectError(name("sendRecv to itself of another size"),
                comm.sendRecv(small.data(), 16, r, smallIn.data(), 12, r, 0));
  if (p > 1)
    c.expectError(
        name("sendRecv to itself from another"),
        comm.sendRecv(small.data(), 16, r, smallIn.data(), 16, other, 0));
  Request bad;
  c.expectError(name("startSend to a bad peer"),
                comm.startSend(small.data(), 16, p, 0, bad));
  c.expectError(name("startSend to itself"),
                comm.startSend(small.data(), 16, r, 0, bad));
  c.expectError(name("startRecv from a bad peer"),
                comm.startRecv(smallIn.data(), 16, -2, 0, bad));
  c.expectError(name("startRecv with a negative tag"),
                comm.startRecv(smallIn.data(), 16, other, -5, bad));
  if (bad.inFlight()) {
    std::fprintf(stderr,
                 "rank %d: %s: a failed start left a transfer in "
                 "flight\n",
                 r, group);
    ++c.failures;
  }
  c.ok(name("wait after failed starts"), comm.wait(bad));
  if (p < 2)
    return;

  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  // (a) A ring of sendRecv: to the right, from the left, every rank at once,
  // with a size that depends on the sender.
  {
    const std::size_t sendCount = big + r, recvCount = big + prev;
    std::vector<uint32_t> out = message(r, sendCount), in(recvCount);
    c.ok(name("sendRecv ring"),
         comm.sendRecv(out.data(), sendCount * 4, next, in.data(),
                       recvCount * 4, prev, 11));
    c.equal(name("sendRecv ring"), in, message(prev, recvCount));
    // The other way round, and empty messages.
    std::vector<uint32_t> back(big);
    c.ok(name("sendRecv reverse ring"),
         comm.sendRecv(out.data(), big * 4, prev, back.data(), big * 4, next,
                       12));
    c.equal(name("sendRecv reverse ring"), back, message(next, big));
    c.ok(name("empty sendRecv ring"),
         comm.sendRecv(out.data(), 0, next, in.data(), 0, prev, 13));
  }

  // (b) Pairs {0, 1}, {2, 3}, ...: both start a send to the other first,
  // then a recv, and only then wait (the last rank of an odd group pairs
  // with itself through sendRecv above only).
  const int partner = (r ^ 1) < p ? (r ^ 1) : -1;
  if (partner >= 0) {
    std::vector<uint32_t> out = message(r, big), in(big, 0);
    Request sent, received;
    c.ok(name("startSend to the partner"),
         comm.startSend(out.data(), big * 4, partner, 21, sent));
    c.ok(name("startRecv from the partner"),
         comm.startRecv(in.data(), big * 4, partner, 21, received));
    if (!sent.inFlight() || !received.inFlight()) {
      std::fprintf(stderr,
                   "rank %d: %s: a started transfer is not in "
                   "flight\n",
                   r, group);
      ++c.failures;
    }
    // A request in flight cannot take another transfer.
    c.expectError(name("start on a request in flight"),
                  comm.startRecv(in.data(), big * 4, partner, 21, received));
    // Waited for in the other order than started, one of them after a move.
    Request moved = std::move(received);
    c.ok(name("wait for the recv"), comm.wait(moved));
    c.ok(name("wait for the send"), comm.wait(sent));
    if (sent.inFlight() || moved.inFlight()) {
      std::fprintf(stderr, "rank %d: %s: a waited request is in flight\n", r,
                   group);
      ++c.failures;
    }
    c.equal(name("startSend/startRecv exchange"), in, message(partner, big));
    c.ok(name("wait for the send again"), comm.wait(sent));

    // The waited requests take the next transfers (their state reused, as
    // a device's step does), and so does one prepared before its first.
    std::vector<uint32_t> again = message(r + 7, big), in2(big, 0);
    Request prepared;
    c.ok(name("prepareRequest"), comm.prepareRequest(prepared));
    c.ok(name("startSend on a waited request"),
         comm.startSend(again.data(), big * 4, partner, 22, sent));
    c.ok(name("startRecv on a prepared request"),
         comm.startRecv(in2.data(), big * 4, partner, 22, prepared));
    c.expectError(name("prepareRequest on a request in flight"),
                  comm.prepareRequest(prepared));
    c.ok(name("wait for the reused send"), comm.wait(sent));
    c.ok(name("wait for the prepared recv"), comm.wait(prepared));
    c.equal(name("exchange on reused requests"), in2,
            message(partner + 7, big));
  }

  // A ring of started transfers (recv first this time), waited by waitAll,
  // and one with a started recv against a blocking send.
  {
    std::vector<uint32_t> out = message(r, big), in(big, 0), in2(big, 0);
    Request ring[2];
    c.ok(name("startRecv in a ring"),
         comm.startRecv(in.data(), big * 4, prev, 31, ring[0]));
    c.ok(name("startSend in a ring"),
         comm.startSend(out.data(), big * 4, next, 31, ring[1]));
    c.ok(name("waitAll in a ring"), comm.waitAll(ring, 2));
    c.equal(name("started ring"), in, message(prev, big));

    Request pending;
    c.ok(name("startRecv before a blocking send"),
         comm.startRecv(in2.data(), big * 4, prev, 32, pending));
    c.ok(name("blocking send after a startRecv"),
         comm.send(out.data(), big * 4, next, 32));
    c.ok(name("wait after the blocking send"), comm.wait(pending));
    c.equal(name("started recv with a blocking send"), in2, message(prev, big));
  }

  // A request destroyed in flight waits for its transfer: the data are
  // there once it is gone.
  {
    std::vector<uint32_t> out = message(r, big), in(big, 0);
    {
      Request send, recv;
      c.ok(name("startRecv left to its destructor"),
           comm.startRecv(in.data(), big * 4, prev, 41, recv));
      c.ok(name("startSend left to its destructor"),
           comm.startSend(out.data(), big * 4, next, 41, send));
    }
    c.equal(name("transfers completed by destruction"), in, message(prev, big));
  }
}

/// A received message of another length is an error of wait() or sendRecv
/// (MPI can tell; NCCL cannot). Rank 0 sends 8 bytes to rank 1, which asks
/// for 16.
void checkLengthErrors(Communicator &comm, Checker &c) {
  const int r = comm.rank();
  if (comm.size() < 2 || r > 1)
    return;
  std::vector<uint32_t> out = message(r, 4), in(4);
  if (r == 0) {
    c.ok("short send", comm.send(out.data(), 8, 1, 51));
    c.ok("short sendRecv",
         comm.sendRecv(out.data(), 8, 1, in.data(), 16, 1, 52));
  } else {
    Request request;
    c.ok("startRecv of a shorter message",
         comm.startRecv(in.data(), 16, 0, 51, request));
    c.expectError("wait for a shorter message", comm.wait(request));
    c.expectError("sendRecv of a shorter message",
                  comm.sendRecv(out.data(), 16, 0, in.data(), 16, 0, 52));
  }
}

int run(Communicator &world) {
  Checker c;
  c.rank = world.rank();
  std::printf("rank %d of %d (%s)\n", world.rank(), world.size(),
              world.backendName().c_str());
  checkCollectives(world, c, "world");
  checkRing(world, c);
  checkPointToPoint(world, c, "world");
  checkLengthErrors(world, c);

  // Sub-groups as a mesh axis would use them: ranks {0,2,..} and {1,3,..},
  // ordered by rank, so sub-rank = rank / 2.
  std::unique_ptr<Communicator> sub;
  c.ok("split", world.split(world.rank() % 2, world.rank(), sub));
  if (sub) {
    int wantSize = (world.size() - world.rank() % 2 + 1) / 2;
    if (sub->rank() != world.rank() / 2 || sub->size() != wantSize) {
      std::fprintf(stderr, "rank %d: split: sub-rank %d of %d, expected %d of "
                   "%d\n", c.rank, sub->rank(), sub->size(), world.rank() / 2,
                   wantSize);
      ++c.failures;
    }
    checkCollectives(*sub, c, "split");
    checkPointToPoint(*sub, c, "split");
  }
  // One group of every rank, keyed in reverse: sub-rank = size - 1 - rank,
  // so on 2 ranks a split group with real traffic is checked too.
  std::unique_ptr<Communicator> reversed;
  c.ok("reversed split",
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
    checkPointToPoint(*reversed, c, "reversed");
  }
  c.ok("final barrier", world.barrier());
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
  return test::mpiCheckMain(argc != 1, "tpcrt-comm-check [--local]", run);
}
