//===- PipelineSchedule.cpp - pipeline schedules and their checker --------===//
//
// The generators build each rank's compute order (the essence of a schedule),
// then placeTransfers adds the sends and receives by simulating the ranks on
// the timing model, so that every rank meets its transfers in one global
// order: with synchronous sends that order is what rules out deadlock. The
// checker assumes nothing of the generators and proves each schedule again.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/PipelineSchedule.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <string_view>
#include <tuple>

using namespace mlir::dist::pipeline;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {
struct KindName {
  ScheduleKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {ScheduleKind::GPipe, "gpipe"},
    {ScheduleKind::OneFOneB, "1f1b"},
    {ScheduleKind::Interleaved1F1B, "interleaved-1f1b"},
    {ScheduleKind::ZBH1, "zb-h1"},
    {ScheduleKind::ZBV, "zb-v"},
};
} // namespace

std::string_view mlir::dist::pipeline::getScheduleName(ScheduleKind kind) {
  for (const KindName &entry : kKindNames)
    if (entry.kind == kind)
      return entry.name;
  return "?";
}

std::optional<ScheduleKind>
mlir::dist::pipeline::parseScheduleKind(std::string_view name) {
  for (const KindName &entry : kKindNames)
    if (entry.name == name)
      return entry.kind;
  return std::nullopt;
}

std::string_view mlir::dist::pipeline::getPlacementName(Placement placement) {
  return placement == Placement::V ? "v" : "round-robin";
}

std::optional<Placement>
mlir::dist::pipeline::parsePlacement(std::string_view name) {
  if (name == "round-robin")
    return Placement::RoundRobin;
  if (name == "v")
    return Placement::V;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Actions and schedules
//===----------------------------------------------------------------------===//

int Action::peerChunk() const {
  switch (kind) {
  case ActionKind::SendAct:
    return chunk + 1;
  case ActionKind::RecvAct:
    return chunk - 1;
  case ActionKind::SendGrad:
    return chunk - 1;
  case ActionKind::RecvGrad:
    return chunk + 1;
  default:
    return chunk;
  }
}

Action Action::counterpart() const {
  static constexpr ActionKind kOther[] = {
      ActionKind::Forward,  ActionKind::Backward, ActionKind::Weight,
      ActionKind::RecvAct,  ActionKind::SendAct,  ActionKind::RecvGrad,
      ActionKind::SendGrad,
  };
  return {kOther[static_cast<int>(kind)], microbatch, peerChunk()};
}

std::string mlir::dist::pipeline::formatAction(const Action &action) {
  static constexpr const char *kNames[] = {
      "F", "B", "W", "SendAct", "RecvAct", "SendGrad", "RecvGrad"};
  std::string text =
      action.fusedWeight ? "BW" : kNames[static_cast<int>(action.kind)];
  text += " mb " + std::to_string(action.microbatch) + " chunk " +
          std::to_string(action.chunk);
  if (action.isSend())
    text += "->" + std::to_string(action.peerChunk());
  else if (action.isRecv())
    text += "<-" + std::to_string(action.peerChunk());
  return text;
}

int Costs::of(const Action &action) const {
  switch (action.kind) {
  case ActionKind::Forward:
    return forward;
  case ActionKind::Backward:
    return action.fusedWeight ? backward + weight : backward;
  case ActionKind::Weight:
    return weight;
  default:
    return 0;
  }
}

int ScheduleShape::rankOf(int chunk) const {
  if (placement == Placement::V && chunk >= ranks)
    return 2 * ranks - 1 - chunk;
  return chunk % ranks;
}

std::vector<int> ScheduleShape::chunksOf(int rank) const {
  std::vector<int> chunks;
  for (int chunk = 0; chunk < numChunks(); ++chunk)
    if (rankOf(chunk) == rank)
      chunks.push_back(chunk);
  return chunks;
}

namespace {

/// A value per (kind, microbatch, chunk) of a schedule's valid actions; the
/// fused flag is not part of the key.
template <typename T> class ActionMap {
public:
  ActionMap(const Schedule &schedule, T init)
      : microbatches(std::max(0, schedule.microbatches)),
        chunks(std::max(0, schedule.numChunks())),
        values(7 * microbatches * chunks, init) {}
  T &operator[](const Action &action) {
    return values[(static_cast<int>(action.kind) * microbatches +
                   action.microbatch) *
                      chunks +
                  action.chunk];
  }

private:
  int microbatches;
  int chunks;
  std::vector<T> values;
};

/// What a compute reads from a neighbouring chunk: the receive when that
/// chunk is on another rank, else the local producer. None for the first
/// chunk's F, the last chunk's B, and W.
std::optional<Action> inputOf(const Schedule &schedule, const Action &action) {
  int from;
  if (action.kind == ActionKind::Forward && action.chunk > 0)
    from = action.chunk - 1;
  else if (action.kind == ActionKind::Backward &&
           action.chunk + 1 < schedule.numChunks())
    from = action.chunk + 1;
  else
    return std::nullopt;
  bool forward = action.kind == ActionKind::Forward;
  if (schedule.rankOf(from) != schedule.rankOf(action.chunk))
    return Action{forward ? ActionKind::RecvAct : ActionKind::RecvGrad,
                  action.microbatch, action.chunk};
  return Action{action.kind, action.microbatch, from};
}

/// The send that hands a compute's output to another rank, if any.
std::optional<Action> sendOf(const Schedule &schedule, const Action &action) {
  Action send{action.kind == ActionKind::Forward ? ActionKind::SendAct
                                                 : ActionKind::SendGrad,
              action.microbatch, action.chunk};
  if (action.kind == ActionKind::Weight || send.peerChunk() < 0 ||
      send.peerChunk() >= schedule.numChunks() ||
      schedule.rankOf(send.peerChunk()) == schedule.rankOf(action.chunk))
    return std::nullopt;
  return send;
}

/// The compute whose output a transfer carries.
Action producerOf(const Action &transfer) {
  Action send = transfer.isSend() ? transfer : transfer.counterpart();
  return {send.kind == ActionKind::SendAct ? ActionKind::Forward
                                           : ActionKind::Backward,
          send.microbatch, send.chunk};
}

/// The order in which transfers that meet at the same time are issued, the
/// same on every rank.
bool transferBefore(const Action &a, const Action &b) {
  Action sendA = a.isSend() ? a : a.counterpart();
  Action sendB = b.isSend() ? b : b.counterpart();
  return std::make_tuple(sendA.kind, sendA.microbatch, sendA.chunk) <
         std::make_tuple(sendB.kind, sendB.microbatch, sendB.chunk);
}

std::string where(int rank, int position, const Action &action) {
  return "rank " + std::to_string(rank) + ", action " +
         std::to_string(position) + " (" + formatAction(action) + ")";
}

} // namespace

//===----------------------------------------------------------------------===//
// Compute orders
//===----------------------------------------------------------------------===//

namespace {

using ComputeOrders = std::vector<std::vector<Action>>;

/// The i-th forward or backward a rank runs: (microbatch, chunk).
using PassAt = std::function<std::pair<int, int>(int index, bool forward)>;

/// The 1F1B shape shared by 1f1b, zb-h1 and interleaved-1f1b: `warmup`
/// forwards, then one forward and one backward until the forwards run out,
/// then the remaining backwards. With weightDelay < 0 every backward carries
/// its W (BW); else the W of backward k runs right after backward
/// k + weightDelay, and the last ones at the end (ZB-H1's deferred W).
std::vector<Action> oneForwardOneBackward(int total, int warmup,
                                          const PassAt &passAt,
                                          int weightDelay) {
  std::vector<Action> order;
  auto forward = [&](int index) {
    auto [microbatch, chunk] = passAt(index, true);
    order.push_back(Action::forward(microbatch, chunk));
  };
  auto weight = [&](int index) {
    auto [microbatch, chunk] = passAt(index, false);
    order.push_back(Action::weight(microbatch, chunk));
  };
  auto backward = [&](int index) {
    auto [microbatch, chunk] = passAt(index, false);
    order.push_back(Action::backward(microbatch, chunk, weightDelay < 0));
    if (weightDelay >= 0 && index >= weightDelay)
      weight(index - weightDelay);
  };
  for (int index = 0; index < warmup; ++index)
    forward(index);
  for (int index = 0; index < total - warmup; ++index) {
    forward(warmup + index);
    backward(index);
  }
  for (int index = total - warmup; index < total; ++index)
    backward(index);
  if (weightDelay > 0)
    for (int index = std::max(0, total - weightDelay); index < total; ++index)
      weight(index);
  return order;
}

ComputeOrders gpipeOrders(int ranks, int microbatches) {
  ComputeOrders orders(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    for (int microbatch = 0; microbatch < microbatches; ++microbatch)
      orders[rank].push_back(Action::forward(microbatch, rank));
    for (int microbatch = microbatches - 1; microbatch >= 0; --microbatch)
      orders[rank].push_back(Action::backward(microbatch, rank, true));
  }
  return orders;
}

/// Megatron's non-interleaved 1F1B: rank r warms up with p-1-r forwards.
/// ZB-H1 keeps that order of F and B and delays rank r's W by r backwards,
/// so every rank holds at most p microbatches between F and W, as rank 0
/// does in 1F1B, and the delayed W fill the cooldown's waits.
ComputeOrders oneFOneBOrders(int ranks, int microbatches, bool splitWeight) {
  ComputeOrders orders(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    auto passAt = [rank](int index, bool) {
      return std::make_pair(index, rank);
    };
    int warmup = std::min(microbatches, ranks - 1 - rank);
    orders[rank] = oneForwardOneBackward(microbatches, warmup, passAt,
                                         splitWeight ? rank : -1);
  }
  return orders;
}

/// Megatron's interleaved 1F1B: the forwards run p microbatches through each
/// local chunk in turn, the backwards likewise from the last chunk; rank r
/// warms up with (p-1-r)*2 + (v-1)*p forwards.
ComputeOrders interleavedOrders(int ranks, int microbatches,
                                int chunksPerRank) {
  ComputeOrders orders(ranks);
  int total = microbatches * chunksPerRank;
  for (int rank = 0; rank < ranks; ++rank) {
    auto passAt = [&, rank](int index, bool forward) {
      int group = ranks * chunksPerRank;
      int local = (index % group) / ranks;
      if (!forward)
        local = chunksPerRank - 1 - local;
      int microbatch = index / group * ranks + index % ranks;
      return std::make_pair(microbatch, local * ranks + rank);
    };
    int warmup =
        std::min(total, (ranks - 1 - rank) * 2 + (chunksPerRank - 1) * ranks);
    orders[rank] = oneForwardOneBackward(total, warmup, passAt, -1);
  }
  return orders;
}

/// ZB-V (Qi et al., section 6) for F = B = W: rank r runs chunk r on the way
/// down and chunk 2p-1-r on the way up. It is laid out for at least 2p-1
/// microbatches; with fewer, the passes of the missing ones are dropped,
/// which keeps every dependency in order.
ComputeOrders zbvOrders(int ranks, int microbatches) {
  ComputeOrders orders(ranks);
  int laidOut = std::max(microbatches, 2 * ranks - 1);
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<Action> &order = orders[rank];
    const int chunks[2] = {rank, 2 * ranks - 1 - rank};
    // Per leg, the next microbatch of each of F, B and W.
    int next[2][3] = {};
    auto emit = [&](int leg, ActionKind kind) {
      int microbatch = next[leg][static_cast<int>(kind)]++;
      if (microbatch < microbatches)
        order.push_back({kind, microbatch, chunks[leg]});
    };
    auto forwards = [&](int leg) { return next[leg][0]; };
    struct Pass {
      int leg;
      ActionKind kind;
    };
    auto repeat = [&](int times, std::initializer_list<Pass> passes) {
      for (int i = 0; i < times; ++i)
        for (Pass pass : passes)
          emit(pass.leg, pass.kind);
    };
    const ActionKind F = ActionKind::Forward, B = ActionKind::Backward,
                     W = ActionKind::Weight;
    // Warm-up: down the V, then both legs, then the first backwards up it.
    repeat(2 * (ranks - rank) - 1, {{0, F}});
    repeat(rank, {{1, F}, {0, F}});
    repeat(ranks - rank, {{1, F}, {1, B}, {1, W}});
    // Steady state: both legs, one F, B and W each.
    while (forwards(1) < forwards(0) || forwards(0) < laidOut) {
      if (forwards(0) < laidOut)
        emit(0, F);
      repeat(1, {{0, B}, {0, W}, {1, F}, {1, B}, {1, W}});
    }
    // Cooldown: the remaining backwards, W deferred into the gaps.
    repeat(rank, {{0, B}, {1, B}});
    repeat(ranks - rank, {{0, B}, {0, W}});
    for (int leg : {1, 0})
      while (next[leg][2] < laidOut)
        emit(leg, W);
  }
  return orders;
}

} // namespace

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

/// Adds the sends and receives to the compute orders by simulating the ranks
/// on `costs`. A transfer meets when its receiver reaches the compute that
/// needs it, its producer has finished and its sender is between two
/// computes: so a send waits where its receiver asks for it rather than
/// stalling its sender right after the producer. A transfer in `early` meets
/// instead at the first instant after its producer at which both ranks are
/// between computes. The transfers meeting at one time go to both ranks'
/// lists in transferBefore order, so all ranks meet their transfers in one
/// global order, and ranks that do cannot deadlock. Returns the transfers
/// whose receiver had to wait for a busy sender.
static std::vector<Action> placeTransfers(Schedule &schedule,
                                          const ComputeOrders &orders,
                                          const Costs &costs,
                                          const std::vector<Action> &early,
                                          std::string &error) {
  int ranks = schedule.ranks;
  schedule.actions.assign(ranks, {});
  std::vector<size_t> next(ranks, 0);
  std::vector<int> freeAt(ranks, 0);
  ActionMap<int> endOf(schedule, -1);
  ActionMap<char> received(schedule, false), stalled(schedule, false);
  std::vector<Action> stalls;
  auto nextCompute = [&](int rank) -> const Action * {
    return next[rank] < orders[rank].size() ? &orders[rank][next[rank]]
                                            : nullptr;
  };
  // The early receives whose producer has been placed, by index into
  // `early`: each pass looks at these, not at every early receive of the
  // step (that made the placement quadratic in the microbatches).
  ActionMap<std::vector<size_t>> earlyOf(schedule, {});
  for (size_t i = 0; i < early.size(); ++i)
    earlyOf[producerOf(early[i])].push_back(i);
  std::vector<size_t> readyEarly;
  auto remoteInput = [&](const Action &compute) -> std::optional<Action> {
    std::optional<Action> input = inputOf(schedule, compute);
    return input && input->isRecv() ? input : std::nullopt;
  };
  for (int time = 0;;) {
    auto isFree = [&](int rank) { return freeAt[rank] <= time; };
    // Whether `recv` can meet now; notes a receiver kept waiting.
    auto canMeet = [&](const Action &recv, bool needed) {
      int end = endOf[producerOf(recv)];
      if (received[recv] || end < 0 || end > time ||
          !isFree(schedule.rankOf(recv.chunk)))
        return false;
      if (isFree(schedule.rankOf(recv.peerChunk())))
        return true;
      if (needed && !stalled[recv]) {
        stalled[recv] = true;
        stalls.push_back(recv);
      }
      return false;
    };
    for (bool progress = true; progress;) {
      progress = false;
      std::vector<Action> meeting;
      for (size_t i : readyEarly)
        if (canMeet(early[i], false))
          meeting.push_back(early[i]);
      for (int rank = 0; rank < ranks; ++rank)
        if (const Action *compute = nextCompute(rank))
          if (std::optional<Action> recv = remoteInput(*compute))
            if (canMeet(*recv, true) &&
                std::find(meeting.begin(), meeting.end(), *recv) ==
                    meeting.end())
              meeting.push_back(*recv);
      std::sort(meeting.begin(), meeting.end(), transferBefore);
      for (const Action &recv : meeting) {
        Action send = recv.counterpart();
        schedule.actions[schedule.rankOf(send.chunk)].push_back(send);
        schedule.actions[schedule.rankOf(recv.chunk)].push_back(recv);
        received[recv] = true;
        progress = true;
      }
      readyEarly.erase(std::remove_if(readyEarly.begin(), readyEarly.end(),
                                      [&](size_t i) {
                                        return received[early[i]];
                                      }),
                       readyEarly.end());
      for (int rank = 0; rank < ranks; ++rank) {
        const Action *compute = nextCompute(rank);
        if (!compute || !isFree(rank))
          continue;
        std::optional<Action> input = inputOf(schedule, *compute);
        if (input && input->isRecv() && !received[*input])
          continue;
        if (input && !input->isRecv() && endOf[*input] < 0) {
          error = "internal: rank " + std::to_string(rank) + " runs " +
                  formatAction(*compute) + " before " + formatAction(*input);
          return {};
        }
        schedule.actions[rank].push_back(*compute);
        freeAt[rank] = time + costs.of(*compute);
        endOf[*compute] = freeAt[rank];
        for (size_t i : earlyOf[*compute])
          readyEarly.push_back(i);
        ++next[rank];
        progress = true;
      }
    }
    int later = -1;
    const Action *waiting = nullptr;
    for (int rank = 0; rank < ranks; ++rank) {
      if (!waiting)
        waiting = nextCompute(rank);
      if (freeAt[rank] > time && (later < 0 || freeAt[rank] < later))
        later = freeAt[rank];
    }
    if (!waiting)
      return stalls;
    if (later < 0) {
      error = "internal: " + formatAction(*waiting) + " waits forever";
      return {};
    }
    time = later;
  }
}

//===----------------------------------------------------------------------===//
// Generation
//===----------------------------------------------------------------------===//

/// Why `options` cannot be generated, or the empty string.
static std::string refusal(const ScheduleOptions &options) {
  std::string name(getScheduleName(options.kind));
  int ranks = options.ranks, microbatches = options.microbatches,
      chunks = options.chunksPerRank;
  if (ranks < 1)
    return "a pipeline needs at least one rank (p = " + std::to_string(ranks) +
           ")";
  if (microbatches < 1)
    return "a pipeline needs at least one microbatch (m = " +
           std::to_string(microbatches) + ")";
  const Costs &costs = options.costs;
  if (costs.forward < 1 || costs.backward < 1 || costs.weight < 0)
    return "the costs must be F >= 1, B >= 1 and W >= 0";
  switch (options.kind) {
  case ScheduleKind::Interleaved1F1B:
    if (chunks < 2)
      return name + " needs at least 2 chunks per rank (v = " +
             std::to_string(chunks) + ")";
    if (microbatches % ranks != 0)
      return name +
             " needs the microbatches to be a multiple of the ranks "
             "(m = " +
             std::to_string(microbatches) + ", p = " + std::to_string(ranks) +
             ")";
    break;
  case ScheduleKind::ZBV:
    if (chunks != 2)
      return name +
             " needs exactly 2 chunks per rank (v = " + std::to_string(chunks) +
             ")";
    if (options.placement != Placement::V)
      return name + " needs the v placement";
    return "";
  default:
    if (chunks != 1)
      return name + " runs one chunk per rank (v = " + std::to_string(chunks) +
             "); interleaved-1f1b and zb-v run more";
    break;
  }
  if (options.placement != Placement::RoundRobin)
    return "the v placement is zb-v's; " + name + " needs round-robin";
  return "";
}

std::optional<Schedule>
mlir::dist::pipeline::generateSchedule(const ScheduleOptions &options,
                                       std::string &error) {
  error = refusal(options);
  if (!error.empty())
    return std::nullopt;
  Schedule schedule;
  static_cast<ScheduleShape &>(schedule) = options;
  int ranks = options.ranks, microbatches = options.microbatches;
  ComputeOrders orders;
  switch (options.kind) {
  case ScheduleKind::GPipe:
    orders = gpipeOrders(ranks, microbatches);
    break;
  case ScheduleKind::OneFOneB:
  case ScheduleKind::ZBH1:
    orders =
        oneFOneBOrders(ranks, microbatches, options.kind == ScheduleKind::ZBH1);
    break;
  case ScheduleKind::Interleaved1F1B:
    orders = interleavedOrders(ranks, microbatches, options.chunksPerRank);
    break;
  case ScheduleKind::ZBV:
    orders = zbvOrders(ranks, microbatches);
    break;
  }
  // Transfers that kept a receiver waiting meet early on the next round,
  // until no new one does.
  std::vector<Action> early;
  for (;;) {
    std::vector<Action> stalls =
        placeTransfers(schedule, orders, options.costs, early, error);
    if (!error.empty())
      return std::nullopt;
    size_t known = early.size();
    for (const Action &recv : stalls)
      if (std::find(early.begin(), early.end(), recv) == early.end())
        early.push_back(recv);
    if (early.size() == known)
      return schedule;
  }
}

//===----------------------------------------------------------------------===//
// Checking
//===----------------------------------------------------------------------===//

namespace {

class Checker {
public:
  Checker(const Schedule &schedule, const Costs &costs)
      : schedule(schedule), costs(costs), positionOf(schedule, -1) {}

  std::optional<ScheduleStats> run(std::string &error);

private:
  /// Visits every action in rank, then list order; the first problem found.
  template <typename Visit> std::string scan(Visit visit) const {
    for (int rank = 0; rank < schedule.ranks; ++rank) {
      const std::vector<Action> &actions = schedule.actions[rank];
      for (int position = 0; position < static_cast<int>(actions.size());
           ++position) {
        std::string problem = visit(rank, position, actions[position]);
        if (!problem.empty())
          return problem;
      }
    }
    return "";
  }
  std::string checkShape() const;
  std::string checkAction(int rank, const Action &action) const;
  std::string indexActions();
  std::string checkComplete();
  std::string checkTransfersPaired();
  std::string simulate(ScheduleStats &stats);
  std::string checkOrder();
  void measurePools(int rank, RankStats &stats) const;

  const Schedule &schedule;
  const Costs &costs;
  /// Where each action stands in its rank's list (-1: nowhere).
  ActionMap<int> positionOf;
};

} // namespace

std::string Checker::checkShape() const {
  if (schedule.ranks < 1 || schedule.microbatches < 1 ||
      schedule.chunksPerRank < 1)
    return "a schedule needs p, m and v of at least 1";
  if (schedule.placement == Placement::V && schedule.chunksPerRank != 2)
    return "the v placement needs exactly 2 chunks per rank";
  if (static_cast<int>(schedule.actions.size()) != schedule.ranks)
    return "the schedule has " + std::to_string(schedule.actions.size()) +
           " action lists for " + std::to_string(schedule.ranks) + " ranks";
  if (costs.forward < 0 || costs.backward < 0 || costs.weight < 0)
    return "the costs must not be negative";
  return "";
}

/// Why `action` cannot stand in `rank`'s list, or the empty string.
std::string Checker::checkAction(int rank, const Action &action) const {
  int chunks = schedule.numChunks();
  if (action.microbatch < 0 || action.microbatch >= schedule.microbatches)
    return "the microbatch is out of range (m = " +
           std::to_string(schedule.microbatches) + ")";
  if (action.chunk < 0 || action.chunk >= chunks)
    return "the chunk is out of range (p * v = " + std::to_string(chunks) + ")";
  if (schedule.rankOf(action.chunk) != rank)
    return "chunk " + std::to_string(action.chunk) + " is on rank " +
           std::to_string(schedule.rankOf(action.chunk));
  if (action.fusedWeight && action.kind != ActionKind::Backward)
    return "only a backward carries its weight gradient";
  if (action.isCompute())
    return "";
  int peer = action.peerChunk();
  if (peer < 0 || peer >= chunks)
    return "chunk " + std::to_string(peer) + " does not exist";
  if (schedule.rankOf(peer) == rank)
    return "chunks " + std::to_string(action.chunk) + " and " +
           std::to_string(peer) +
           " are both on this rank: a local hand-over is not an action";
  return "";
}

/// Records every action's position, refusing misplaced and repeated ones.
std::string Checker::indexActions() {
  return scan([&](int rank, int position, const Action &action) {
    std::string problem = checkAction(rank, action);
    if (!problem.empty())
      return where(rank, position, action) + ": " + problem;
    std::vector<Action> keys = {action};
    if (action.fusedWeight)
      keys.push_back(Action::weight(action.microbatch, action.chunk));
    for (const Action &key : keys) {
      int &slot = positionOf[key];
      if (slot >= 0)
        return where(rank, position, action) + " repeats action " +
               std::to_string(slot) + " (" +
               formatAction(schedule.actions[rank][slot]) + ")";
      slot = position;
    }
    return std::string();
  });
}

std::string Checker::checkComplete() {
  for (int rank = 0; rank < schedule.ranks; ++rank)
    for (int chunk : schedule.chunksOf(rank))
      for (int microbatch = 0; microbatch < schedule.microbatches; ++microbatch)
        for (ActionKind kind :
             {ActionKind::Forward, ActionKind::Backward, ActionKind::Weight}) {
          Action action{kind, microbatch, chunk};
          if (positionOf[action] < 0)
            return formatAction(action) + " is missing on rank " +
                   std::to_string(rank);
        }
  return "";
}

/// Every cross-rank hand-over of every microbatch: one send, one receive.
std::string Checker::checkTransfersPaired() {
  for (int rank = 0; rank < schedule.ranks; ++rank)
    for (int chunk : schedule.chunksOf(rank))
      for (int microbatch = 0; microbatch < schedule.microbatches; ++microbatch)
        for (ActionKind kind : {ActionKind::SendAct, ActionKind::SendGrad}) {
          Action send{kind, microbatch, chunk};
          if (!checkAction(rank, send).empty())
            continue;
          Action recv = send.counterpart();
          int sendAt = positionOf[send], recvAt = positionOf[recv];
          int receiver = schedule.rankOf(recv.chunk);
          if (sendAt >= 0 && recvAt < 0)
            return where(rank, sendAt, send) +
                   " has no matching receive: " + formatAction(recv) +
                   " is missing on rank " + std::to_string(receiver);
          if (sendAt < 0 && recvAt >= 0)
            return where(receiver, recvAt, recv) +
                   " has no matching send: " + formatAction(send) +
                   " is missing on rank " + std::to_string(rank);
          if (sendAt < 0)
            return formatAction(send) + " (rank " + std::to_string(rank) +
                   ") and " + formatAction(recv) + " (rank " +
                   std::to_string(receiver) + ") are missing";
        }
  return "";
}

/// Runs every rank through its list: computes always proceed, a transfer
/// only together with its counterpart at the head of the peer's list, at the
/// later of the two arrival times.
std::string Checker::simulate(ScheduleStats &stats) {
  int ranks = schedule.ranks;
  std::vector<size_t> next(ranks, 0);
  std::vector<int> clock(ranks, 0);
  auto head = [&](int rank) -> const Action * {
    const std::vector<Action> &actions = schedule.actions[rank];
    return next[rank] < actions.size() ? &actions[next[rank]] : nullptr;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int rank = 0; rank < ranks; ++rank) {
      while (const Action *action = head(rank)) {
        if (action->isCompute()) {
          int cost = costs.of(*action);
          int weightStart = action->fusedWeight ? clock[rank] + costs.backward
                            : action->kind == ActionKind::Weight
                                ? clock[rank]
                                : clock[rank] + cost;
          stats.ranks[rank].computes.push_back({static_cast<int>(next[rank]),
                                                clock[rank], clock[rank] + cost,
                                                weightStart});
          stats.ranks[rank].busy += cost;
          clock[rank] += cost;
          ++next[rank];
          progress = true;
          continue;
        }
        int peer = schedule.rankOf(action->peerChunk());
        const Action *other = head(peer);
        if (!other || *other != action->counterpart())
          break;
        clock[rank] = clock[peer] = std::max(clock[rank], clock[peer]);
        ++next[rank];
        ++next[peer];
        progress = true;
      }
    }
  }
  // The first action that never proceeds: the earliest reached, then the
  // lowest rank.
  int stuck = -1;
  for (int rank = 0; rank < ranks; ++rank)
    if (head(rank) && (stuck < 0 || clock[rank] < clock[stuck]))
      stuck = rank;
  if (stuck >= 0) {
    const Action &action = *head(stuck);
    int peer = schedule.rankOf(action.peerChunk());
    // The peer has not passed the counterpart (they are paired): it is
    // blocked at another transfer.
    const Action &other = *head(peer);
    return where(stuck, next[stuck], action) + " never proceeds: rank " +
           std::to_string(peer) + " is blocked at action " +
           std::to_string(next[peer]) + " (" + formatAction(other) + ")";
  }
  for (int rank = 0; rank < ranks; ++rank) {
    stats.ranks[rank].finish = clock[rank];
    stats.makespan = std::max(stats.makespan, clock[rank]);
  }
  return "";
}

/// On each rank, every action after what it depends on there: F before B
/// before W, a compute after its input (the receive, or the local producer),
/// a send after its producer.
std::string Checker::checkOrder() {
  return scan([&](int rank, int position, const Action &action) {
    std::vector<std::pair<Action, const char *>> before;
    if (action.kind == ActionKind::Backward)
      before.push_back(
          {Action::forward(action.microbatch, action.chunk), "its forward"});
    if (action.kind == ActionKind::Weight)
      before.push_back(
          {Action::backward(action.microbatch, action.chunk, false),
           "its backward"});
    if (action.isCompute())
      if (std::optional<Action> input = inputOf(schedule, action))
        before.push_back({*input, "its input"});
    if (action.isSend())
      before.push_back({producerOf(action), "its producer"});
    for (auto &[dependency, role] : before) {
      int at = positionOf[dependency];
      if (at > position)
        return where(rank, position, action) + " comes before " + role +
               ", action " + std::to_string(at) + " (" +
               formatAction(schedule.actions[rank][at]) + ")";
    }
    return std::string();
  });
}

/// The peaks of what a rank holds, in list order.
void Checker::measurePools(int rank, RankStats &stats) const {
  int stash = 0, pendingWeight = 0, inFlight = 0, acts = 0, grads = 0,
      unsent = 0;
  auto add = [](int &pool, int &peak, int delta) {
    pool += delta;
    peak = std::max(peak, pool);
  };
  for (const Action &action : schedule.actions[rank]) {
    std::optional<Action> input = inputOf(schedule, action);
    bool remoteInput = action.isCompute() && input && input->isRecv();
    switch (action.kind) {
    case ActionKind::Forward:
      add(acts, stats.peakReceivedActs, remoteInput ? -1 : 0);
      add(stash, stats.peakStash, 1);
      add(inFlight, stats.peakInFlight, 1);
      break;
    case ActionKind::Backward:
      add(grads, stats.peakReceivedGrads, remoteInput ? -1 : 0);
      add(stash, stats.peakStash, -1);
      add(pendingWeight, stats.peakPendingWeight, action.fusedWeight ? 0 : 1);
      add(inFlight, stats.peakInFlight, action.fusedWeight ? -1 : 0);
      break;
    case ActionKind::Weight:
      add(pendingWeight, stats.peakPendingWeight, -1);
      add(inFlight, stats.peakInFlight, -1);
      break;
    case ActionKind::RecvAct:
      add(acts, stats.peakReceivedActs, 1);
      break;
    case ActionKind::RecvGrad:
      add(grads, stats.peakReceivedGrads, 1);
      break;
    case ActionKind::SendAct:
    case ActionKind::SendGrad:
      add(unsent, stats.peakUnsent, -1);
      break;
    }
    if (action.isCompute() && sendOf(schedule, action))
      add(unsent, stats.peakUnsent, 1);
  }
}

std::optional<ScheduleStats> Checker::run(std::string &error) {
  error = checkShape();
  for (auto step : {&Checker::indexActions, &Checker::checkComplete,
                    &Checker::checkTransfersPaired})
    if (error.empty())
      error = (this->*step)();
  if (!error.empty())
    return std::nullopt;
  ScheduleStats stats;
  stats.ranks.resize(schedule.ranks);
  error = simulate(stats);
  if (error.empty())
    error = checkOrder();
  if (!error.empty())
    return std::nullopt;
  long busy = 0;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    measurePools(rank, stats.ranks[rank]);
    busy += stats.ranks[rank].busy;
  }
  if (stats.makespan > 0)
    stats.bubbleFraction =
        1.0 - static_cast<double>(busy) /
                  (static_cast<double>(schedule.ranks) * stats.makespan);
  return stats;
}

std::optional<ScheduleStats>
mlir::dist::pipeline::check(const Schedule &schedule, std::string &error,
                            const Costs &costs) {
  return Checker(schedule, costs).run(error);
}

//===----------------------------------------------------------------------===//
// Timeline
//===----------------------------------------------------------------------===//

std::string mlir::dist::pipeline::printTimeline(const Schedule &schedule,
                                                const ScheduleStats &stats) {
  char bubble[32];
  std::snprintf(bubble, sizeof(bubble), "%.3f", stats.bubbleFraction);
  std::string text = std::string(getScheduleName(schedule.kind)) +
                     " p=" + std::to_string(schedule.ranks) +
                     " m=" + std::to_string(schedule.microbatches) +
                     " v=" + std::to_string(schedule.chunksPerRank) +
                     " makespan=" + std::to_string(stats.makespan) +
                     " bubble=" + bubble + " peak-stash=";
  for (size_t rank = 0; rank < stats.ranks.size(); ++rank)
    text += (rank ? "," : "") + std::to_string(stats.ranks[rank].peakStash);
  // A schedule that defers W holds a microbatch's W stash past its B.
  bool deferred = false;
  for (const std::vector<Action> &actions : schedule.actions)
    for (const Action &action : actions)
      deferred |= action.kind == ActionKind::Weight;
  if (deferred) {
    text += " peak-in-flight=";
    for (size_t rank = 0; rank < stats.ranks.size(); ++rank)
      text +=
          (rank ? "," : "") + std::to_string(stats.ranks[rank].peakInFlight);
  }
  text += "\n";

  std::vector<std::vector<std::string>> cells(
      stats.ranks.size(), std::vector<std::string>(stats.makespan, "."));
  size_t width = 1;
  for (size_t rank = 0; rank < stats.ranks.size(); ++rank) {
    std::vector<int> local = schedule.chunksOf(rank);
    for (const TimedCompute &timed : stats.ranks[rank].computes) {
      const Action &action = schedule.actions[rank][timed.position];
      auto label = [&](char letter) {
        std::string cell = letter + std::to_string(action.microbatch);
        if (schedule.chunksPerRank > 1)
          cell += "." + std::to_string(std::find(local.begin(), local.end(),
                                                 action.chunk) -
                                       local.begin());
        width = std::max(width, cell.size());
        return cell;
      };
      // A fused BW shows its B slots, then its W slots.
      for (int slot = timed.start; slot < timed.end; ++slot)
        cells[rank][slot] = label(slot >= timed.weightStart
                                      ? 'W'
                                      : "FBW"[static_cast<int>(action.kind)]);
    }
  }
  for (size_t rank = 0; rank < cells.size(); ++rank) {
    text += "rank " + std::to_string(rank) + " |";
    for (const std::string &cell : cells[rank])
      text += " " + cell + std::string(width - cell.size(), ' ');
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    text += "\n";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

std::string mlir::dist::pipeline::printSchedule(const Schedule &schedule) {
  std::string text = "schedule " + std::string(getScheduleName(schedule.kind)) +
                     " ranks " + std::to_string(schedule.ranks) +
                     " microbatches " + std::to_string(schedule.microbatches) +
                     " chunks-per-rank " +
                     std::to_string(schedule.chunksPerRank) + " placement " +
                     std::string(getPlacementName(schedule.placement)) + "\n";
  for (size_t rank = 0; rank < schedule.actions.size(); ++rank) {
    text += "rank " + std::to_string(rank) + ":";
    for (size_t i = 0; i < schedule.actions[rank].size(); ++i)
      text += (i ? "; " : " ") + formatAction(schedule.actions[rank][i]);
    text += "\n";
  }
  return text;
}

namespace {

std::string_view trim(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos)
    return {};
  size_t last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

/// Splits `text` at `separator` (empty pieces kept).
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    pieces.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos)
      return pieces;
    start = end + 1;
  }
}

/// Whitespace-separated words.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> result;
  for (std::string_view piece : split(text, ' '))
    if (!trim(piece).empty())
      result.push_back(trim(piece));
  return result;
}

bool parseInt(std::string_view text, int &value) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  value = std::stoi(std::string(text));
  return true;
}

/// "F mb 3 chunk 1", "SendAct mb 3 chunk 0->1", ... (formatAction's text).
std::optional<Action> parseAction(std::string_view text, std::string &why) {
  std::vector<std::string_view> w = words(text);
  if (w.size() != 5 || w[1] != "mb" || w[3] != "chunk") {
    why = "'" + std::string(text) +
          "' is not '<kind> mb <i> chunk <c>' (a transfer: chunk <c>-><d> or "
          "<c><-<d>)";
    return std::nullopt;
  }
  static const std::pair<const char *, ActionKind> kKinds[] = {
      {"F", ActionKind::Forward},     {"B", ActionKind::Backward},
      {"BW", ActionKind::Backward},   {"W", ActionKind::Weight},
      {"SendAct", ActionKind::SendAct}, {"RecvAct", ActionKind::RecvAct},
      {"SendGrad", ActionKind::SendGrad}, {"RecvGrad", ActionKind::RecvGrad}};
  Action action{ActionKind::Forward, 0, 0};
  bool known = false;
  for (auto [name, kind] : kKinds)
    if (w[0] == name) {
      action.kind = kind;
      action.fusedWeight = w[0] == "BW";
      known = true;
    }
  if (!known) {
    why = "unknown action '" + std::string(w[0]) +
          "' (F, B, BW, W, SendAct, RecvAct, SendGrad, RecvGrad)";
    return std::nullopt;
  }
  std::string_view chunk = w[4], peer;
  std::string_view arrow = action.isSend() ? "->" : action.isRecv() ? "<-" : "";
  if (!arrow.empty()) {
    size_t at = chunk.find(arrow);
    if (at == std::string_view::npos) {
      why = "'" + std::string(text) + "': a " + std::string(w[0]) +
            " names its peer chunk after '" + std::string(arrow) + "'";
      return std::nullopt;
    }
    peer = chunk.substr(at + 2);
    chunk = chunk.substr(0, at);
  }
  int peerChunk = 0;
  if (!parseInt(w[2], action.microbatch) || !parseInt(chunk, action.chunk) ||
      (!arrow.empty() && !parseInt(peer, peerChunk))) {
    why = "'" + std::string(text) + "': a microbatch or chunk is not a "
          "non-negative integer";
    return std::nullopt;
  }
  if (!arrow.empty() && peerChunk != action.peerChunk()) {
    why = "'" + std::string(text) + "': a " + std::string(w[0]) +
          " of chunk " + std::to_string(action.chunk) + " goes to chunk " +
          std::to_string(action.peerChunk()) + ", not " +
          std::to_string(peerChunk);
    return std::nullopt;
  }
  return action;
}

} // namespace

std::optional<Schedule>
mlir::dist::pipeline::parseSchedule(std::string_view text,
                                    std::string &error) {
  Schedule schedule;
  bool shapeSeen = false;
  std::vector<std::string_view> lines = split(text, '\n');
  for (size_t number = 1; number <= lines.size(); ++number) {
    std::string_view line = trim(lines[number - 1]);
    auto fail = [&](const std::string &why) {
      error = "line " + std::to_string(number) + ": " + why;
      return std::nullopt;
    };
    if (line.empty() || line.front() == '#')
      continue;
    if (!shapeSeen) {
      std::vector<std::string_view> w = words(line);
      std::optional<ScheduleKind> kind;
      std::optional<Placement> placement;
      if (w.size() != 10 || w[0] != "schedule" || w[2] != "ranks" ||
          w[4] != "microbatches" || w[6] != "chunks-per-rank" ||
          w[8] != "placement" || !(kind = parseScheduleKind(w[1])) ||
          !parseInt(w[3], schedule.ranks) ||
          !parseInt(w[5], schedule.microbatches) ||
          !parseInt(w[7], schedule.chunksPerRank) ||
          !(placement = parsePlacement(w[9])))
        return fail("expected 'schedule <kind> ranks <p> microbatches <m> "
                    "chunks-per-rank <v> placement round-robin|v'");
      schedule.kind = *kind;
      schedule.placement = *placement;
      schedule.actions.resize(schedule.ranks);
      shapeSeen = true;
      continue;
    }
    size_t colon = line.find(':');
    std::vector<std::string_view> head = words(line.substr(0, colon));
    int rank = 0;
    if (colon == std::string_view::npos || head.size() != 2 ||
        head[0] != "rank" || !parseInt(head[1], rank))
      return fail("expected 'rank <r>: <action>; <action>; ...'");
    if (rank >= schedule.ranks)
      return fail("rank " + std::to_string(rank) + " of a schedule of " +
                  std::to_string(schedule.ranks) + " ranks");
    if (!schedule.actions[rank].empty())
      return fail("rank " + std::to_string(rank) + " is listed twice");
    std::string_view list = trim(line.substr(colon + 1));
    if (list.empty())
      continue;
    for (std::string_view item : split(list, ';')) {
      std::string why;
      std::optional<Action> action = parseAction(trim(item), why);
      if (!action)
        return fail(why);
      schedule.actions[rank].push_back(*action);
    }
  }
  if (!shapeSeen) {
    error = "no 'schedule ...' line";
    return std::nullopt;
  }
  return schedule;
}

int64_t mlir::dist::pipeline::cyclicPoolSlots(
    const std::vector<PoolSpan> &spans) {
  auto count = static_cast<int64_t>(spans.size());
  // The microbatches by their first action; those live when one starts
  // cannot share its slot: their distances are forbidden periods' multiples.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < count; ++i)
    if (spans[i].first >= 0)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return spans[a].first < spans[b].first;
  });
  std::vector<bool> clashes(count, false);
  std::vector<int64_t> live;
  size_t most = order.empty() ? 0 : 1;
  for (int64_t i : order) {
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](int64_t j) {
                                return spans[j].last < spans[i].first;
                              }),
               live.end());
    for (int64_t j : live)
      clashes[i > j ? i - j : j - i] = true;
    live.push_back(i);
    most = std::max(most, live.size());
  }
  for (auto slots = static_cast<int64_t>(std::max<size_t>(most, 1));;
       ++slots) {
    bool fits = true;
    for (int64_t distance = slots; distance < count && fits;
         distance += slots)
      fits = !clashes[distance];
    if (fits)
      return slots;
  }
}

std::vector<mlir::dist::pipeline::ListedAction>
mlir::dist::pipeline::asyncTransferList(const std::vector<Action> &actions) {
  auto n = static_cast<int64_t>(actions.size());
  // A microbatch is in flight from its first action to its last; `live`
  // counts the microbatches in flight at each action.
  std::map<int, std::pair<int64_t, int64_t>> span;
  for (int64_t k = 0; k < n; ++k) {
    auto [it, fresh] = span.try_emplace(actions[k].microbatch, k, k);
    it->second.second = k;
  }
  std::vector<int64_t> live(n + 1, 0);
  for (const auto &entry : span) {
    ++live[entry.second.first];
    --live[entry.second.second + 1];
  }
  for (int64_t k = 1; k <= n; ++k)
    live[k] += live[k - 1];
  int64_t most = *std::max_element(live.begin(), live.end());
  // Whether one more over [from, to] keeps `counts` within `limit`; and
  // counting it.
  auto fits = [](const std::vector<int64_t> &counts, int64_t limit,
                 int64_t from, int64_t to) {
    for (int64_t k = from; k <= to; ++k)
      if (counts[k] + 1 > limit)
        return false;
    return true;
  };
  auto add = [](std::vector<int64_t> &counts, int64_t from, int64_t to) {
    for (int64_t k = from; k <= to; ++k)
      ++counts[k];
  };
  // Keeps the microbatch in flight over [from, to] too, if no action there
  // would then have more than `most` microbatches in flight.
  auto extend = [&](int64_t from, int64_t to) {
    if (!fits(live, most, from, to))
      return false;
    add(live, from, to);
    return true;
  };
  // The first compute of `kind` after k of the transfer at k's microbatch
  // and chunk; -1 if none.
  auto nextCompute = [&](int64_t k, ActionKind kind) {
    for (int64_t j = k + 1; j < n; ++j)
      if (actions[j].kind == kind &&
          actions[j].microbatch == actions[k].microbatch &&
          actions[j].chunk == actions[k].chunk)
        return j;
    return int64_t(-1);
  };
  // A received value lives in the pool of its kind and chunk from its
  // receive to its last reader: its chunk's B (which reads a received
  // activation too: the chunk's input), or F where the rank has no B of
  // it. `poolLive[pool][k]` counts the microbatches live in the pool at
  // action k, `poolMost[pool]` the most at once.
  using Pool = std::pair<ActionKind, int>;
  std::map<Pool, std::vector<int64_t>> poolLive;
  std::map<Pool, int64_t> poolMost;
  for (int64_t k = 0; k < n; ++k) {
    if (!actions[k].isRecv())
      continue;
    int64_t end = nextCompute(k, ActionKind::Backward);
    if (end < 0)
      end = nextCompute(k, ActionKind::Forward);
    std::vector<int64_t> &counts =
        poolLive[{actions[k].kind, actions[k].chunk}];
    counts.resize(n + 1, 0);
    ++counts[k];
    --counts[std::max(end, k) + 1];
  }
  for (auto &[pool, counts] : poolLive) {
    for (int64_t k = 1; k <= n; ++k)
      counts[k] += counts[k - 1];
    poolMost[pool] = *std::max_element(counts.begin(), counts.end());
  }
  // Per compute, the receives posted right before it; the sends waited for
  // after the rank's next compute.
  std::vector<std::vector<int64_t>> postedBefore(n);
  std::vector<bool> waitLate(n, false);
  // A receive that stays keeps the later ones before the same compute in
  // place too: receives start in the list's order.
  int64_t lastCompute = -1, stayedAfter = -1;
  for (int64_t k = 0; k < n; ++k) {
    const Action &action = actions[k];
    auto &[first, last] = span[action.microbatch];
    if (action.isCompute()) {
      lastCompute = k;
    } else if (action.isRecv() && lastCompute >= 0) {
      // Posted early, the received value is in its pool from lastCompute.
      Pool pool{action.kind, action.chunk};
      bool inFlight = false, moves = false;
      if (stayedAfter != lastCompute) {
        inFlight = first <= lastCompute || extend(lastCompute, first - 1);
        bool sendBetween = false;
        for (int64_t j = lastCompute + 1; j < k; ++j)
          sendBetween |= actions[j].isSend();
        moves = inFlight ||
                (!sendBetween &&
                 fits(poolLive[pool], poolMost[pool], lastCompute, k - 1));
      }
      if (moves) {
        add(poolLive[pool], lastCompute, k - 1);
        if (!inFlight)
          add(live, lastCompute, first - 1);
        first = std::min(first, lastCompute);
        postedBefore[lastCompute].push_back(k);
      } else {
        stayedAfter = lastCompute;
      }
    } else if (action.isSend()) {
      int64_t next = k + 1;
      while (next < n && !actions[next].isCompute())
        ++next;
      next = std::min(next, n - 1);
      if (last >= next || extend(last + 1, next)) {
        last = std::max(last, next);
        waitLate[k] = true;
      }
    }
  }
  std::vector<ListedAction> list;
  std::vector<Action> unwaitedSends;
  std::vector<bool> posted(n, false);
  for (int64_t k = 0; k < n; ++k) {
    const Action &action = actions[k];
    if (action.isCompute()) {
      for (int64_t recv : postedBefore[k]) {
        list.push_back({actions[recv], TransferStep::Start});
        posted[recv] = true;
      }
      list.push_back({action});
      for (const Action &send : unwaitedSends)
        list.push_back({send, TransferStep::Wait});
      unwaitedSends.clear();
    } else if (action.isSend()) {
      list.push_back({action, TransferStep::Start});
      if (waitLate[k])
        unwaitedSends.push_back(action);
      else
        list.push_back({action, TransferStep::Wait});
    } else {
      if (!posted[k])
        list.push_back({action, TransferStep::Start});
      list.push_back({action, TransferStep::Wait});
    }
  }
  for (const Action &send : unwaitedSends)
    list.push_back({send, TransferStep::Wait});

  // Each send starts as early as its tensor is made: its start moves up
  // past computes and waits (a split schedule's deferred W, the wait for a
  // receive listed before it: ZB-H1's stage 1 sent B's gradient after both,
  // and the activation it waited for came from a rank that was itself
  // waiting for that gradient), up to the compute or wait of its own
  // microbatch and chunk (what made it) or another start. Starts keep
  // their order, so each NCCL communicator's stream sees its transfers as
  // before.
  for (size_t i = 0; i < list.size(); ++i) {
    const Action send = list[i].action;
    if (!send.isSend() || list[i].step != TransferStep::Start)
      continue;
    size_t j = i;
    while (j > 0) {
      const ListedAction &above = list[j - 1];
      bool own = above.action.microbatch == send.microbatch &&
                 above.action.chunk == send.chunk;
      if (above.step == TransferStep::Start || own ||
          (above.step == TransferStep::Whole && !above.action.isCompute()))
        break;
      --j;
    }
    std::rotate(list.begin() + j, list.begin() + i, list.begin() + i + 1);
  }
  return list;
}
