//===- Simulator.cpp - replaying per-rank programs in time ----------------===//

#include "tpc/Analysis/Simulator.h"

#include <algorithm>

using namespace mlir::tpc::sim;

namespace {

constexpr double kUnknown = -1;

/// One direction between two ranks: the k-th send pairs with the k-th
/// receive.
struct Channel {
  std::vector<double> sendPosted, recvPosted, done;
  /// The sender's time for each transfer.
  std::vector<double> seconds;

  /// When transfer k is done, or kUnknown while an end of it or of an
  /// earlier transfer (FIFO) is missing.
  double resolve(size_t k) {
    if (k < done.size())
      return done[k];
    if (k >= sendPosted.size() || k >= recvPosted.size())
      return kUnknown;
    for (size_t j = done.size(); j <= k; ++j) {
      double previous = j > 0 ? done[j - 1] : 0;
      done.push_back(std::max({sendPosted[j], recvPosted[j], previous}) +
                     seconds[j]);
    }
    return done[k];
  }
};

const char *kindName(Op::Kind kind) {
  switch (kind) {
  case Op::Busy:
    return "busy";
  case Op::Send:
    return "send";
  case Op::Recv:
    return "recv";
  case Op::SendStart:
    return "send_start";
  case Op::RecvStart:
    return "recv_start";
  case Op::Wait:
    return "wait";
  case Op::Barrier:
    return "barrier";
  case Op::CollectiveStart:
    return "collective_start";
  }
  return "?";
}

} // namespace

std::optional<Result>
mlir::tpc::sim::simulate(const std::vector<std::vector<Op>> &ranks,
                         std::string &error) {
  size_t n = ranks.size();
  Result result;
  result.ranks.resize(n);
  std::vector<size_t> pc(n, 0);
  std::vector<double> now(n, 0);
  // channels[from * n + to]
  std::vector<Channel> channels(n * n);
  // Per rank: per op position of a started transfer, (channel, index).
  std::vector<std::vector<std::pair<size_t, size_t>>> started(n);
  for (size_t r = 0; r < n; ++r)
    started[r].resize(ranks[r].size(), {0, 0});
  // Whether the op at pc has been posted (a blocking transfer waiting for
  // its other end, or a rank at a barrier).
  std::vector<bool> posted(n, false);
  // Per rank: when each of its communication streams is free, each started
  // collective's end (by op position), and the streams' busy seconds.
  // streamFree[r][stream]
  std::vector<std::vector<double>> streamFree(n);
  std::vector<double> streamBusy(n, 0), exposed(n, 0);
  std::vector<std::vector<double>> collectiveEnd(n);
  for (size_t r = 0; r < n; ++r)
    collectiveEnd[r].resize(ranks[r].size(), 0);
  // The rank waits for its stream until `until` (exposed communication).
  auto waitForStream = [&](size_t r, double until) {
    if (until <= now[r])
      return;
    result.ranks[r].busy[Communication] += until - now[r];
    exposed[r] += until - now[r];
    now[r] = until;
  };
  std::vector<size_t> barrierCount(n, 0);
  std::vector<double> barrierArrivals;

  auto validPeer = [&](size_t r, const Op &op) {
    if (op.peer < 0 || static_cast<size_t>(op.peer) >= n ||
        static_cast<size_t>(op.peer) == r) {
      error = "rank " + std::to_string(r) + ", op " +
              std::to_string(pc[r]) + " (" + kindName(op.kind) +
              "): peer " + std::to_string(op.peer) + " is not another rank";
      return false;
    }
    return true;
  };

  size_t finished = 0;
  for (size_t r = 0; r < n; ++r)
    if (ranks[r].empty())
      ++finished;
  while (finished < n) {
    bool progress = false;
    for (size_t r = 0; r < n; ++r) {
      const std::vector<Op> &ops = ranks[r];
      while (pc[r] < ops.size()) {
        const Op &op = ops[pc[r]];
        bool advanced = true;
        switch (op.kind) {
        case Op::Busy:
          now[r] += op.seconds;
          result.ranks[r].busy[op.category] += op.seconds;
          break;
        case Op::Send:
        case Op::SendStart:
        case Op::Recv:
        case Op::RecvStart: {
          if (!validPeer(r, op))
            return std::nullopt;
          bool sends = op.kind == Op::Send || op.kind == Op::SendStart;
          size_t c = sends ? r * n + op.peer : op.peer * n + r;
          Channel &channel = channels[c];
          std::vector<double> &mine =
              sends ? channel.sendPosted : channel.recvPosted;
          size_t k;
          if (!posted[r]) {
            k = mine.size();
            mine.push_back(now[r]);
            if (sends)
              channel.seconds.push_back(op.seconds);
            started[r][pc[r]] = {c, k};
            posted[r] = true;
          } else {
            k = started[r][pc[r]].second;
          }
          if (op.kind == Op::Send || op.kind == Op::Recv) {
            double done = channel.resolve(k);
            if (done == kUnknown) {
              advanced = false;
              break;
            }
            now[r] = std::max(now[r], done);
          }
          posted[r] = false;
          break;
        }
        case Op::CollectiveStart: {
          std::vector<double> &free = streamFree[r];
          if (free.size() <= op.stream)
            free.resize(op.stream + 1, 0);
          double end = std::max(now[r], free[op.stream]) + op.seconds;
          free[op.stream] = end;
          streamBusy[r] += op.seconds;
          collectiveEnd[r][pc[r]] = end;
          break;
        }
        case Op::Wait: {
          Op::Kind target =
              op.transfer >= 0 && static_cast<size_t>(op.transfer) < pc[r]
                  ? ops[op.transfer].kind
                  : Op::Busy;
          if (target == Op::CollectiveStart) {
            waitForStream(r, collectiveEnd[r][op.transfer]);
            break;
          }
          if (target != Op::SendStart && target != Op::RecvStart) {
            error = "rank " + std::to_string(r) + ", op " +
                    std::to_string(pc[r]) + " (wait): op " +
                    std::to_string(op.transfer) +
                    " is not a started transfer or collective before it";
            return std::nullopt;
          }
          auto [c, k] = started[r][op.transfer];
          double done = channels[c].resolve(k);
          if (done == kUnknown) {
            advanced = false;
            break;
          }
          now[r] = std::max(now[r], done);
          break;
        }
        case Op::Barrier: {
          if (!posted[r]) {
            size_t index = barrierCount[r]++;
            if (index >= barrierArrivals.size())
              barrierArrivals.resize(index + 1, 0);
            barrierArrivals[index] = std::max(barrierArrivals[index], now[r]);
            posted[r] = true;
          }
          // Every rank has arrived at this index.
          size_t index = barrierCount[r] - 1;
          bool all = true;
          for (size_t q = 0; q < n && all; ++q)
            all = barrierCount[q] > index;
          if (!all) {
            advanced = false;
            break;
          }
          now[r] = barrierArrivals[index] + op.seconds;
          result.ranks[r].busy[op.category] += op.seconds;
          posted[r] = false;
          break;
        }
        }
        if (!advanced)
          break;
        ++pc[r];
        progress = true;
        if (pc[r] == ops.size()) {
          ++finished;
          for (double free : streamFree[r])
            waitForStream(r, free);
          result.ranks[r].finish = now[r];
        }
      }
    }
    if (!progress && finished < n) {
      error = "the ranks can no longer proceed:";
      for (size_t r = 0; r < n; ++r)
        if (pc[r] < ranks[r].size()) {
          const Op &op = ranks[r][pc[r]];
          error += " rank " + std::to_string(r) + " at op " +
                   std::to_string(pc[r]) + " (" + kindName(op.kind);
          if (op.peer >= 0)
            error += " peer " + std::to_string(op.peer);
          error += ");";
        }
      error.pop_back();
      return std::nullopt;
    }
  }
  for (size_t r = 0; r < n; ++r) {
    RankResult &rank = result.ranks[r];
    result.makespan = std::max(result.makespan, rank.finish);
    // A wait for a stream falls inside that stream's busy time (a
    // collective is issued before any wait on it): the rest of the
    // streams' time overlapped the rank's ops or each other.
    rank.overlappedCommunication = std::max(0.0, streamBusy[r] - exposed[r]);
  }
  return result;
}
