//===- PipelineStages.cpp - dist-pipeline-stages --------------------------===//
//
// Cuts the unrolled (and partitioned) training step of a pipeline-split model
// into one straight-line program per pipeline rank, in the order the
// schedule gives, with the transfers between ranks; see Passes.td and
// docs/design/pipeline-schedules.md ("Stage programs").
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/ModuleSchedule.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPIPELINESTAGES
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace pipeline = mlir::dist::pipeline;

namespace {

using tpc::kMicrobatchIndexAttrName;
using tpc::kPhaseAttrName;

/// Which F, B or W of which chunk and microbatch an op belongs to.
struct Phase {
  enum Kind { F, B, W } kind;
  int chunk;
  int microbatch;
  auto key() const { return std::make_tuple(kind, chunk, microbatch); }
  bool operator<(const Phase &other) const { return key() < other.key(); }
  bool operator==(const Phase &other) const { return key() == other.key(); }
};

/// "train_F_chunk3" -> (F, 3); nullopt for another name.
std::optional<std::pair<Phase::Kind, int>> parsePhaseName(StringRef name) {
  if (!name.consume_front("train_") || name.size() < 2)
    return std::nullopt;
  Phase::Kind kind;
  switch (name.front()) {
  case 'F':
    kind = Phase::F;
    break;
  case 'B':
    kind = Phase::B;
    break;
  case 'W':
    kind = Phase::W;
    break;
  default:
    return std::nullopt;
  }
  name = name.drop_front();
  int chunk;
  if (!name.consume_front("_chunk") || name.getAsInteger(10, chunk) ||
      chunk < 0)
    return std::nullopt;
  return std::make_pair(kind, chunk);
}

/// How a template runs a schedule action: a compute or blocking transfer
/// as it is, an asynchronous transfer as its start and, later, its wait
/// (pipeline::asyncTransferList).
using pipeline::TransferStep;
using TemplateAction = pipeline::ListedAction;

/// Ranks as bits (rank r: bit r).
using RankSet = uint64_t;
constexpr int kMaxRanks = 64;
RankSet bit(int rank) { return RankSet(1) << rank; }
int lowest(RankSet set) { return llvm::countr_zero(set); }

/// A value one rank computes and another reads: sent once, at the action of
/// its first reader on the receiving rank.
struct Transfer {
  Value value;
  int from, to;
  int64_t channel;
  /// "activation", "gradient" or "tied" (kTransferAttrName).
  StringRef kind;
};

class StageBuilder {
public:
  StageBuilder(ModuleOp module, func::FuncOp step,
               const pipeline::Schedule &schedule, StringRef meshName,
               bool functions, bool asyncTransfers)
      : module(module), step(step), schedule(schedule), functions(functions),
        asyncTransfers(functions && asyncTransfers),
        ranks(schedule.ranks), all(ranks == kMaxRanks ? ~RankSet(0)
                                                      : bit(ranks) - 1),
        builder(module.getContext()),
        mesh(FlatSymbolRefAttr::get(module.getContext(), meshName)) {}

  LogicalResult run();

private:
  InFlightDiagnostic error(Operation *at) {
    return at->emitError() << "dist-pipeline-stages: ";
  }
  /// Under a schedule that runs W apart from B, gives W its own copy of
  /// every all_gather that B and W of a microbatch share.
  void regatherForDeferredWeights();
  LogicalResult readPhases();
  LogicalResult place();
  /// Places an op of no chunk: free, on its operands' ranks, or cross-rank.
  LogicalResult placeOther(Operation *op);
  void demand();
  LogicalResult emit();
  /// Template mode: each rank's functions once and its action list.
  DictionaryAttr emitFunctions(int rank);
  /// Emits on `rank` the ops of a schedule action for `microbatch` (a
  /// template's: 0); of a transfer, the ops of `step`.
  void emitAction(const pipeline::Action &action, int rank, int microbatch,
                  TransferStep step = TransferStep::Whole);
  /// Marks an op emitted on `rank` (and, in template mode, its function).
  void mark(Operation *op, int rank);
  void emitOp(Operation *op, int rank);
  void emitSend(const Transfer &transfer, bool async = false);
  void emitRecv(const Transfer &transfer, bool async = false);
  /// The dist.wait on what `rank` sends or receives in `transfer`.
  void emitWait(const Transfer &transfer, int rank);
  void emitPartialSumSquares(Operation *op, int rank);
  /// Emits every op placed on `rank` that is not yet emitted and whose
  /// operands all are there; with `final`, the cross-rank ones too.
  void flush(int rank, bool final);
  RankSet availability(Value value) const {
    if (isa<BlockArgument>(value))
      return all;
    return available.lookup(value);
  }
  bool isOn(Value value, int rank) {
    return isa<BlockArgument>(value) || mapping[rank].contains(value);
  }

  ModuleOp module;
  func::FuncOp step;
  const pipeline::Schedule &schedule;
  /// Template mode (the pass's `functions`).
  bool functions;
  /// Template mode: transfers are started and waited for apart
  /// (`async-transfers`).
  bool asyncTransfers;
  /// Template mode: the function of the ops being emitted (none: the
  /// prologue).
  StringAttr currentFunction;
  /// Ops emitted so far (to tell an empty function).
  int64_t marked = 0;
  int ranks;
  RankSet all;
  OpBuilder builder;
  FlatSymbolRefAttr mesh;

  SmallVector<Operation *> ops;
  DenseMap<Operation *, size_t> position;
  /// Ops of a chunk's F, B or W: pinned to the chunk's rank.
  DenseMap<Operation *, Phase> phaseOf;
  std::map<Phase, SmallVector<Operation *>> blocks;
  /// Ops computed from the step's arguments alone: on every rank that
  /// reads them (`demanded`).
  DenseSet<Operation *> free;
  DenseMap<Operation *, RankSet> demanded;
  /// The other ops: on the ranks where their operands are, or, combining
  /// values of several ranks, cross-rank (a tied gradient's sum, the
  /// gradient norm's sum of squares).
  DenseMap<Operation *, RankSet> placed;
  DenseSet<Operation *> crossRank;
  DenseMap<Value, RankSet> available;

  /// Schedule transfers by the phase of the first reader, and the other
  /// (cross-rank ops') transfers by op.
  std::map<Phase, SmallVector<Transfer>> transfersTo;
  DenseMap<Operation *, SmallVector<Transfer>> exchanges;
  int64_t channels = 0;

  /// Per rank: the clone of each value of the step, and the ops emitted.
  SmallVector<IRMapping> mapping;
  SmallVector<DenseSet<Operation *>> emitted;
  /// Per rank, the placed ops not emitted yet, in the step's order.
  SmallVector<std::vector<Operation *>> pending;
  /// The first op emitted on a rank that does not hold an operand (a
  /// placement bug: reported, never lowered).
  Operation *lost = nullptr;
  int lostRank = 0;
};

LogicalResult StageBuilder::readPhases() {
  for (Operation &op : step.getBody().front().without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  // Ops of a chunk's function, as tpc-unroll-train-step inlined them.
  for (Operation *op : ops) {
    auto name = op->getAttrOfType<StringAttr>(kPhaseAttrName);
    if (!name)
      continue;
    std::optional<std::pair<Phase::Kind, int>> parsed =
        parsePhaseName(name.getValue());
    if (!parsed)
      return error(op) << "'" << kPhaseAttrName << "' is '" << name.getValue()
                       << "', not a chunk's F, B or W (train_F_chunk<c>); "
                          "is the model split (dist-pipeline-outline)?";
    auto microbatch = op->getAttrOfType<IntegerAttr>(kMicrobatchIndexAttrName);
    if (!microbatch)
      return error(op) << "has no '" << kMicrobatchIndexAttrName
                       << "' (tpc-unroll-train-step=tag-microbatches)";
    Phase phase{parsed->first, parsed->second,
                static_cast<int>(microbatch.getInt())};
    if (functions && phase.microbatch != 0)
      return error(op) << "belongs to microbatch " << phase.microbatch
                       << ", but with functions=true the step is a "
                          "one-microbatch template "
                          "(tpc-unroll-train-step=first-microbatch-only)";
    if (phase.chunk >= schedule.numChunks() ||
        phase.microbatch >= schedule.microbatches)
      return error(op) << "belongs to chunk " << phase.chunk
                       << ", microbatch " << phase.microbatch
                       << ": the schedule has " << schedule.numChunks()
                       << " chunks and " << schedule.microbatches
                       << " microbatches";
    phaseOf[op] = phase;
  }
  // What the step computes from its arguments alone (casts of parameters,
  // the inputs' slices, the target count) is free: on every rank that
  // reads it.
  // In a template the microbatch's rows of an input (a slice, no kernel)
  // vary with the microbatch: what is computed from them (a data-parallel
  // rank's shard) runs in the phase that reads it, once per microbatch.
  auto isMicrobatchSlice = [&](Operation *def) {
    auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def);
    auto arg = slice ? dyn_cast<BlockArgument>(slice.getSource()) : nullptr;
    return functions && arg && arg.getOwner() == &step.getBody().front() &&
           step.getArgAttr(arg.getArgNumber(), tpc::kInputAttrName);
  };
  for (Operation *op : ops)
    if (!phaseOf.count(op) && llvm::all_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || (free.contains(def) && !isMicrobatchSlice(def));
        }))
      free.insert(op);
  // What dist-partition added inside a phase (a collective of the
  // tensor-parallel group, a reshard) belongs to the phase of its reader
  // that runs first: F before B before W (a row-parallel matmul's gathered
  // output gradient, read by B and W, is gathered in B), then the first in
  // the step.
  for (Operation *op : llvm::reverse(ops)) {
    if (phaseOf.count(op) || free.contains(op))
      continue;
    Operation *first = nullptr;
    auto order = [&](Operation *user) {
      return std::make_pair(phaseOf[user].kind, position[user]);
    };
    for (Operation *user : op->getUsers())
      if (phaseOf.count(user) && (!first || order(user) < order(first)))
        first = user;
    if (first)
      phaseOf[op] = phaseOf[first];
  }
  return success();
}

LogicalResult StageBuilder::place() {
  // A value another rank reads is sent once, for the reader that runs
  // first there: F before B before W (a W can read the very gradient a B
  // of the same microbatch reads, and be placed before it in the step).
  llvm::MapVector<std::pair<Value, int>, Operation *> readers;
  for (Operation *op : ops) {
    auto phase = phaseOf.find(op);
    if (phase == phaseOf.end()) {
      if (failed(placeOther(op)))
        return failure();
      continue;
    }
    int rank = schedule.rankOf(phase->second.chunk);
    blocks[phase->second].push_back(op);
    for (Value operand : op->getOperands()) {
      if (availability(operand) & bit(rank))
        continue;
      Operation *def = operand.getDefiningOp();
      if (!def || !phaseOf.count(def))
        return error(op) << "reads a value on pipeline rank "
                         << lowest(availability(operand))
                         << " that no chunk computes (it is on rank " << rank
                         << ")";
      Operation *&reader = readers[{operand, rank}];
      if (!reader || phase->second.kind < phaseOf[reader].kind)
        reader = op;
    }
    for (Value result : op->getResults())
      available[result] = bit(rank);
  }
  for (auto &[key, op] : readers) {
    auto [operand, rank] = key;
    const Phase &from = phaseOf[operand.getDefiningOp()];
    const Phase &to = phaseOf[op];
    // F hands its output to the next chunk's F, B its input gradient to the
    // previous chunk's B, for the same microbatch.
    bool activation = from.kind == Phase::F && to.kind == Phase::F &&
                      to.chunk == from.chunk + 1;
    bool gradient = from.kind == Phase::B && to.kind == Phase::B &&
                    to.chunk + 1 == from.chunk;
    if ((!activation && !gradient) || from.microbatch != to.microbatch)
      return error(op) << "reads a value of chunk " << from.chunk
                       << " (microbatch " << from.microbatch
                       << ") on pipeline rank " << schedule.rankOf(from.chunk)
                       << ": only a chunk's forward output to the next "
                          "chunk's forward and its input gradient to the "
                          "previous chunk's backward cross ranks";
    transfersTo[to].push_back({operand, schedule.rankOf(from.chunk), rank,
                               channels++,
                               activation ? "activation" : "gradient"});
  }
  return success();
}

LogicalResult StageBuilder::placeOther(Operation *op) {
  if (free.contains(op)) {
    for (Value result : op->getResults())
      available[result] = all;
    return success();
  }
  RankSet where = all, any = 0;
  for (Value operand : op->getOperands()) {
    where &= availability(operand);
    any |= availability(operand);
  }
  if (where == 0) {
    if (isa<tpc::SumSquaresOp>(op)) {
      // Each rank sums the squares it holds; the pipeline ranks add their
      // sums (a value two ranks hold counts once).
      crossRank.insert(op);
      where = all;
    } else if (isa<tpc::AddOp>(op)) {
      // A parameter two chunks read (a tied embedding): each rank holding
      // one accumulated gradient gets the other's and adds them in the same
      // order.
      crossRank.insert(op);
      where = any;
      SmallVector<Transfer> &list = exchanges[op];
      for (int rank = 0; rank < ranks; ++rank)
        if (where & bit(rank))
          for (Value operand : op->getOperands())
            if (!(availability(operand) & bit(rank)))
              list.push_back({operand, lowest(availability(operand)), rank,
                              channels++, "tied"});
    } else {
      return error(op) << "combines values of different pipeline ranks and "
                          "has no cross-rank form (only a sum of two values "
                          "and tpc.sum_squares have one)";
    }
  }
  placed[op] = where;
  for (Value result : op->getResults())
    available[result] = where;
  return success();
}

void StageBuilder::demand() {
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  for (Operation *op : llvm::reverse(ops)) {
    if (!free.contains(op))
      continue;
    RankSet needed = 0;
    for (Operation *user : op->getUsers()) {
      if (user == ret)
        needed |= bit(0);
      else if (auto phase = phaseOf.find(user); phase != phaseOf.end())
        needed |= bit(schedule.rankOf(phase->second.chunk));
      else if (free.contains(user))
        needed |= demanded.lookup(user);
      else
        needed |= placed.lookup(user);
    }
    demanded[op] = needed;
  }
}

void StageBuilder::emitOp(Operation *op, int rank) {
  for (Value operand : op->getOperands())
    if (!isOn(operand, rank) && !lost) {
      lost = op;
      lostRank = rank;
    }
  Operation *copy = builder.clone(*op, mapping[rank]);
  mark(copy, rank);
  emitted[rank].insert(op);
}

void StageBuilder::mark(Operation *op, int rank) {
  ++marked;
  op->setAttr(kPipelineRankAttrName, builder.getI64IntegerAttr(rank));
  if (currentFunction)
    op->setAttr(kFunctionAttrName, currentFunction);
}

void StageBuilder::emitSend(const Transfer &transfer, bool async) {
  auto send = SendOp::create(
      builder, transfer.value.getLoc(),
      mapping[transfer.from].lookup(transfer.value), mesh,
      builder.getStrArrayAttr({"pp"}),
      builder.getDenseI64ArrayAttr({transfer.from, transfer.to}),
      builder.getI64IntegerAttr(transfer.channel),
      async ? builder.getUnitAttr() : UnitAttr());
  mark(send, transfer.from);
  send->setAttr(kTransferAttrName, builder.getStringAttr(transfer.kind));
}

void StageBuilder::emitRecv(const Transfer &transfer, bool async) {
  auto recv = RecvOp::create(
      builder, transfer.value.getLoc(), transfer.value.getType(), mesh,
      builder.getStrArrayAttr({"pp"}),
      builder.getDenseI64ArrayAttr({transfer.from, transfer.to}),
      builder.getI64IntegerAttr(transfer.channel),
      async ? builder.getUnitAttr() : UnitAttr());
  mark(recv, transfer.to);
  recv->setAttr(kTransferAttrName, builder.getStringAttr(transfer.kind));
  mapping[transfer.to].map(transfer.value, recv.getResult());
}

void StageBuilder::emitWait(const Transfer &transfer, int rank) {
  auto wait = WaitOp::create(builder, transfer.value.getLoc(),
                             mapping[rank].lookup(transfer.value));
  mark(wait, rank);
  wait->setAttr(kTransferAttrName, builder.getStringAttr(transfer.kind));
}

void StageBuilder::emitPartialSumSquares(Operation *op, int rank) {
  // The values this rank counts: those whose lowest holder it is.
  SmallVector<Value> mine;
  for (Value operand : op->getOperands())
    if (lowest(availability(operand)) == rank)
      mine.push_back(mapping[rank].lookup(operand));
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Value partial;
  if (mine.empty())
    partial = arith::ConstantOp::create(
        builder, loc, type,
        DenseElementsAttr::get(type, builder.getF32FloatAttr(0.0f)));
  else
    partial = tpc::SumSquaresOp::create(builder, loc, type, mine);
  mark(partial.getDefiningOp(), rank);
  auto sum = AllReduceOp::create(
      builder, loc, partial.getType(), partial, mesh,
      builder.getStrArrayAttr({"pp"}),
      ReductionAttr::get(builder.getContext(), Reduction::Sum));
  mark(sum, rank);
  mapping[rank].map(op->getResult(0), sum.getResult());
  emitted[rank].insert(op);
}

void StageBuilder::flush(int rank, bool final) {
  // One pass in the step's order: an op emitted readies the later ones that
  // read it (operands come first), so nothing waits for a second pass.
  std::vector<Operation *> &waiting = pending[rank];
  std::vector<Operation *> still;
  for (size_t i = 0; i < waiting.size(); ++i) {
    Operation *op = waiting[i];
    bool cross = crossRank.contains(op);
    // A cross-rank op reads what other ranks hold; it waits for its own
    // rank's share only.
    bool ready = (!cross || final) &&
                 llvm::all_of(op->getOperands(), [&](Value v) {
                   return isOn(v, rank) ||
                          (cross && !(availability(v) & bit(rank)));
                 });
    if (!ready) {
      if (final) {
        // Keep the order of the step's epilogue on every rank.
        still.insert(still.end(), waiting.begin() + i, waiting.end());
        break;
      }
      still.push_back(op);
      continue;
    }
    if (isa<tpc::SumSquaresOp>(op) && cross) {
      emitPartialSumSquares(op, rank);
      continue;
    }
    if (cross && asyncTransfers) {
      // Both directions at once (a link carries each at full bandwidth):
      // the rank starts its sends and receives, then waits for them.
      for (const Transfer &t : exchanges[op])
        if (t.from == rank)
          emitSend(t, /*async=*/true);
      for (const Transfer &t : exchanges[op])
        if (t.to == rank)
          emitRecv(t, /*async=*/true);
      for (const Transfer &t : exchanges[op])
        if (t.from == rank || t.to == rank)
          emitWait(t, rank);
    } else if (cross) {
      // Lower rank sends first, the higher receives first: the pair of
      // synchronous transfers always meets.
      for (const Transfer &t : exchanges[op])
        if (t.from == rank && t.from < t.to)
          emitSend(t);
      for (const Transfer &t : exchanges[op])
        if (t.to == rank)
          emitRecv(t);
      for (const Transfer &t : exchanges[op])
        if (t.from == rank && t.from > t.to)
          emitSend(t);
    }
    emitOp(op, rank);
  }
  waiting = std::move(still);
}

LogicalResult StageBuilder::emit() {
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  mapping.resize(ranks);
  emitted.resize(ranks);
  pending.resize(ranks);
  for (Operation *op : ops)
    if (auto where = placed.find(op); where != placed.end())
      for (int rank = 0; rank < ranks; ++rank)
        if (where->second & bit(rank))
          pending[rank].push_back(op);
  builder.setInsertionPoint(ret);
  SmallVector<Attribute> rankActions;
  for (int rank = 0; rank < ranks; ++rank) {
    // The prologue: what the rank reads of the arguments alone.
    for (Operation *op : ops)
      if (free.contains(op) && (demanded.lookup(op) & bit(rank)))
        emitOp(op, rank);
    if (functions)
      rankActions.push_back(emitFunctions(rank));
    else
      for (const pipeline::Action &action : schedule.actions[rank]) {
        emitAction(action, rank, action.microbatch);
        if (action.isCompute())
          flush(rank, /*final=*/false);
      }
    if (functions)
      currentFunction = builder.getStringAttr(kEpilogueFunctionName);
    flush(rank, /*final=*/true);
    currentFunction = {};
    if (!pending[rank].empty())
      return error(pending[rank].front())
             << "cannot be placed on pipeline rank " << rank
             << ": an operand never becomes available there";
  }
  if (lost)
    return error(lost) << "reads on pipeline rank " << lostRank
                       << " a value that rank does not hold";
  if (functions)
    step->setAttr(kStageActionsAttrName, builder.getArrayAttr(rankActions));
  // The step returns each value from the lowest rank that holds it.
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    if (isa<BlockArgument>(v))
      continue;
    for (int rank = 0; rank < ranks; ++rank)
      if (Value copy = mapping[rank].lookupOrNull(v)) {
        operand.set(copy);
        break;
      }
  }
  for (Operation *op : llvm::reverse(ops)) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

/// The function that runs `action` in a template: "F chunk 2", "BW chunk
/// 2", "send act chunk 2" (a blocking send or a start), "wait send act chunk
/// 2", ...
static std::string functionName(const pipeline::Action &action,
                                TransferStep step) {
  const char *kind = "";
  switch (action.kind) {
  case pipeline::ActionKind::Forward:
    kind = "F";
    break;
  case pipeline::ActionKind::Backward:
    kind = action.fusedWeight ? "BW" : "B";
    break;
  case pipeline::ActionKind::Weight:
    kind = "W";
    break;
  case pipeline::ActionKind::RecvAct:
    kind = "recv act";
    break;
  case pipeline::ActionKind::SendAct:
    kind = "send act";
    break;
  case pipeline::ActionKind::RecvGrad:
    kind = "recv grad";
    break;
  case pipeline::ActionKind::SendGrad:
    kind = "send grad";
    break;
  }
  return (Twine(step == TransferStep::Wait ? "wait " : "") + kind +
          " chunk " + Twine(action.chunk))
      .str();
}

void StageBuilder::emitAction(const pipeline::Action &action, int rank,
                              int microbatch, TransferStep step) {
  int i = microbatch, c = action.chunk;
  bool async = step == TransferStep::Start;
  auto receive = [&](const Transfer &t) {
    if (step == TransferStep::Wait)
      emitWait(t, rank);
    else
      emitRecv(t, async);
  };
  auto send = [&](const Transfer &t) {
    if (t.from != rank)
      return;
    if (step == TransferStep::Wait)
      emitWait(t, rank);
    else
      emitSend(t, async);
  };
  auto emitBlock = [&](Phase phase) {
    for (Operation *op : blocks[phase])
      emitOp(op, rank);
  };
  switch (action.kind) {
  case pipeline::ActionKind::Forward:
    emitBlock({Phase::F, c, i});
    break;
  case pipeline::ActionKind::Backward:
    if (!action.fusedWeight) {
      emitBlock({Phase::B, c, i});
    } else if (!functions) {
      emitBlock({Phase::B, c, i});
      emitBlock({Phase::W, c, i});
    } else {
      // A template's BW is one function, its ops in the step's order:
      // tpc-unroll-train-step put each weight gradient right after what it
      // reads, so a layer's output gradient dies before the next layer's B.
      SmallVector<Operation *> both(blocks[{Phase::B, c, i}]);
      llvm::append_range(both, blocks[{Phase::W, c, i}]);
      llvm::sort(both, [&](Operation *a, Operation *b) {
        return position[a] < position[b];
      });
      for (Operation *op : both)
        emitOp(op, rank);
    }
    break;
  case pipeline::ActionKind::Weight:
    emitBlock({Phase::W, c, i});
    break;
  case pipeline::ActionKind::RecvAct:
    for (const Transfer &t : transfersTo[{Phase::F, c, i}])
      receive(t);
    break;
  case pipeline::ActionKind::SendAct:
    for (const Transfer &t : transfersTo[{Phase::F, c + 1, i}])
      send(t);
    break;
  case pipeline::ActionKind::RecvGrad:
    for (const Transfer &t : transfersTo[{Phase::B, c, i}])
      receive(t);
    break;
  case pipeline::ActionKind::SendGrad:
    for (const Transfer &t : transfersTo[{Phase::B, c - 1, i}])
      send(t);
    break;
  }
}

DictionaryAttr StageBuilder::emitFunctions(int rank) {
  std::vector<TemplateAction> list;
  if (asyncTransfers)
    list = pipeline::asyncTransferList(schedule.actions[rank]);
  else
    for (const pipeline::Action &action : schedule.actions[rank])
      list.push_back({action});
  // Each function emitted at its first action (microbatch 0's ops); -1 for
  // one without ops on this rank (a transfer list that is empty here).
  SmallVector<Attribute> names;
  // Per function (its kind, fused W, transfer step and chunk: what its name
  // says, as a number, since a long list has thousands of actions).
  DenseMap<int64_t, int64_t> index;
  auto keyOf = [](const pipeline::Action &action, TransferStep step) {
    return ((static_cast<int64_t>(action.kind) * 2 + action.fusedWeight) * 3 +
            static_cast<int64_t>(step)) *
               (int64_t(1) << 32) +
           action.chunk;
  };
  // (Which pool slot a microbatch's values take is tpc-lower-to-rt's: it
  // makes a pool per kind of value and sizes each from these runs.)
  SmallVector<int64_t> pairs;
  pairs.reserve(2 * list.size());
  for (const auto &[action, transferStep] : list) {
    auto [it, fresh] = index.try_emplace(keyOf(action, transferStep), -1);
    if (fresh) {
      currentFunction =
          builder.getStringAttr(functionName(action, transferStep));
      int64_t before = marked;
      emitAction(action, rank, /*microbatch=*/0, transferStep);
      if (marked > before) {
        it->second = names.size();
        names.push_back(currentFunction);
      }
      currentFunction = {};
    }
    if (it->second >= 0)
      pairs.append({it->second, action.microbatch});
  }
  return builder.getDictionaryAttr(
      {builder.getNamedAttr("functions", builder.getArrayAttr(names)),
       builder.getNamedAttr("actions", builder.getDenseI64ArrayAttr(pairs))});
}

/// Whether `op` is in a B (`'B'`) or W (`'W'`) function by its `tpc.phase`.
static bool inPhase(Operation *op, char kind) {
  auto name = op->getAttrOfType<StringAttr>(kPhaseAttrName);
  std::optional<std::pair<Phase::Kind, int>> parsed =
      name ? parsePhaseName(name.getValue()) : std::nullopt;
  return parsed && "FBW"[parsed->first] == kind;
}

void StageBuilder::regatherForDeferredWeights() {
  // Only schedules that run W apart from B defer it.
  bool split = llvm::any_of(schedule.actions, [](const auto &actions) {
    return llvm::any_of(actions, [](const pipeline::Action &action) {
      return action.kind == pipeline::ActionKind::Weight;
    });
  });
  if (!split)
    return;
  // A gather that B and W both read would live from B to the deferred W:
  // W gathers again instead (Megatron's choice under ZB: the gathered
  // gradient is the larger tensor).
  SmallVector<AllGatherOp> shared;
  step.walk([&](AllGatherOp gather) {
    bool b = false, w = false;
    for (Operation *user : gather->getUsers()) {
      b |= inPhase(user, 'B');
      w |= inPhase(user, 'W');
    }
    if (b && w)
      shared.push_back(gather);
  });
  for (AllGatherOp gather : shared) {
    SmallVector<OpOperand *> weightUses;
    Operation *first = nullptr;
    for (OpOperand &use : gather->getUses())
      if (inPhase(use.getOwner(), 'W')) {
        weightUses.push_back(&use);
        if (!first || use.getOwner()->isBeforeInBlock(first))
          first = use.getOwner();
      }
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(first);
    Operation *again = builder.clone(*gather);
    for (OpOperand *use : weightUses)
      use->set(again->getResult(0));
  }
}

LogicalResult StageBuilder::run() {
  if (ranks > kMaxRanks)
    return error(step) << "at most " << kMaxRanks << " pipeline ranks";
  regatherForDeferredWeights();
  if (failed(readPhases()) || failed(place()))
    return failure();
  demand();
  return emit();
}

struct DistPipelineStagesPass
    : public dist::impl::DistPipelineStagesBase<DistPipelineStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(function);
    if (!step || step.isExternal() || !step.getBody().hasOneBlock()) {
      module.emitError() << "dist-pipeline-stages: no func.func @" << function
                         << " with a body of one block";
      return signalPassFailure();
    }
    auto count = step->getAttrOfType<IntegerAttr>("tpc.microbatches");
    int64_t microbatches = count ? count.getInt() : 1;
    FailureOr<ModuleSchedule> built = buildModuleSchedule(
        module, "dist-pipeline-stages", schedule, microbatches);
    if (failed(built))
      return signalPassFailure();
    MeshOp mesh;
    module.walk([&](MeshOp op) {
      if (op.getAxisSize("pp") == built->schedule.ranks)
        mesh = op;
    });
    if (!mesh) {
      module.emitError() << "dist-pipeline-stages: no dist.mesh with an axis "
                            "'pp' of size "
                         << built->schedule.ranks << " (run dist-mesh)";
      return signalPassFailure();
    }
    StageBuilder stages(module, step, built->schedule, mesh.getSymName(),
                        functions, asyncTransfers);
    if (failed(stages.run()))
      return signalPassFailure();
  }
};

} // namespace
