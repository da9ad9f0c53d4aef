//===- PipelineScheduleTest.cpp - pipeline schedules and their checker ----===//
//
// Every expected number is derived here from the schedule's formula (stated
// next to it), never copied from the library's output.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/PipelineSchedule.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

using namespace mlir::dist::pipeline;

namespace {

constexpr ScheduleKind kAllKinds[] = {
    ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B,
    ScheduleKind::ZBH1, ScheduleKind::ZBV};

/// The chunks per rank a kind needs at the least.
int chunksFor(ScheduleKind kind) {
  return kind == ScheduleKind::Interleaved1F1B || kind == ScheduleKind::ZBV ? 2
                                                                            : 1;
}

ScheduleOptions optionsFor(ScheduleKind kind, int ranks, int microbatches,
                           int chunksPerRank = 0, Costs costs = Costs()) {
  ScheduleOptions options;
  options.kind = kind;
  options.ranks = ranks;
  options.microbatches = microbatches;
  options.chunksPerRank = chunksPerRank ? chunksPerRank : chunksFor(kind);
  options.placement =
      kind == ScheduleKind::ZBV ? Placement::V : Placement::RoundRobin;
  options.costs = costs;
  return options;
}

std::string describe(const ScheduleOptions &options) {
  return std::string(getScheduleName(options.kind)) +
         " p=" + std::to_string(options.ranks) +
         " m=" + std::to_string(options.microbatches) +
         " v=" + std::to_string(options.chunksPerRank);
}

/// Generates a schedule that must be accepted.
Schedule generate(const ScheduleOptions &options) {
  std::string error;
  std::optional<Schedule> schedule = generateSchedule(options, error);
  if (!schedule) {
    ADD_FAILURE() << describe(options) << ": " << error;
    return Schedule();
  }
  return *schedule;
}

/// Checks a schedule that must pass.
ScheduleStats checked(const Schedule &schedule, const Costs &costs = Costs()) {
  std::string error;
  std::optional<ScheduleStats> stats = check(schedule, error, costs);
  if (!stats) {
    ADD_FAILURE() << getScheduleName(schedule.kind) << ": " << error;
    return ScheduleStats();
  }
  return *stats;
}

ScheduleStats run(const ScheduleOptions &options) {
  return checked(generate(options), options.costs);
}

/// Why the checker refuses a schedule that must fail.
std::string refusalOf(const Schedule &schedule) {
  std::string error;
  if (check(schedule, error))
    ADD_FAILURE() << "the broken schedule passed";
  return error;
}

/// Where `action` stands in `rank`'s list (-1 if nowhere).
int find(const Schedule &schedule, int rank, const Action &action) {
  const std::vector<Action> &actions = schedule.actions[rank];
  auto it = std::find(actions.begin(), actions.end(), action);
  return it == actions.end() ? -1 : it - actions.begin();
}

/// How the checker points at an action: "action k (...)".
std::string at(const Schedule &schedule, int rank, const Action &action) {
  return "action " + std::to_string(find(schedule, rank, action)) + " (" +
         formatAction(action) + ")";
}

/// How the checker names an action: "rank r, action k (...)".
std::string named(const Schedule &schedule, int rank, const Action &action) {
  return "rank " + std::to_string(rank) + ", " + at(schedule, rank, action);
}

Action transfer(ActionKind kind, int microbatch, int chunk) {
  return {kind, microbatch, chunk};
}

std::vector<int> peakStashes(const ScheduleStats &stats) {
  std::vector<int> peaks;
  for (const RankStats &rank : stats.ranks)
    peaks.push_back(rank.peakStash);
  return peaks;
}

//===----------------------------------------------------------------------===//
// Generation
//===----------------------------------------------------------------------===//

TEST(PipelineSchedule, NamesRoundTrip) {
  for (ScheduleKind kind : kAllKinds)
    EXPECT_EQ(parseScheduleKind(getScheduleName(kind)), kind);
  for (Placement placement : {Placement::RoundRobin, Placement::V})
    EXPECT_EQ(parsePlacement(getPlacementName(placement)), placement);
  EXPECT_FALSE(parseScheduleKind("zb-h2"));
  EXPECT_FALSE(parsePlacement("looped"));
}

TEST(PipelineSchedule, RefusesInvalidCombinations) {
  struct Case {
    ScheduleOptions options;
    const char *message;
  };
  ScheduleOptions zbvRoundRobin = optionsFor(ScheduleKind::ZBV, 2, 4);
  zbvRoundRobin.placement = Placement::RoundRobin;
  ScheduleOptions oneFOneBOnV = optionsFor(ScheduleKind::OneFOneB, 2, 4);
  oneFOneBOnV.placement = Placement::V;
  const Case cases[] = {
      {optionsFor(ScheduleKind::Interleaved1F1B, 4, 8, 1),
       "interleaved-1f1b needs at least 2 chunks per rank (v = 1)"},
      {optionsFor(ScheduleKind::Interleaved1F1B, 4, 6, 2),
       "interleaved-1f1b needs the microbatches to be a multiple of the "
       "ranks (m = 6, p = 4)"},
      {optionsFor(ScheduleKind::ZBV, 4, 8, 3),
       "zb-v needs exactly 2 chunks per rank (v = 3)"},
      {zbvRoundRobin, "zb-v needs the v placement"},
      {optionsFor(ScheduleKind::OneFOneB, 4, 8, 2),
       "1f1b runs one chunk per rank (v = 2)"},
      {oneFOneBOnV, "the v placement is zb-v's"},
      {optionsFor(ScheduleKind::GPipe, 0, 8),
       "a pipeline needs at least one rank (p = 0)"},
      {optionsFor(ScheduleKind::ZBH1, 2, 0),
       "a pipeline needs at least one microbatch (m = 0)"},
      {optionsFor(ScheduleKind::ZBH1, 2, 2, 1, Costs{0, 1, 1}),
       "the costs must be F >= 1, B >= 1 and W >= 0"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_FALSE(generateSchedule(c.options, error)) << describe(c.options);
    EXPECT_NE(error.find(c.message), std::string::npos)
        << describe(c.options) << ": " << error;
  }
}

TEST(PipelineSchedule, EveryScheduleOnTwoRanksPasses) {
  for (ScheduleKind kind : kAllKinds)
    for (int microbatches : {1, 2, 4}) {
      ScheduleOptions options = optionsFor(kind, 2, microbatches);
      std::string error;
      // Megatron's interleaving takes the microbatches p at a time.
      if (kind == ScheduleKind::Interleaved1F1B && microbatches % 2) {
        EXPECT_FALSE(generateSchedule(options, error));
        continue;
      }
      ScheduleStats stats = run(options);
      EXPECT_EQ(stats.ranks.size(), 2u) << describe(options);
    }
}

TEST(PipelineSchedule, FourRankSchedulesPass) {
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::ZBV,
                            ScheduleKind::Interleaved1F1B})
    for (int microbatches : {4, 8}) {
      ScheduleStats stats = run(optionsFor(kind, 4, microbatches));
      EXPECT_EQ(stats.ranks.size(), 4u);
    }
}

TEST(PipelineSchedule, SchedulesStayDeadlockFreeUnderOtherCosts) {
  // The transfer order is placed for unit costs; it must stay deadlock-free
  // whatever the costs turn out to be.
  for (ScheduleKind kind : kAllKinds)
    for (Costs costs : {Costs{2, 3, 1}, Costs{1, 2, 0}, Costs{3, 1, 2}})
      checked(generate(optionsFor(kind, 4, 8)), costs);
}

TEST(PipelineSchedule, ReceivesSitRightBeforeTheirConsumers) {
  // With unit costs and these schedules no sender is busy when its receiver
  // asks, so every receive is followed (transfers aside) by the compute that
  // reads it. (Interleaved 1F1B's two-slot BW can keep a sender busy; such a
  // transfer meets earlier, at the first instant both ranks are free.)
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                            ScheduleKind::ZBH1, ScheduleKind::ZBV}) {
    Schedule schedule = generate(optionsFor(kind, 4, 8));
    for (const std::vector<Action> &actions : schedule.actions)
      for (auto it = actions.begin(); it != actions.end(); ++it) {
        if (!it->isRecv())
          continue;
        auto consumer = std::find_if(
            it, actions.end(), [](const Action &a) { return a.isCompute(); });
        ASSERT_NE(consumer, actions.end());
        EXPECT_EQ(consumer->microbatch, it->microbatch);
        EXPECT_EQ(consumer->chunk, it->chunk);
        EXPECT_EQ(consumer->kind, it->kind == ActionKind::RecvAct
                                      ? ActionKind::Forward
                                      : ActionKind::Backward);
      }
  }
}

/// Where each transfer's start and wait are in `listed` (-1: none), and
/// whether each compute is there exactly once.
struct Positions {
  std::map<std::tuple<ActionKind, int, int>, std::pair<int64_t, int64_t>>
      transfer;
  bool computesOnce = true;
};

Positions positionsOf(const std::vector<Action> &actions,
                      const std::vector<ListedAction> &listed) {
  Positions at;
  std::map<std::tuple<ActionKind, int, int, bool>, int> computes;
  for (size_t i = 0; i < listed.size(); ++i) {
    const Action &a = listed[i].action;
    if (a.isCompute()) {
      at.computesOnce &= listed[i].step == TransferStep::Whole;
      ++computes[{a.kind, a.microbatch, a.chunk, a.fusedWeight}];
      continue;
    }
    auto &[start, wait] =
        at.transfer.try_emplace({a.kind, a.microbatch, a.chunk}, -1, -1)
            .first->second;
    (listed[i].step == TransferStep::Start ? start : wait) =
        static_cast<int64_t>(i);
  }
  for (const Action &a : actions)
    if (a.isCompute())
      at.computesOnce &=
          computes[{a.kind, a.microbatch, a.chunk, a.fusedWeight}] == 1;
  return at;
}

/// Calls `check(options, actions, listed)` for every schedule kind on 2 and
/// 4 ranks (2 microbatches a rank): each rank's synchronous list and its
/// asynchronous one.
template <typename Check> void forEachAsyncList(Check check) {
  for (ScheduleKind kind : kAllKinds)
    for (int ranks : {2, 4}) {
      ScheduleOptions options = optionsFor(kind, ranks, 2 * ranks);
      Schedule schedule = generate(options);
      for (const std::vector<Action> &actions : schedule.actions)
        check(options, actions, asyncTransferList(actions));
    }
}

TEST(PipelineSchedule, AsyncListsStartEachTransferBeforeItsWait) {
  // Every compute once, whole; every transfer started once and waited for
  // once after its start; a receive waited for before the compute that
  // reads it; sends started in the synchronous list's order, and so are
  // receives.
  forEachAsyncList([](const ScheduleOptions &options,
                      const std::vector<Action> &actions,
                      const std::vector<ListedAction> &listed) {
    Positions at = positionsOf(actions, listed);
    EXPECT_TRUE(at.computesOnce) << describe(options);
    int64_t transfers = 0, lastSend = -1, lastRecv = -1;
    for (const Action &a : actions) {
      if (a.isCompute())
        continue;
      ++transfers;
      auto [start, wait] = at.transfer.at({a.kind, a.microbatch, a.chunk});
      ASSERT_GE(start, 0) << describe(options);
      EXPECT_GT(wait, start) << describe(options);
      int64_t &last = a.isSend() ? lastSend : lastRecv;
      EXPECT_GT(start, last) << describe(options);
      last = start;
      if (a.isRecv()) {
        ActionKind reader = a.kind == ActionKind::RecvAct
                                ? ActionKind::Forward
                                : ActionKind::Backward;
        for (size_t i = 0; i < listed.size(); ++i)
          if (listed[i].action.kind == reader &&
              listed[i].action.microbatch == a.microbatch &&
              listed[i].action.chunk == a.chunk)
            EXPECT_LT(wait, static_cast<int64_t>(i)) << describe(options);
      }
    }
    EXPECT_EQ(listed.size(), actions.size() + transfers) << describe(options);
  });
}

TEST(PipelineSchedule, SendsStartRightAfterWhatMadeTheirTensor) {
  // A send starts after the compute that made what it sends (F for an
  // activation, B for a gradient), as early as it can: right after what
  // comes before it of its own microbatch and chunk (what made it, or a
  // wait), or right after another start, which it never passes (starts
  // keep their order).
  forEachAsyncList([](const ScheduleOptions &options,
                      const std::vector<Action> &,
                      const std::vector<ListedAction> &listed) {
    for (size_t i = 0; i < listed.size(); ++i) {
      const Action &send = listed[i].action;
      if (!send.isSend() || listed[i].step != TransferStep::Start)
        continue;
      ActionKind made = send.kind == ActionKind::SendGrad ? ActionKind::Backward
                                                          : ActionKind::Forward;
      int64_t producer = -1;
      for (size_t j = 0; j < i; ++j)
        if (listed[j].action.kind == made &&
            listed[j].action.microbatch == send.microbatch &&
            listed[j].action.chunk == send.chunk)
          producer = static_cast<int64_t>(j);
      ASSERT_GE(producer, 0) << describe(options);
      const ListedAction &before = listed[i - 1];
      bool own = before.action.microbatch == send.microbatch &&
                 before.action.chunk == send.chunk;
      EXPECT_TRUE(before.step == TransferStep::Start ||
                  (own && (before.action.isCompute() ||
                           before.step == TransferStep::Wait)))
          << describe(options) << ": " << formatAction(before.action)
          << " right before " << formatAction(send);
    }
  });
}

TEST(PipelineSchedule, ZBH1SendsTheGradientBeforeTheDeferredW) {
  // ZB-H1 on rank r > 0 lists W(k - r) after B(k) and the send of B(k)'s
  // gradient after it: the send starts before that W instead.
  Schedule schedule = generate(optionsFor(ScheduleKind::ZBH1, 4, 8));
  const std::vector<Action> &actions = schedule.actions[1];
  std::vector<ListedAction> listed = asyncTransferList(actions);
  auto computesBetween = [](auto begin, auto end) {
    return std::count_if(begin, end, [](const auto &entry) {
      if constexpr (std::is_same_v<std::decay_t<decltype(entry)>, Action>)
        return entry.isCompute();
      else
        return entry.action.isCompute();
    });
  };
  int moved = 0;
  for (size_t k = 0; k < actions.size(); ++k) {
    if (actions[k].kind != ActionKind::SendGrad)
      continue;
    auto isB = [&](const Action &a) {
      return a.kind == ActionKind::Backward &&
             a.microbatch == actions[k].microbatch;
    };
    auto b = std::find_if(actions.begin(), actions.begin() + k, isB);
    ASSERT_NE(b, actions.begin() + k);
    auto start = std::find_if(listed.begin(), listed.end(), [&](const auto &e) {
      return e.action == actions[k] && e.step == TransferStep::Start;
    });
    auto listedB = std::find_if(listed.begin(), start,
                                [&](const auto &e) { return isB(e.action); });
    ASSERT_NE(listedB, start);
    if (computesBetween(b + 1, actions.begin() + k) > 0 &&
        computesBetween(listedB + 1, start) == 0)
      ++moved;
  }
  EXPECT_GT(moved, 0);
}

TEST(PipelineSchedule, ASendWithNoComputeBeforeItStartsWhereItStands) {
  std::vector<Action> actions = {
      {ActionKind::SendAct, 0, 0},
      Action::forward(1, 0),
      {ActionKind::SendAct, 1, 0},
  };
  std::vector<ListedAction> listed = asyncTransferList(actions);
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed[0].action, actions[0]);
  EXPECT_EQ(listed[0].step, TransferStep::Start);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

TEST(PipelineSchedule, OneFOneBStashIsMinOfMAndPMinusR) {
  // Rank r warms up with p-1-r forwards and runs one more before its first
  // backward: min(m, p - r) microbatches stashed.
  for (int ranks : {2, 4})
    for (int microbatches : {1, 2, 4, 8}) {
      ScheduleStats stats =
          run(optionsFor(ScheduleKind::OneFOneB, ranks, microbatches));
      for (int rank = 0; rank < ranks; ++rank)
        EXPECT_EQ(stats.ranks[rank].peakStash,
                  std::min(microbatches, ranks - rank))
            << "p=" << ranks << " m=" << microbatches << " rank " << rank;
    }
}

TEST(PipelineSchedule, GPipeStashIsM) {
  for (int microbatches : {1, 4, 8}) {
    ScheduleStats stats = run(optionsFor(ScheduleKind::GPipe, 4, microbatches));
    EXPECT_EQ(peakStashes(stats), std::vector<int>(4, microbatches));
  }
}

TEST(PipelineSchedule, InterleavedStashFollowsMegatronsWarmup) {
  // Megatron warms rank r up with (p - r - 1) * 2 + (v - 1) * p forwards,
  // runs one more in the steady state before the first backward, and never
  // more than the m * v forwards there are: min(m v, warm-up + 1).
  for (int chunks : {2, 3})
    for (int microbatches : {4, 8}) {
      const int ranks = 4;
      ScheduleStats stats = run(optionsFor(ScheduleKind::Interleaved1F1B, ranks,
                                           microbatches, chunks));
      for (int rank = 0; rank < ranks; ++rank) {
        int warmup = (ranks - rank - 1) * 2 + (chunks - 1) * ranks;
        EXPECT_EQ(stats.ranks[rank].peakStash,
                  std::min(microbatches * chunks, warmup + 1))
            << "v=" << chunks << " m=" << microbatches << " rank " << rank;
      }
    }
}

TEST(PipelineSchedule, ZBH1KeepsOneFOneBsMemory) {
  for (int ranks : {2, 4})
    for (int microbatches : {1, 2, 4, 8}) {
      ScheduleStats zb =
          run(optionsFor(ScheduleKind::ZBH1, ranks, microbatches));
      ScheduleStats base =
          run(optionsFor(ScheduleKind::OneFOneB, ranks, microbatches));
      // F and B run in 1F1B's order: the same stash on every rank.
      EXPECT_EQ(peakStashes(zb), peakStashes(base));
      int mostInFlight = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        // Rank r runs the W of backward k right after backward k + r.
        EXPECT_EQ(zb.ranks[rank].peakPendingWeight,
                  std::min(microbatches, rank + 1));
        mostInFlight = std::max(mostInFlight, zb.ranks[rank].peakInFlight);
      }
      // Between F and W no rank holds more than 1F1B's rank 0 holds.
      EXPECT_EQ(mostInFlight, base.ranks[0].peakStash);
    }
}

TEST(PipelineSchedule, ZBVStashIsTwoChunksPerRank) {
  // Each chunk is half a 1F1B stage; once m >= 2p - 1 every rank stashes
  // 2p chunk-microbatches, the p stages of 1F1B's rank 0.
  for (int ranks : {2, 4})
    for (int microbatches : {2 * ranks - 1, 2 * ranks, 4 * ranks}) {
      ScheduleStats stats =
          run(optionsFor(ScheduleKind::ZBV, ranks, microbatches));
      EXPECT_EQ(peakStashes(stats), std::vector<int>(ranks, 2 * ranks));
    }
}

//===----------------------------------------------------------------------===//
// Time
//===----------------------------------------------------------------------===//

TEST(PipelineSchedule, OneFOneBAndGPipeBubbleIsClassic) {
  // Backward = B + W after F: m + p - 1 steps of F + B + W each, so the
  // bubble is (p - 1) / (m + p - 1). Both cost models put the backward at
  // twice the forward.
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::GPipe})
    for (Costs costs : {Costs{1, 1, 1}, Costs{1, 2, 0}})
      for (int ranks : {2, 4})
        for (int microbatches : {1, 2, 4, 8}) {
          ScheduleOptions options =
              optionsFor(kind, ranks, microbatches, 1, costs);
          ScheduleStats stats = run(options);
          int step = costs.forward + costs.backward + costs.weight;
          EXPECT_EQ(stats.makespan, (microbatches + ranks - 1) * step)
              << describe(options);
          EXPECT_DOUBLE_EQ(stats.bubbleFraction,
                           double(ranks - 1) / (microbatches + ranks - 1))
              << describe(options);
        }
}

TEST(PipelineSchedule, InterleavedBubbleShrinksByV) {
  // Each rank runs m v chunk passes; the fill and drain still take p - 1
  // chunk steps: (p - 1) / (m v + p - 1).
  for (int chunks : {2, 3})
    for (int microbatches : {4, 8}) {
      const int ranks = 4;
      ScheduleOptions options = optionsFor(ScheduleKind::Interleaved1F1B, ranks,
                                           microbatches, chunks);
      ScheduleStats stats = run(options);
      EXPECT_DOUBLE_EQ(stats.bubbleFraction,
                       double(ranks - 1) / (microbatches * chunks + ranks - 1))
          << describe(options);
    }
}

TEST(PipelineSchedule, ZBH1BubbleIsSmallerThanOneFOneBs) {
  // With F = B = W = 1, ZB-H1's bubble is (p - 1)(F + B - W) = p - 1 slots
  // per rank (Qi et al.) against 1F1B's (p - 1)(F + B + W), once m >= p.
  for (int ranks : {2, 4})
    for (int microbatches : {ranks, 2 * ranks}) {
      ScheduleOptions options =
          optionsFor(ScheduleKind::ZBH1, ranks, microbatches);
      ScheduleStats zb = run(options);
      ScheduleStats base =
          run(optionsFor(ScheduleKind::OneFOneB, ranks, microbatches));
      EXPECT_LT(zb.bubbleFraction, base.bubbleFraction) << describe(options);
      EXPECT_EQ(zb.makespan, 3 * microbatches + ranks - 1) << describe(options);
    }
}

TEST(PipelineSchedule, ZBVLeavesNoBubbleOnceFilled) {
  // With F = B = W = 1 and m >= 2p - 1, the last rank starts after the p - 1
  // forwards before it and then never idles through its 2 chunks * 3 passes
  // per microbatch.
  for (int ranks : {2, 4})
    for (int microbatches : {2 * ranks - 1, 2 * ranks, 4 * ranks}) {
      ScheduleOptions options =
          optionsFor(ScheduleKind::ZBV, ranks, microbatches);
      ScheduleStats stats = run(options);
      EXPECT_EQ(stats.makespan, 6 * microbatches + ranks - 1)
          << describe(options);
    }
}

//===----------------------------------------------------------------------===//
// Broken schedules
//===----------------------------------------------------------------------===//

/// A unit-cost 1F1B on two ranks: rank 0 holds chunk 0, rank 1 chunk 1.
Schedule twoRankOneFOneB() {
  return generate(optionsFor(ScheduleKind::OneFOneB, 2, 4));
}

void swapActions(Schedule &schedule, int rank, const Action &a,
                 const Action &b) {
  std::vector<Action> &actions = schedule.actions[rank];
  std::swap(actions[find(schedule, rank, a)], actions[find(schedule, rank, b)]);
}

void eraseAction(Schedule &schedule, int rank, const Action &action) {
  std::vector<Action> &actions = schedule.actions[rank];
  actions.erase(actions.begin() + find(schedule, rank, action));
}

/// The checker's report of `action` on `rank` standing before `dependency`.
std::string outOfOrder(const Schedule &schedule, int rank, const Action &action,
                       const char *role, const Action &dependency) {
  return named(schedule, rank, action) + " comes before " + role + ", " +
         at(schedule, rank, dependency);
}

/// The checker's report of `stuck` on rank 0 waiting for rank 1, which is
/// blocked at `blocker`.
std::string deadlock(const Schedule &schedule, const Action &stuck,
                     const Action &blocker) {
  return named(schedule, 0, stuck) + " never proceeds: rank 1 is blocked at " +
         at(schedule, 1, blocker);
}

TEST(PipelineScheduleBroken, SwappedReceivesDeadlock) {
  Schedule schedule = twoRankOneFOneB();
  Action recv1 = transfer(ActionKind::RecvAct, 1, 1);
  Action recv2 = transfer(ActionKind::RecvAct, 2, 1);
  swapActions(schedule, 1, recv1, recv2);
  // Rank 0 reaches SendAct mb 1 right after its second forward, before rank
  // 1 (after F and BW of mb 0) reaches the receive of mb 2: rank 0's send is
  // the first action that never proceeds.
  EXPECT_EQ(refusalOf(schedule),
            deadlock(schedule, transfer(ActionKind::SendAct, 1, 0), recv2));
}

TEST(PipelineScheduleBroken, BothRanksSendingFirstDeadlock) {
  // In the steady state rank 0 sends mb 2's activation, then receives mb 1's
  // gradient; rank 1 receives, then sends them. Rank 1 sending first makes
  // both ranks send first: with synchronous sends neither proceeds.
  Schedule schedule = twoRankOneFOneB();
  Action recvAct = transfer(ActionKind::RecvAct, 2, 1);
  Action sendGrad = transfer(ActionKind::SendGrad, 1, 1);
  ASSERT_EQ(find(schedule, 1, sendGrad), find(schedule, 1, recvAct) + 1);
  swapActions(schedule, 1, recvAct, sendGrad);
  // Both ranks get there at slot 7 (rank 0 after F0 F1, the wait for mb 0's
  // gradient until 4, BW0 and F2; rank 1 after F0 BW0 F1 BW1 from slot 1):
  // at a tie the lower rank is named first.
  EXPECT_EQ(refusalOf(schedule),
            deadlock(schedule, transfer(ActionKind::SendAct, 2, 0), sendGrad));
}

TEST(PipelineScheduleBroken, DroppedWeightIsMissing) {
  Schedule schedule = generate(optionsFor(ScheduleKind::ZBH1, 2, 4));
  Action weight = Action::weight(2, 1);
  eraseAction(schedule, 1, weight);
  EXPECT_EQ(refusalOf(schedule),
            formatAction(weight) + " is missing on rank 1");
}

TEST(PipelineScheduleBroken, BackwardBeforeItsForward) {
  Schedule schedule = twoRankOneFOneB();
  Action forward = Action::forward(3, 0);
  Action backward = Action::backward(3, 0, true);
  eraseAction(schedule, 0, backward);
  std::vector<Action> &actions = schedule.actions[0];
  actions.insert(actions.begin() + find(schedule, 0, forward), backward);
  EXPECT_EQ(refusalOf(schedule),
            outOfOrder(schedule, 0, backward, "its forward", forward));
}

TEST(PipelineScheduleBroken, ReceiveAfterItsConsumer) {
  // Moving a receive past the forward that reads it keeps the transfer
  // order, so nothing deadlocks: the order check names the forward.
  Schedule schedule = twoRankOneFOneB();
  Action recv = transfer(ActionKind::RecvAct, 0, 1);
  Action forward = Action::forward(0, 1);
  swapActions(schedule, 1, recv, forward);
  EXPECT_EQ(refusalOf(schedule),
            outOfOrder(schedule, 1, forward, "its input", recv));
}

TEST(PipelineScheduleBroken, SendWithoutReceive) {
  Schedule schedule = twoRankOneFOneB();
  Action send = transfer(ActionKind::SendAct, 3, 0);
  Action recv = send.counterpart();
  eraseAction(schedule, 1, recv);
  EXPECT_EQ(refusalOf(schedule),
            named(schedule, 0, send) + " has no matching receive: " +
                formatAction(recv) + " is missing on rank 1");
}

TEST(PipelineScheduleBroken, RepeatedForward) {
  Schedule schedule = twoRankOneFOneB();
  Action forward = Action::forward(1, 0);
  int first = find(schedule, 0, forward);
  schedule.actions[0].push_back(forward);
  int last = schedule.actions[0].size() - 1;
  EXPECT_EQ(refusalOf(schedule),
            "rank 0, action " + std::to_string(last) + " (" +
                formatAction(forward) + ") repeats action " +
                std::to_string(first) + " (" + formatAction(forward) + ")");
}

TEST(PipelineScheduleBroken, ComputeOnTheWrongRank) {
  Schedule schedule = twoRankOneFOneB();
  Action stray = Action::weight(0, 1);
  schedule.actions[0].insert(schedule.actions[0].begin(), stray);
  EXPECT_EQ(refusalOf(schedule),
            named(schedule, 0, stray) + ": chunk 1 is on rank 1");
}

TEST(PipelineScheduleBroken, LocalHandOverIsNotAnAction) {
  // ZB-V on two ranks puts chunks 1 and 2 on rank 1.
  Schedule schedule = generate(optionsFor(ScheduleKind::ZBV, 2, 4));
  Action local = transfer(ActionKind::SendAct, 0, 1);
  schedule.actions[1].push_back(local);
  EXPECT_EQ(refusalOf(schedule),
            named(schedule, 1, local) +
                ": chunks 1 and 2 are both on this rank: a local hand-over "
                "is not an action");
}

//===----------------------------------------------------------------------===//
// Timeline
//===----------------------------------------------------------------------===//

std::vector<std::vector<std::string>> cellsOf(const std::string &timeline) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(timeline);
  std::string line;
  std::getline(lines, line); // the header
  while (std::getline(lines, line)) {
    std::istringstream words(line.substr(line.find('|') + 1));
    rows.emplace_back();
    for (std::string cell; words >> cell;)
      rows.back().push_back(cell);
  }
  return rows;
}

TEST(PipelineTimeline, OneRowPerRankOneCellPerSlot) {
  const int ranks = 2, microbatches = 3;
  Schedule schedule =
      generate(optionsFor(ScheduleKind::OneFOneB, ranks, microbatches));
  ScheduleStats stats = checked(schedule);
  std::string timeline = printTimeline(schedule, stats);
  // 1F1B with unit costs: (m + p - 1) * 3 slots, bubble (p - 1) /
  // (m + p - 1), stash min(m, p - r).
  int makespan = (microbatches + ranks - 1) * 3;
  char bubble[16];
  std::snprintf(bubble, sizeof(bubble), "%.3f",
                double(ranks - 1) / (microbatches + ranks - 1));
  EXPECT_EQ(timeline.substr(0, timeline.find('\n')),
            "1f1b p=2 m=3 v=1 makespan=" + std::to_string(makespan) +
                " bubble=" + bubble +
                " peak-stash=" + std::to_string(std::min(microbatches, ranks)) +
                "," + std::to_string(std::min(microbatches, ranks - 1)));
  std::vector<std::vector<std::string>> rows = cellsOf(timeline);
  ASSERT_EQ(rows.size(), size_t(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    const std::vector<std::string> &row = rows[rank];
    ASSERT_EQ(row.size(), size_t(makespan));
    // Rank r's first forward waits for the r forwards before it.
    EXPECT_EQ(row[rank], "F0");
    for (const char *letter : {"F", "B", "W"})
      EXPECT_EQ(std::count_if(row.begin(), row.end(),
                              [&](const std::string &cell) {
                                return cell.rfind(letter, 0) == 0;
                              }),
                microbatches)
          << "rank " << rank << " " << letter;
    EXPECT_EQ(std::count(row.begin(), row.end(), "."),
              makespan - 3 * microbatches);
  }
}

TEST(PipelineTimeline, ChunkSuffixWhenSeveralChunks) {
  // ZB-V's rank 0 runs chunk 0 (local 0) and chunk 2p-1 (local 1).
  Schedule schedule = generate(optionsFor(ScheduleKind::ZBV, 2, 4));
  std::vector<std::vector<std::string>> rows =
      cellsOf(printTimeline(schedule, checked(schedule)));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "F0.0");
  EXPECT_NE(std::find(rows[0].begin(), rows[0].end(), "W3.1"), rows[0].end());
}

} // namespace

TEST(PipelineSchedule, TextRoundTrips) {
  // printSchedule's text reads back as the same schedule, for every kind.
  for (ScheduleKind kind : kAllKinds)
    for (int ranks : {2, 4}) {
      ScheduleOptions options = optionsFor(kind, ranks, 2 * ranks);
      std::string error;
      std::optional<Schedule> built = generateSchedule(options, error);
      ASSERT_TRUE(built) << describe(options) << ": " << error;
      std::string text = printSchedule(*built);
      std::optional<Schedule> read = parseSchedule(text, error);
      ASSERT_TRUE(read) << describe(options) << ": " << error;
      EXPECT_EQ(read->kind, built->kind);
      EXPECT_EQ(read->ranks, built->ranks);
      EXPECT_EQ(read->microbatches, built->microbatches);
      EXPECT_EQ(read->chunksPerRank, built->chunksPerRank);
      EXPECT_EQ(read->placement, built->placement);
      EXPECT_EQ(read->actions, built->actions) << describe(options);
    }
}

TEST(PipelineSchedule, TextRefusesWhatItCannotRead) {
  std::string error;
  auto refuses = [&](std::string_view text, std::string_view expected) {
    EXPECT_FALSE(parseSchedule(text, error)) << text;
    EXPECT_EQ(error, expected) << text;
  };
  const char *shape = "schedule 1f1b ranks 2 microbatches 1 chunks-per-rank "
                      "1 placement round-robin\n";
  refuses("", "no 'schedule ...' line");
  refuses("schedule 1f1b ranks two\n",
          "line 1: expected 'schedule <kind> ranks <p> microbatches <m> "
          "chunks-per-rank <v> placement round-robin|v'");
  refuses(std::string(shape) + "rank 2: F mb 0 chunk 0\n",
          "line 2: rank 2 of a schedule of 2 ranks");
  refuses(std::string(shape) + "rank 0: F mb 0 chunk 0\nrank 0: W mb 0 chunk 0\n",
          "line 3: rank 0 is listed twice");
  refuses(std::string(shape) + "rank 0: X mb 0 chunk 0\n",
          "line 2: unknown action 'X' (F, B, BW, W, SendAct, RecvAct, "
          "SendGrad, RecvGrad)");
  refuses(std::string(shape) + "rank 0: SendAct mb 0 chunk 0\n",
          "line 2: 'SendAct mb 0 chunk 0': a SendAct names its peer chunk "
          "after '->'");
  refuses(std::string(shape) + "rank 0: F mb -1 chunk 0\n",
          "line 2: 'F mb -1 chunk 0': a microbatch or chunk is not a "
          "non-negative integer");
}

//===----------------------------------------------------------------------===//
// Pool slots
//===----------------------------------------------------------------------===//

namespace {

/// The least S for which microbatches i and j with i mod S = j mod S are
/// never live together, by trying every S and every pair.
int64_t bruteForceSlots(const std::vector<PoolSpan> &spans) {
  auto count = static_cast<int64_t>(spans.size());
  for (int64_t slots = 1;; ++slots) {
    bool fits = true;
    for (int64_t i = 0; i < count && fits; ++i)
      for (int64_t j = i + slots; j < count && fits; j += slots)
        if (spans[i].first >= 0 && spans[j].first >= 0)
          fits = spans[i].last < spans[j].first || spans[j].last < spans[i].first;
    if (fits)
      return slots;
  }
}

/// Per microbatch, its span in `rank`'s list from the first action of a
/// kind in `from` to the last of a kind in `to` on `chunk`.
std::vector<PoolSpan> spansOf(const Schedule &schedule, int rank, int chunk,
                              ActionKind from, ActionKind to) {
  std::vector<PoolSpan> spans(schedule.microbatches);
  const std::vector<Action> &actions = schedule.actions[rank];
  for (size_t k = 0; k < actions.size(); ++k) {
    const Action &action = actions[k];
    if (action.chunk != chunk)
      continue;
    PoolSpan &span = spans[action.microbatch];
    if (action.kind == from && span.first < 0)
      span.first = static_cast<int64_t>(k);
    if (action.kind == to)
      span.last = static_cast<int64_t>(k);
  }
  return spans;
}

} // namespace

TEST(PipelinePoolSlots, OneFOneBStashHoldsMinOfMAndPMinusI) {
  // 1F1B stage i (0-based) holds min(m, p - i) forward stashes at once.
  for (int ranks : {2, 4})
    for (int microbatches : {1, 2, 4, 8}) {
      Schedule schedule =
          generate(optionsFor(ScheduleKind::OneFOneB, ranks, microbatches));
      for (int rank = 0; rank < ranks; ++rank) {
        std::vector<PoolSpan> spans = spansOf(
            schedule, rank, rank, ActionKind::Forward, ActionKind::Backward);
        EXPECT_EQ(cyclicPoolSlots(spans),
                  std::min(microbatches, ranks - rank))
            << "p=" << ranks << " m=" << microbatches << " rank " << rank;
      }
    }
}

TEST(PipelinePoolSlots, GeneratedSchedulesNeedNoMoreThanTheMostLive) {
  // Every function runs its microbatches in order, so the live ones are
  // consecutive and the cyclic slots are the fewest possible.
  for (ScheduleKind kind : kAllKinds)
    for (int ranks : {2, 4})
      for (int microbatches : {4, 8}) {
        Schedule schedule = generate(optionsFor(kind, ranks, microbatches));
        for (int rank = 0; rank < ranks; ++rank)
          for (const Action &action : schedule.actions[rank]) {
            if (action.kind != ActionKind::Forward || action.microbatch != 0)
              continue;
            for (ActionKind to : {ActionKind::Backward, ActionKind::Weight}) {
              std::vector<PoolSpan> spans = spansOf(
                  schedule, rank, action.chunk, ActionKind::Forward, to);
              EXPECT_EQ(cyclicPoolSlots(spans), bruteForceSlots(spans))
                  << describe(optionsFor(kind, ranks, microbatches))
                  << " rank " << rank << " chunk " << action.chunk;
            }
          }
      }
}

TEST(PipelinePoolSlots, AnySpansGetTheLeastSafePeriod) {
  // Random spans (live microbatches not consecutive): against every S.
  unsigned state = 12345;
  auto next = [&](unsigned bound) {
    state = state * 1103515245u + 12345u;
    return (state >> 16) % bound;
  };
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<PoolSpan> spans(1 + next(12));
    for (PoolSpan &span : spans) {
      if (next(5) == 0)
        continue; // untouched
      span.first = next(40);
      span.last = span.first + next(10);
    }
    EXPECT_EQ(cyclicPoolSlots(spans), bruteForceSlots(spans))
        << "trial " << trial;
  }
  EXPECT_EQ(cyclicPoolSlots({}), 1);
}
