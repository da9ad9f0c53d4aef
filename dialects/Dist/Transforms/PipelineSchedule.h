//===- PipelineSchedule.h - per-rank pipeline schedules, checked -*- C++
//-*-===//
//
// Pipeline parallelism (issue 13) runs every pipeline rank through an ordered
// list of actions: forward (F), input-gradient backward (B), weight-gradient
// backward (W) and the point-to-point transfers that hand activations and
// gradients between ranks. This library generates those lists for GPipe,
// 1F1B, interleaved 1F1B, ZB-H1 and ZB-V, and checks a schedule statically
// under synchronous send semantics before anything runs: it finds deadlocks,
// missing or repeated work and order errors, and measures memory in flight,
// makespan and bubble (docs/design/pipeline-schedules.md).
//
// The standard library only: the runtime and tools may use it without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_DIST_TRANSFORMS_PIPELINESCHEDULE_H
#define DIALECTS_DIST_TRANSFORMS_PIPELINESCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::dist::pipeline {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved1F1B, ZBH1, ZBV };

/// Which rank holds which chunk (virtual stage).
enum class Placement {
  /// Chunk c on rank c mod p (Megatron's interleaving; v = 1 is the plain
  /// one-stage-per-rank pipeline).
  RoundRobin,
  /// ZB-V: v = 2, rank r holds chunks r and 2p-1-r.
  V,
};

/// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v".
std::string_view getScheduleName(ScheduleKind kind);
std::optional<ScheduleKind> parseScheduleKind(std::string_view name);
/// "round-robin", "v".
std::string_view getPlacementName(Placement placement);
std::optional<Placement> parsePlacement(std::string_view name);

enum class ActionKind : uint8_t {
  Forward,
  /// The input gradient; with Action::fusedWeight also the weight gradient.
  Backward,
  Weight,
  /// The forward output of a chunk, to the next chunk.
  SendAct,
  RecvAct,
  /// The input gradient of a chunk, to the previous chunk.
  SendGrad,
  RecvGrad,
};

struct Action {
  ActionKind kind;
  int microbatch;
  /// The chunk on this action's rank: the one computed, the one whose output
  /// a send hands on, or the one a receive feeds. The other end of a
  /// transfer is peerChunk().
  int chunk;
  /// Backward only: W runs right after B as one action ("BW"), so the
  /// gradient leaves after both (1F1B, GPipe, interleaved 1F1B).
  bool fusedWeight = false;

  static Action forward(int microbatch, int chunk) {
    return {ActionKind::Forward, microbatch, chunk};
  }
  static Action backward(int microbatch, int chunk, bool fusedWeight) {
    return {ActionKind::Backward, microbatch, chunk, fusedWeight};
  }
  static Action weight(int microbatch, int chunk) {
    return {ActionKind::Weight, microbatch, chunk};
  }

  bool isCompute() const { return kind <= ActionKind::Weight; }
  bool isSend() const {
    return kind == ActionKind::SendAct || kind == ActionKind::SendGrad;
  }
  bool isRecv() const {
    return kind == ActionKind::RecvAct || kind == ActionKind::RecvGrad;
  }
  /// The chunk at the other end of a transfer.
  int peerChunk() const;
  /// The other end of a transfer: SendAct(i, c) <-> RecvAct(i, c + 1),
  /// SendGrad(i, c) <-> RecvGrad(i, c - 1).
  Action counterpart() const;

  bool operator==(const Action &other) const {
    return kind == other.kind && microbatch == other.microbatch &&
           chunk == other.chunk && fusedWeight == other.fusedWeight;
  }
  bool operator!=(const Action &other) const { return !(*this == other); }
};

/// "F mb 3 chunk 1", "BW mb 3 chunk 1", "RecvAct mb 3 chunk 1<-0",
/// "SendGrad mb 3 chunk 1->0".
std::string formatAction(const Action &action);

/// The timing model, in slots: a compute takes its cost, a fused BW takes
/// backward + weight, a transfer takes no time.
struct Costs {
  int forward = 1;
  int backward = 1;
  int weight = 1;

  int of(const Action &action) const;
};

/// What a schedule is for: the kind, p, m, v and the chunk placement.
struct ScheduleShape {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int ranks = 1;
  int microbatches = 1;
  /// v: chunks (virtual stages) per rank.
  int chunksPerRank = 1;
  Placement placement = Placement::RoundRobin;

  int numChunks() const { return ranks * chunksPerRank; }
  int rankOf(int chunk) const;
  /// The chunks of `rank`, ascending; a chunk's index here is its local
  /// index (the timeline's chunk suffix).
  std::vector<int> chunksOf(int rank) const;
};

struct Schedule : ScheduleShape {
  /// Per rank, the actions in the order the rank issues them.
  std::vector<std::vector<Action>> actions;
};

struct ScheduleOptions : ScheduleShape {
  /// The timing model the transfers are placed for (see the design page).
  Costs costs;
};

/// Builds the per-rank action lists, transfers included, or returns nullopt
/// with `error` saying which input is refused. Fewer microbatches than ranks
/// is accepted for gpipe, 1f1b and zb-h1 (the caller may warn).
std::optional<Schedule> generateSchedule(const ScheduleOptions &options,
                                         std::string &error);

/// A compute action of one rank placed on the timing model.
struct TimedCompute {
  /// The action's position in its rank's list.
  int position;
  int start;
  int end;
  /// Where a fused BW's W begins (the W slots of the timeline); `start` for
  /// a W, `end` for F and B.
  int weightStart;
};

/// Per rank: peaks of what is in flight, counted in (microbatch, chunk)
/// units and in list order, and the rank's time.
struct RankStats {
  /// Forward done, backward not yet: the stash B reads.
  int peakStash = 0;
  /// Backward done, weight gradient not yet (split schedules only).
  int peakPendingWeight = 0;
  /// Forward done, weight gradient not yet: every activation of the
  /// microbatch may still be live (ZB-H1's memory measure).
  int peakInFlight = 0;
  /// Received activations not yet consumed by their forward.
  int peakReceivedActs = 0;
  /// Received gradients not yet consumed by their backward.
  int peakReceivedGrads = 0;
  /// Outputs produced whose send has not completed: a buffer in flight.
  int peakUnsent = 0;
  /// Slots spent computing.
  int busy = 0;
  /// When the rank's last action completes.
  int finish = 0;
  std::vector<TimedCompute> computes;
};

struct ScheduleStats {
  std::vector<RankStats> ranks;
  int makespan = 0;
  /// 1 - busy / (p * makespan).
  double bubbleFraction = 0;
};

/// Checks `schedule` with every send synchronous (it completes only together
/// with its matching receive) and measures it on `costs`. Returns nullopt
/// with `error` naming the first problem: an action that does not belong
/// where it is, a compute missing or repeated, a send without its receive, a
/// deadlock (the first action that never proceeds and what its peer is
/// blocked at), or an action before what it depends on.
std::optional<ScheduleStats> check(const Schedule &schedule, std::string &error,
                                   const Costs &costs = Costs());

/// A header line (schedule, p, m, v, makespan, bubble, peak stash per rank
/// and, where W is deferred, the peak of microbatches whose F is done and
/// whose W is not)
/// and one row per rank with one cell per slot: F3, B3, W3 (a fused BW shows
/// its B slots then its W slots), with the local chunk index when v > 1
/// (F3.1), and `.` when idle.
std::string printTimeline(const Schedule &schedule, const ScheduleStats &stats);

/// The schedule as text, one line for its shape and one per rank:
///
///   schedule 1f1b ranks 2 microbatches 4 chunks-per-rank 1 placement round-robin
///   rank 0: F mb 0 chunk 0; SendAct mb 0 chunk 0->1; ...
///   rank 1: RecvAct mb 0 chunk 1<-0; F mb 0 chunk 1; BW mb 0 chunk 1; ...
///
/// (formatAction's actions, separated by "; "). parseSchedule reads it back,
/// so a schedule can be written by hand, or edited, and checked.
std::string printSchedule(const Schedule &schedule);

/// Reads printSchedule's text (blank lines and lines starting with '#' are
/// skipped); nullopt with `error` naming the line and what is wrong. Only
/// the text is checked here, not the schedule (check() does that).
std::optional<Schedule> parseSchedule(std::string_view text,
                                      std::string &error);

/// A pool's live spans along a rank's action list: per microbatch i, the
/// positions [first, last] of its first and last action touching the pool
/// (first < 0: none does).
struct PoolSpan {
  int64_t first = -1;
  int64_t last = -1;
};

/// The slots of a pool whose microbatch i takes slot i mod S: the least S,
/// at least the most microbatches live at once, for which no two
/// microbatches sharing a slot are ever live together (S = that most when
/// the live microbatches are always consecutive, as every generated
/// schedule keeps them: each function runs its microbatches in order).
/// 1 for a pool no microbatch touches.
int64_t cyclicPoolSlots(const std::vector<PoolSpan> &spans);

/// How a rank runs an action when transfers are asynchronous: a compute
/// (or a blocking transfer) whole, a transfer as its start and, later, its
/// wait.
enum class TransferStep { Whole, Start, Wait };

/// An action of a rank's asynchronous list with its transfer step.
struct ListedAction {
  Action action;
  TransferStep step = TransferStep::Whole;
};

/// One rank's checked synchronous `actions` with each transfer started
/// early and waited for late, as dist-pipeline-stages emits them and the
/// closed forms replay them. A send starts as early as what it sends is
/// made and is waited for after the rank's next compute following the
/// schedule's send; a receive is posted before the rank's compute
/// preceding the schedule's receive and waited for where the schedule
/// receives. A wait or a receive's start stays where the schedule has it
/// when moving it would make more microbatches be in flight on the rank at
/// once (from their first action there to their last) than the synchronous
/// list does, unless, for a receive with no send listed before it since the
/// compute, the received value's pool (its kind and chunk, from the receive
/// to its last reader) would still hold no more microbatches at once than
/// it does. Starts move only earlier and waits only later, and starts keep
/// their order (the transfers of one direction between two ranks pair
/// first in, first out): a list the synchronous check accepts cannot
/// deadlock this way (docs/design/pipeline-schedules.md, "Asynchronous
/// transfers").
std::vector<ListedAction> asyncTransferList(const std::vector<Action> &actions);

} // namespace mlir::dist::pipeline

#endif // DIALECTS_DIST_TRANSFORMS_PIPELINESCHEDULE_H
