//===- Simulator.h - replaying per-rank programs in time --------*- C++ -*-===//
//
// A discrete-event replay of what each simulated rank issues, in order: busy
// time (kernels, and collectives inside the rank's own stage, which every
// rank of the group reaches together), point-to-point transfers between
// ranks (blocking, or started and waited on), barriers over all ranks
// (collectives across pipeline stages), and collectives on a rank's own
// communication streams (a device that overlaps them, the CUDA device's,
// with a stream per communicator): a stream runs its collectives one after
// another from when they are issued, and the rank goes on until a wait on
// one. A transfer starts when both ends
// have posted it and the previous transfer on its channel (the ordered pair
// of ranks, FIFO as the runtime's) is done, and takes its sender's time.
// The standard library only: tpc-plan replays thousands of actions per
// candidate.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_ANALYSIS_SIMULATOR_H
#define TPC_ANALYSIS_SIMULATOR_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tpc::sim {

/// What busy time is spent on, for the breakdown.
enum Category : uint8_t { Compute, Recompute, Communication, NumCategories };

struct Op {
  enum Kind : uint8_t {
    /// The rank works for `seconds` (of `category`).
    Busy,
    /// Blocking send/receive with `peer`: both ends return when the
    /// transfer is done.
    Send,
    Recv,
    /// Posted and returns at once; a Wait on it returns when it is done.
    SendStart,
    RecvStart,
    /// Waits for the started transfer or collective at position `transfer`
    /// of this rank's list.
    Wait,
    /// Every rank reaches its k-th barrier; all leave `seconds` after the
    /// last arrives.
    Barrier,
    /// Issued to the rank's communication stream `stream` and returns at
    /// once: it runs for `seconds` from when it is issued or the stream's
    /// previous collective ends, whichever is later. A Wait on it returns
    /// when it ends (the time the rank waits counts as communication); the
    /// rank finishes when its streams do.
    CollectiveStart,
  };
  Kind kind = Busy;
  Category category = Compute;
  /// CollectiveStart: which of the rank's communication streams.
  uint8_t stream = 0;
  int peer = -1;
  int64_t transfer = -1;
  double seconds = 0;

  /// A transfer (Send, Recv, SendStart, RecvStart) with `peer`, taking
  /// `seconds` on the wire (the sender's counts).
  static Op transferWith(Kind kind, int peer, double seconds) {
    Op op;
    op.kind = kind;
    op.category = Communication;
    op.peer = peer;
    op.seconds = seconds;
    return op;
  }

  static Op busy(double seconds, Category category = Compute) {
    Op op;
    op.seconds = seconds;
    op.category = category;
    return op;
  }
};

struct RankResult {
  /// When its last op ends (and its communication stream's last
  /// collective).
  double finish = 0;
  /// Busy time: ops, and the waits for the communication stream (exposed
  /// communication).
  double busy[NumCategories] = {0, 0, 0};
  /// The communication stream's time that no op waited for (overlapped).
  double overlappedCommunication = 0;
  double busyTotal() const { return busy[0] + busy[1] + busy[2]; }
};

struct Result {
  double makespan = 0;
  std::vector<RankResult> ranks;
};

/// Replays `ranks` (each a list of ops, in issue order) from time 0. Returns
/// nullopt with `error` naming the first blocked op of each rank when they
/// can no longer proceed (a deadlock or a transfer without its other end).
std::optional<Result> simulate(const std::vector<std::vector<Op>> &ranks,
                               std::string &error);

} // namespace mlir::tpc::sim

#endif // TPC_ANALYSIS_SIMULATOR_H
