//===- Lifetimes.cpp - buffer lifetimes, the plan, the peak ---------------===//
//
// The buffer lifetimes follow from the order of the step's kernel runs: the
// stage's kernels in file order, or with stage_actions its actions' kernels
// one action after the other. A pooled buffer has one instance per slot,
// each with its own lifetime and bytes. With actions an instance may be
// live several times (LiveInterval: a function run once per microbatch
// reuses its temporaries). The intervals give the measured peak and check
// the plan's offsets: two instances live at the same time must not share a
// byte of the arena.
//
// The rules are those of the replay: run by run (replayLifetimes), then a
// sweep over the runs with the live instances by offset (sweepPlan). Their
// messages name the first broken rule. A step of many actions would cost a
// replay per microbatch, so with actions the checks go by function instead
// (StepSummary): a buffer that one function alone touches (a temporary, not
// pooled, not a param, input, state, output or grad) is live at the same
// positions of every run of it, so its intervals, its clashes with the
// function's other temporaries and its share of the peak are worked out
// once per function; only the boundary buffers (pooled, shared by
// functions, outputs and grads) are followed action by action, and they
// change only at a function's first and last touch of each. Params, state
// and inputs are live throughout. The summarized checks decide exactly what
// the replay does, and wherever they find a rule broken the replay runs to
// say which, with its messages.
//
// Started transfers (send_start, recv_start, then a wait on the started
// buffer) follow the same two paths: an instance is idle, being sent or
// being received, and each kernel's touches move it from one to the next
// (TransferState) or break a rule; the replay moves every instance at
// every run, the summary each function's effect once per action.
//
//===----------------------------------------------------------------------===//

#include "ProgramChecks.h"
#include "tpcrt/KernelTable.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

using namespace tpcrt;

namespace {

/// "kernel 3 (gelu)", with actions "action 2 (function 1 ('B'), microbatch
/// 1, slot 0): kernel 3 (gelu)".
std::string runText(const Program &program, size_t action,
                    const KernelCall &call) {
  if (!program.hasActions())
    return kernelText(call);
  return actionText(program, action, program.actions[action]) + ": " +
         kernelText(call);
}

/// "buffer 7", or for a pooled one "buffer 7, slot 2".
std::string bufferText(const TensorRef &t, uint32_t slot) {
  std::string text = "buffer " + std::to_string(t.buffer);
  if (t.pool >= 0)
    text += ", slot " + std::to_string(slot);
  return text;
}

uint32_t slotsOf(const Program &program, const TensorRef &t) {
  return t.pool < 0 ? 1 : program.pools[t.pool].slots;
}

/// A run's dropout stream starts at first_index + microbatch * N.
Status checkStream(const KernelCall &call, uint32_t microbatch) {
  if (microbatch == 0 || call.streamElements == 0)
    return Status::ok();
  int64_t first = call.intAttrs.size() == 2 ? call.intAttrs[1] : 0;
  if (call.streamElements <= (INT64_MAX - first) / microbatch)
    return Status::ok();
  return Status::error(
      "its dropout stream for microbatch " + std::to_string(microbatch) +
      " starts at " + std::to_string(first) + " + " +
      std::to_string(microbatch) + " x " +
      std::to_string(call.streamElements) + ", past 2^63 - 1");
}

/// Whether intervals `a` and `b` of two instances sharing bytes clash: one
/// starts while the other is live, but at the other's last run (a result
/// may take the bytes of an operand read for the last time; the kernel's
/// aliasing check decides where).
bool livesClash(const Lifetime &a, const Lifetime &b) {
  return a.first == b.first || (a.first < b.first && b.first < a.last) ||
         (b.first < a.first && a.first < b.last);
}

/// What a started transfer does to its buffer instance, from its start to
/// its wait: nothing (idle), sends it (others may read it, nothing writes
/// it) or receives into it (nothing but the wait touches it).
enum class TransferState : uint8_t { Idle, Sending, Receiving };
constexpr int kTransferStates = 3;

/// A kernel's touch of an instance, as started transfers see it.
enum class TransferTouch : uint8_t { Read, Write, StartSend, StartRecv, Wait };

/// An operand's touch.
TransferTouch operandTouch(const KernelCall &call) {
  return call.op == fb::OpCode::Wait        ? TransferTouch::Wait
         : call.op == fb::OpCode::SendStart ? TransferTouch::StartSend
                                            : TransferTouch::Read;
}

/// A result's touch.
TransferTouch resultTouch(const KernelCall &call) {
  return call.op == fb::OpCode::RecvStart ? TransferTouch::StartRecv
                                          : TransferTouch::Write;
}

/// The state after `touch` in `state`; false where the touch breaks a rule
/// (a wait with nothing in flight, a start on a transfer in flight, a write
/// of a buffer being sent, any other touch of one being received).
bool advance(TransferState &state, TransferTouch touch) {
  switch (touch) {
  case TransferTouch::Wait:
    if (state == TransferState::Idle)
      return false;
    state = TransferState::Idle;
    return true;
  case TransferTouch::StartSend:
  case TransferTouch::StartRecv:
    if (state != TransferState::Idle)
      return false;
    state = touch == TransferTouch::StartSend ? TransferState::Sending
                                              : TransferState::Receiving;
    return true;
  case TransferTouch::Read:
    return state != TransferState::Receiving;
  case TransferTouch::Write:
    return state == TransferState::Idle;
  }
  return false;
}

bool isStartedTransfer(fb::OpCode op) {
  return op == fb::OpCode::SendStart || op == fb::OpCode::RecvStart ||
         op == fb::OpCode::Wait;
}

/// The buffers a send_start, recv_start or wait of the stage touches: the
/// only ones a started transfer's rules concern.
std::vector<bool> startedBuffers(const Program &program, bool &any) {
  std::vector<bool> started(program.buffers.size(), false);
  any = false;
  for (const KernelCall &call : program.calls)
    if (isStartedTransfer(call.op)) {
      const TensorRef &t =
          call.operands.empty() ? call.results[0] : call.operands[0];
      started[t.buffer] = true;
      any = true;
    }
  return started;
}

/// A slot of a pool that is not by microbatch goes from microbatch to
/// microbatch: a transfer started on it is waited for by its microbatch.
bool slotChangesHands(const Program &program, const TensorRef &t) {
  return t.pool >= 0 && !program.pools[t.pool].byMicrobatch;
}

enum class Role : uint8_t { None, Param, Input, State };

/// The params, inputs and state: each buffer's role (at most one), its
/// index in its list, and whether it persists here (a role the stage owns:
/// live from load to the end, in every slot).
struct Roles {
  std::vector<Role> of;
  std::vector<uint32_t> index;
  std::vector<bool> persists;
};

/// "param 0 ('w')", "input 1 ('labels')", "state 2 ('w.momentum')".
std::string roleText(const Program &program, Role role, uint32_t i) {
  switch (role) {
  case Role::Param:
    return "param " + std::to_string(i) + " ('" + program.params[i].hfName +
           "')";
  case Role::Input:
    return "input " + std::to_string(i) + " ('" + program.inputs[i].name + "')";
  case Role::State:
    return "state " + std::to_string(i) + " ('" +
           program.params[program.state[i].param].hfName + "." +
           program.state[i].name + "')";
  case Role::None:
    break;
  }
  return "";
}

Status claimRoles(const Program &program, Roles &roles) {
  size_t numBuffers = program.buffers.size();
  roles.of.assign(numBuffers, Role::None);
  roles.index.assign(numBuffers, 0);
  auto claim = [&](uint32_t buffer, Role role, size_t i) {
    if (roles.of[buffer] != Role::None)
      return Status::error(
          roleText(program, role, static_cast<uint32_t>(i)) + " uses buffer " +
          std::to_string(buffer) + ", which is already " +
          roleText(program, roles.of[buffer], roles.index[buffer]));
    roles.of[buffer] = role;
    roles.index[buffer] = static_cast<uint32_t>(i);
    return Status::ok();
  };
  for (size_t i = 0; i < program.params.size(); ++i)
    if (Status s = claim(program.params[i].buffer, Role::Param, i); !s)
      return s;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (Status s = claim(program.inputs[i].buffer, Role::Input, i); !s)
      return s;
  for (size_t i = 0; i < program.state.size(); ++i)
    if (Status s = claim(program.state[i].buffer, Role::State, i); !s)
      return s;
  roles.persists.assign(numBuffers, false);
  for (uint32_t b = 0; b < numBuffers; ++b)
    roles.persists[b] = roles.of[b] != Role::None && program.ownsBuffer(b);
  return Status::ok();
}

/// Params, state and owned inputs are live from load to the end.
std::vector<Lifetime> initialLives(const Program &program, const Roles &roles) {
  std::vector<Lifetime> lives(program.numInstances, Lifetime{INT64_MAX, -1});
  auto end = static_cast<int64_t>(program.numRuns);
  for (uint32_t b = 0; b < program.buffers.size(); ++b)
    if (roles.persists[b])
      for (uint32_t s = 0, n = slotsOf(program, program.buffers[b]); s < n; ++s)
        lives[program.instanceBase[b] + s] = {Lifetime::kLoad, end};
  return lives;
}

/// Fills program.instanceIntervals (by instance: the intervals a later
/// write closed, in time order, then the instance's last, `lives`),
/// instanceLifetimes and lifetimes. A temporary's interval (its `function`
/// set) spans, over the step, its function's first run to its last, whose
/// first kernels run at `runStarts[function]`.
void collectIntervals(
    Program &program, const std::vector<LiveInterval> &closed,
    const std::vector<Lifetime> &lives,
    const std::vector<std::pair<int64_t, int64_t>> &runStarts) {
  uint32_t numInstances = program.numInstances;
  // Counting sort by instance, which keeps each instance's time order.
  std::vector<size_t> at(numInstances + 1, 0);
  for (const LiveInterval &interval : closed)
    ++at[interval.instance + 1];
  for (uint32_t i = 0; i < numInstances; ++i)
    at[i + 1] += at[i] + (lives[i].first != INT64_MAX);
  std::vector<LiveInterval> &intervals = program.instanceIntervals;
  intervals.resize(at[numInstances]);
  for (const LiveInterval &interval : closed)
    intervals[at[interval.instance]++] = interval;
  for (uint32_t i = 0; i < numInstances; ++i)
    if (lives[i].first != INT64_MAX)
      intervals[at[i]++] = {i, lives[i]};

  std::vector<Lifetime> &spans = program.instanceLifetimes;
  spans.assign(numInstances, Lifetime{0, -1});
  for (const LiveInterval &interval : intervals) {
    Lifetime life = interval.life;
    if (interval.function != LiveInterval::kWholeStep) {
      life.first += runStarts[interval.function].first;
      life.last += runStarts[interval.function].second;
    }
    Lifetime &span = spans[interval.instance];
    if (!span.live())
      span = life;
    span.last = std::max(span.last, life.last);
  }
  // A buffer's lifetime: the span of its instances'.
  program.lifetimes.assign(program.buffers.size(), Lifetime{0, -1});
  for (uint32_t b = 0; b < program.buffers.size(); ++b) {
    Lifetime &span = program.lifetimes[b];
    for (uint32_t s = 0, n = slotsOf(program, program.buffers[b]); s < n; ++s) {
      const Lifetime &life = spans[program.instanceBase[b] + s];
      if (!life.live())
        continue;
      if (!span.live())
        span = life;
      span.first = std::min(span.first, life.first);
      span.last = std::max(span.last, life.last);
    }
  }
}

/// computeLifetimes run by run: checks that every read follows a write, who
/// may write params, state and inputs, a pooled kernel's aliasing at each
/// run's slots and each run's dropout stream. Times are run indices
/// (positions in program.calls without actions); outputs and grads live to
/// the end too (their last interval). An instance has an interval per
/// action that writes it before reading it; without actions exactly one.
Status replayLifetimes(Program &program, const Roles &roles) {
  std::vector<Lifetime> lives = initialLives(program, roles);
  // The started transfers in flight: per instance its state and the run
  // that started it (the action and the position in calls).
  struct InFlight {
    TransferState state = TransferState::Idle;
    uint32_t action = 0, call = 0;
  };
  bool anyStarted = false;
  std::vector<bool> started = startedBuffers(program, anyStarted);
  std::vector<InFlight> inFlight(anyStarted ? program.numInstances : 0);
  auto startText = [&](const InFlight &f) {
    return runText(program, f.action, program.calls[f.call]);
  };
  // The action that last touched each instance.
  std::vector<uint32_t> touchedBy(program.numInstances, UINT32_MAX);
  // The intervals that a later action's write closed.
  std::vector<LiveInterval> closed;
  const std::vector<uint32_t> &base = program.instanceBase;
  int64_t t = 0;
  for (size_t a = 0; a < program.actions.size(); ++a) {
    const ActionRef &action = program.actions[a];
    uint32_t mb = action.microbatch, slot = action.slot;
    for (uint32_t p = action.begin; p < action.end; ++p, ++t) {
      const KernelCall &call = program.calls[p];
      Status checked = Status::ok();
      if (call.pooled)
        checked = checkAliasing(call, mb, slot);
      if (checked)
        checked = checkStream(call, mb);
      if (!checked)
        return checked.withContext(runText(program, a, call));
      // The started transfers' rules, at each touch of a buffer they
      // concern (operands first: a kernel reads before it writes).
      size_t touches = anyStarted ? call.operands.size() + call.results.size()
                                  : 0;
      for (size_t j = 0; j < touches; ++j) {
        bool operand = j < call.operands.size();
        size_t r = j - call.operands.size();
        const TensorRef &t = operand ? call.operands[j] : call.results[r];
        if (!started[t.buffer])
          continue;
        uint32_t instanceSlot = t.slotOf(mb, slot);
        InFlight &f = inFlight[base[t.buffer] + instanceSlot];
        TransferTouch touch = operand ? operandTouch(call) : resultTouch(call);
        TransferState before = f.state;
        bool allowed = advance(f.state, touch);
        bool mine = touch == TransferTouch::Wait && allowed &&
                    (!slotChangesHands(program, t) ||
                     program.actions[f.action].microbatch == mb);
        if (allowed && (touch != TransferTouch::Wait || mine)) {
          if (before == TransferState::Idle && f.state != before)
            f = {f.state, static_cast<uint32_t>(a), p};
          continue;
        }
        std::string what =
            runText(program, a, call) + ": " +
            (operand ? operandRole(call.op, j) : resultRole(call.op, r)) +
            " (" + bufferText(t, instanceSlot) + ")";
        if (touch == TransferTouch::Wait && allowed)
          return Status::error(
              what + " waits for the transfer that " + startText(f) +
              " started for microbatch " +
              std::to_string(program.actions[f.action].microbatch) +
              ", whose slot has gone to microbatch " + std::to_string(mb) +
              " since (a transfer's wait comes before its slot is reused)");
        if (touch == TransferTouch::Wait)
          return Status::error(
              what + " has no transfer in flight to wait for (a wait "
                     "follows the send_start or recv_start of the same "
                     "buffer, the same slot, with no other wait between)");
        if (touch == TransferTouch::StartSend ||
            touch == TransferTouch::StartRecv)
          return Status::error(
              what + " already has a transfer in flight, started by " +
              startText(f) +
              " (one transfer at a time per buffer: wait for it first)");
        return Status::error(
            what + " is " + (touch == TransferTouch::Read ? "read" : "written") +
            " while " + startText(f) +
            (before == TransferState::Sending
                 ? " sends it (nothing writes a send_start's input before its "
                   "wait)"
                 : " receives into it (nothing but its wait touches a "
                   "recv_start's result before the wait)"));
      }
      for (size_t j = 0; j < call.operands.size(); ++j) {
        const TensorRef &operand = call.operands[j];
        uint32_t instanceSlot = operand.slotOf(mb, slot);
        uint32_t instance = base[operand.buffer] + instanceSlot;
        Lifetime &life = lives[instance];
        if (life.first >= t)
          return Status::error(runText(program, a, call) + ": " +
                               operandRole(call.op, j) + " (" +
                               bufferText(operand, instanceSlot) +
                               ") is read before any kernel writes it");
        life.last = std::max(life.last, t);
        touchedBy[instance] = static_cast<uint32_t>(a);
      }
      for (size_t j = 0; j < call.results.size(); ++j) {
        const TensorRef &result = call.results[j];
        uint32_t buffer = result.buffer;
        Role role = roles.of[buffer];
        bool update = inPlaceOperand(call.op, j) >= 0;
        if (role == Role::Input || (role != Role::None && !update))
          return Status::error(
              runText(program, a, call) + ": " + resultRole(call.op, j) +
              " is buffer " + std::to_string(buffer) + ", " +
              roleText(program, role, roles.index[buffer]) + ", which " +
              (role == Role::Input ? "kernels only read"
                                   : "only the optimizer updates in place"));
        uint32_t instance = base[buffer] + result.slotOf(mb, slot);
        Lifetime &life = lives[instance];
        // A write by an action that has not touched the instance yet (not
        // an operand of this kernel either) starts a new interval: the
        // value of an earlier action is dead from here on.
        if (life.first != INT64_MAX && touchedBy[instance] != a &&
            !roles.persists[buffer]) {
          closed.push_back({instance, life});
          life = Lifetime{INT64_MAX, -1};
        }
        life.first = std::min(life.first, t);
        life.last = std::max(life.last, t);
        touchedBy[instance] = static_cast<uint32_t>(a);
      }
    }
  }
  // Outputs and grads are never pooled (checkExecutable): one instance.
  auto toEnd = [&](const std::vector<BindingRef> &list, const char *kind) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (!program.ownsBuffer(list[i].buffer))
        continue;
      Lifetime &life = lives[base[list[i].buffer]];
      if (life.first == INT64_MAX)
        return Status::error(std::string(kind) + " " + std::to_string(i) +
                             " ('" + list[i].name +
                             "') is never written by a kernel");
      life.last = static_cast<int64_t>(program.numRuns);
    }
    return Status::ok();
  };
  if (Status s = toEnd(program.outputs, "output"); !s)
    return s;
  if (Status s = toEnd(program.grads, "grad"); !s)
    return s;
  // The earliest transfer still in flight at the end.
  const InFlight *open = nullptr;
  uint32_t openInstance = 0;
  for (uint32_t i = 0; i < inFlight.size(); ++i)
    if (inFlight[i].state != TransferState::Idle &&
        (!open || std::make_pair(inFlight[i].action, inFlight[i].call) <
                      std::make_pair(open->action, open->call))) {
      open = &inFlight[i];
      openInstance = i;
    }
  if (open) {
    const KernelCall &start = program.calls[open->call];
    const TensorRef &t =
        start.operands.empty() ? start.results[0] : start.operands[0];
    return Status::error(
        "the step ends with a transfer in flight: " + startText(*open) +
        " started it on " + bufferText(t, openInstance - base[t.buffer]) +
        ", and no wait on it follows (every send_start and recv_start has a "
        "wait later in the step)");
  }
  collectIntervals(program, closed, lives, {});
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// The step summarized per function
//===----------------------------------------------------------------------===//

/// How one run of a function uses a buffer: the positions in the run of the
/// first and the last kernel touching it, and whether the first reads it
/// (an operand, maybe also a result) or only writes it. Later touches in
/// the run neither start nor end an interval: the first decides whether the
/// run starts one, the last where it reaches.
struct Touch {
  uint32_t buffer = 0;
  uint32_t first = 0, last = 0;
  bool reads = false;
};

/// What one run of a function does to the started transfer of an instance
/// of `buffer`, for each state the run may find it in (TransferState): the
/// state it leaves or a broken rule (valid false), whether it waits for the
/// transfer it found, and whether the transfer it leaves in flight is one it
/// started.
struct TransferEffect {
  uint32_t buffer = 0;
  /// Touched by this function alone (and not pooled, persistent or bound):
  /// every run must find it idle and leave it so.
  bool temporary = false;
  bool valid[kTransferStates] = {true, true, true};
  TransferState exit[kTransferStates] = {
      TransferState::Idle, TransferState::Sending, TransferState::Receiving};
  bool waitsFound[kTransferStates] = {};
  bool startsLeft[kTransferStates] = {};

  void apply(TransferTouch touch) {
    for (int e = 0; e < kTransferStates; ++e) {
      TransferState before = exit[e];
      if (!valid[e] || !(valid[e] = advance(exit[e], touch)))
        continue;
      if (touch == TransferTouch::Wait && before != TransferState::Idle &&
          !startsLeft[e])
        waitsFound[e] = true;
      if (touch == TransferTouch::StartSend ||
          touch == TransferTouch::StartRecv)
        startsLeft[e] = true;
    }
  }
};

/// A buffer's instances: the first (Program::instanceBase), and slot s's
/// bytes [offset + s * stride, + bytes); the slot of a run as
/// TensorRef::slotOf.
struct Place {
  uint32_t base = 0;
  bool pooled = false, byMicrobatch = false;
  uint32_t slots = 1;
  uint64_t offset = 0, stride = 0, bytes = 0;

  explicit Place(const Program &program, uint32_t buffer)
      : base(program.instanceBase[buffer]),
        pooled(program.buffers[buffer].pool >= 0),
        byMicrobatch(program.buffers[buffer].byMicrobatch),
        slots(program.buffers[buffer].poolSlots),
        offset(program.buffers[buffer].offset),
        stride(program.buffers[buffer].poolStride),
        bytes(program.buffers[buffer].bytes) {}
  uint32_t slotOf(uint32_t microbatch, uint32_t slot) const {
    return !pooled ? 0 : byMicrobatch ? microbatch : slot % slots;
  }
};

/// A function as the step's actions run it (count 0: none does).
struct FunctionRuns {
  /// Its kernels' positions in calls.
  uint32_t begin = 0, count = 0;
  /// Its first action (its microbatch and slot), the first kernel runs of
  /// its first and last actions, and its largest microbatch.
  ActionRef firstAction;
  int64_t firstStart = 0, lastStart = 0;
  uint32_t maxMicrobatch = 0;
  /// The buffers it alone touches and the boundary ones (the persistent
  /// ones, whose touches change nothing, are left out).
  std::vector<Touch> temporaries, boundary;
  /// Where each boundary buffer's instances lie, copied from the buffer so
  /// that an action's walk over its boundary reads them in order.
  std::vector<Place> places;
  /// How many of its boundary touches write first (start an interval).
  uint32_t writes = 0;
  /// Its effect on the started transfers of each buffer they concern.
  std::vector<TransferEffect> transfers;
};

/// The step's actions by function: each function's touches once, and where
/// each action's first kernel runs.
struct StepSummary {
  std::vector<FunctionRuns> functions;
  std::vector<int64_t> starts;
};

StepSummary summarize(const Program &program, const Roles &roles) {
  StepSummary summary;
  summary.functions.resize(program.functions.size());
  summary.starts.reserve(program.actions.size());
  int64_t t = 0;
  for (const ActionRef &action : program.actions) {
    FunctionRuns &runs = summary.functions[action.function];
    if (runs.count == 0) {
      runs.begin = action.begin;
      runs.count = action.end - action.begin;
      runs.firstAction = action;
      runs.firstStart = t;
    }
    runs.lastStart = t;
    runs.maxMicrobatch = std::max(runs.maxMicrobatch, action.microbatch);
    summary.starts.push_back(t);
    t += runs.count;
  }
  // Every run function's touches, one after the other, and how many
  // functions touch each buffer.
  size_t numBuffers = program.buffers.size();
  std::vector<Touch> touches;
  std::vector<size_t> from(program.functions.size() + 1, 0);
  std::vector<uint32_t> users(numBuffers, 0);
  std::vector<size_t> touchOf(numBuffers, SIZE_MAX);
  for (uint32_t f = 0; f < program.functions.size(); ++f) {
    const FunctionRuns &runs = summary.functions[f];
    from[f] = touches.size();
    auto note = [&](uint32_t buffer, uint32_t k, bool reads) {
      if (touchOf[buffer] != SIZE_MAX) {
        touches[touchOf[buffer]].last = k;
        return;
      }
      touchOf[buffer] = touches.size();
      touches.push_back({buffer, k, k, reads});
      ++users[buffer];
    };
    for (uint32_t k = 0; k < runs.count; ++k) {
      const KernelCall &call = program.calls[runs.begin + k];
      for (const TensorRef &t : call.operands)
        note(t.buffer, k, true);
      for (const TensorRef &t : call.results)
        note(t.buffer, k, false);
    }
    for (size_t i = from[f]; i < touches.size(); ++i)
      touchOf[touches[i].buffer] = SIZE_MAX;
  }
  from.back() = touches.size();
  std::vector<bool> bound(numBuffers, false);
  for (const std::vector<BindingRef> *list : {&program.outputs, &program.grads})
    for (const BindingRef &binding : *list)
      bound[binding.buffer] = true;
  for (uint32_t f = 0; f < program.functions.size(); ++f) {
    FunctionRuns &runs = summary.functions[f];
    for (size_t i = from[f]; i < from[f + 1]; ++i) {
      const Touch &touch = touches[i];
      uint32_t b = touch.buffer;
      if (roles.persists[b])
        continue;
      bool temporary = users[b] == 1 && program.buffers[b].pool < 0 &&
                       roles.of[b] == Role::None && !bound[b];
      (temporary ? runs.temporaries : runs.boundary).push_back(touch);
      if (!temporary) {
        runs.places.emplace_back(program, b);
        runs.writes += !touch.reads;
      }
    }
  }

  // Each function's effect on the buffers the started transfers concern,
  // from its kernels' touches in order.
  bool anyStarted = false;
  std::vector<bool> started = startedBuffers(program, anyStarted);
  for (uint32_t f = 0; anyStarted && f < program.functions.size(); ++f) {
    FunctionRuns &runs = summary.functions[f];
    auto effectOf = [&](uint32_t buffer) -> TransferEffect & {
      if (touchOf[buffer] == SIZE_MAX) {
        touchOf[buffer] = runs.transfers.size();
        TransferEffect effect;
        effect.buffer = buffer;
        effect.temporary = users[buffer] == 1 &&
                           program.buffers[buffer].pool < 0 &&
                           roles.of[buffer] == Role::None && !bound[buffer];
        runs.transfers.push_back(effect);
      }
      return runs.transfers[touchOf[buffer]];
    };
    for (uint32_t k = 0; k < runs.count; ++k) {
      const KernelCall &call = program.calls[runs.begin + k];
      for (const TensorRef &t : call.operands)
        if (started[t.buffer])
          effectOf(t.buffer).apply(operandTouch(call));
      for (const TensorRef &t : call.results)
        if (started[t.buffer])
          effectOf(t.buffer).apply(resultTouch(call));
    }
    for (const TransferEffect &effect : runs.transfers)
      touchOf[effect.buffer] = SIZE_MAX;
  }
  return summary;
}

/// Whether a pooled kernel's aliasing is the same at every slot: each pair
/// of its tensors lies in one pool (both move together), or apart whatever
/// the slots.
bool slotInvariant(const Program &program, const KernelCall &call) {
  auto apart = [&](const TensorRef &x, const TensorRef &y) {
    if (x.pool == y.pool)
      return true;
    auto end = [&](const TensorRef &t) {
      return t.offset + (slotsOf(program, t) - 1) * t.poolStride + t.bytes;
    };
    return end(x) <= y.offset || end(y) <= x.offset;
  };
  for (size_t r = 0; r < call.results.size(); ++r) {
    for (const TensorRef &operand : call.operands)
      if (!apart(call.results[r], operand))
        return false;
    for (size_t q = 0; q < r; ++q)
      if (!apart(call.results[r], call.results[q]))
        return false;
  }
  return true;
}

/// computeLifetimes from the summary (see the file comment): the kernels'
/// checks once per function (a pooled kernel whose aliasing depends on the
/// slots once per action, the dropout streams at the largest microbatch),
/// then the boundary instances' intervals action by action. False where a
/// rule may be broken, the program untouched: the replay says which.
bool summarizedLifetimes(Program &program, const Roles &roles,
                         const StepSummary &summary) {
  const std::vector<uint32_t> &base = program.instanceBase;
  // Per function, the pooled kernels to check at each action's slots.
  std::vector<std::vector<uint32_t>> perAction(summary.functions.size());
  for (uint32_t f = 0; f < summary.functions.size(); ++f) {
    const FunctionRuns &runs = summary.functions[f];
    for (uint32_t p = runs.begin; p < runs.begin + runs.count; ++p) {
      const KernelCall &call = program.calls[p];
      for (size_t j = 0; j < call.results.size(); ++j) {
        Role role = roles.of[call.results[j].buffer];
        if (role == Role::Input ||
            (role != Role::None && inPlaceOperand(call.op, j) < 0))
          return false;
      }
      if (!checkStream(call, runs.maxMicrobatch))
        return false;
      if (!call.pooled)
        continue;
      if (!slotInvariant(program, call))
        perAction[f].push_back(p);
      else if (!checkAliasing(call, runs.firstAction.microbatch,
                              runs.firstAction.slot))
        return false;
    }
    for (const Touch &touch : runs.temporaries)
      if (touch.reads)
        return false;
    for (const TransferEffect &effect : runs.transfers)
      if (effect.temporary &&
          !(effect.valid[0] && effect.exit[0] == TransferState::Idle))
        return false;
  }

  // The started transfers across the actions: per instance its state and
  // the microbatch that started the transfer in flight.
  bool anyStarted = false;
  for (const FunctionRuns &runs : summary.functions)
    anyStarted = anyStarted || !runs.transfers.empty();
  std::vector<TransferState> transferState(
      anyStarted ? program.numInstances : 0, TransferState::Idle);
  std::vector<uint32_t> startedFor(transferState.size(), 0);
  size_t inFlight = 0;
  for (const ActionRef &action : program.actions) {
    for (const TransferEffect &effect :
         summary.functions[action.function].transfers) {
      if (effect.temporary)
        continue;
      const TensorRef &t = program.buffers[effect.buffer];
      uint32_t instance =
          base[effect.buffer] + t.slotOf(action.microbatch, action.slot);
      auto found = static_cast<int>(transferState[instance]);
      if (!effect.valid[found] ||
          (effect.waitsFound[found] && slotChangesHands(program, t) &&
           startedFor[instance] != action.microbatch))
        return false;
      TransferState left = effect.exit[found];
      inFlight += left != TransferState::Idle;
      inFlight -= transferState[instance] != TransferState::Idle;
      transferState[instance] = left;
      if (effect.startsLeft[found] && left != TransferState::Idle)
        startedFor[instance] = action.microbatch;
    }
  }
  if (inFlight)
    return false;

  std::vector<Lifetime> lives = initialLives(program, roles);
  std::vector<LiveInterval> closed;
  // At most one closed per write, and each temporary's.
  size_t most = 0;
  for (const ActionRef &action : program.actions)
    most += summary.functions[action.function].writes;
  for (const FunctionRuns &runs : summary.functions)
    most += runs.temporaries.size();
  closed.reserve(most);
  for (size_t a = 0; a < program.actions.size(); ++a) {
    const ActionRef &action = program.actions[a];
    uint32_t mb = action.microbatch, slot = action.slot;
    for (uint32_t p : perAction[action.function])
      if (!checkAliasing(program.calls[p], mb, slot))
        return false;
    int64_t start = summary.starts[a];
    const FunctionRuns &runs = summary.functions[action.function];
    for (size_t j = 0; j < runs.boundary.size(); ++j) {
      const Touch &touch = runs.boundary[j];
      const Place &place = runs.places[j];
      uint32_t instance = place.base + place.slotOf(mb, slot);
      Lifetime &life = lives[instance];
      if (touch.reads && life.first == INT64_MAX)
        return false;
      if (!touch.reads) {
        if (life.first != INT64_MAX)
          closed.push_back({instance, life});
        life.first = start + touch.first;
      }
      life.last = start + touch.last;
    }
  }
  for (const std::vector<BindingRef> *list : {&program.outputs, &program.grads})
    for (const BindingRef &binding : *list) {
      if (!program.ownsBuffer(binding.buffer))
        continue;
      Lifetime &life = lives[base[binding.buffer]];
      if (life.first == INT64_MAX)
        return false;
      life.last = static_cast<int64_t>(program.numRuns);
    }

  // Each temporary once, its interval within a run of its function.
  std::vector<std::pair<int64_t, int64_t>> runStarts(summary.functions.size());
  for (uint32_t f = 0; f < summary.functions.size(); ++f) {
    const FunctionRuns &runs = summary.functions[f];
    runStarts[f] = {runs.firstStart, runs.lastStart};
    for (const Touch &touch : runs.temporaries)
      closed.push_back(
          {base[touch.buffer], {int64_t(touch.first), int64_t(touch.last)}, f});
  }
  collectIntervals(program, closed, lives, runStarts);
  return true;
}

//===----------------------------------------------------------------------===//
// The plan and the peak
//===----------------------------------------------------------------------===//

/// The live instances of a sweep by offset. Each was checked apart from the
/// others on entering, so a new one can only clash with its neighbours.
/// Erased nodes serve the next insertions: a sweep allocates only while the
/// set grows.
class LiveSet {
public:
  /// A live instance sharing a byte with [offset, offset + bytes), or -1:
  /// the first at or above `offset`, else the one below.
  int64_t clash(uint64_t offset, uint64_t bytes) const {
    auto next = live.lower_bound(offset);
    if (next != live.end() && next->first < offset + bytes)
      return next->second.instance;
    if (next != live.begin() && std::prev(next)->second.end > offset)
      return std::prev(next)->second.instance;
    return -1;
  }
  void insert(uint64_t offset, uint64_t bytes, uint32_t instance) {
    Entry entry{instance, offset + bytes};
    if (spare.empty()) {
      live.emplace(offset, entry);
      return;
    }
    Map::node_type node = std::move(spare.back());
    spare.pop_back();
    node.key() = offset;
    node.mapped() = entry;
    live.insert(std::move(node));
  }
  /// Removes `instance` if it is the one live at `offset`.
  void erase(uint64_t offset, uint32_t instance) {
    auto it = live.find(offset);
    if (it != live.end() && it->second.instance == instance)
      spare.push_back(live.extract(it));
  }
  void clear() {
    while (!live.empty())
      spare.push_back(live.extract(live.begin()));
  }

private:
  struct Entry {
    uint32_t instance;
    uint64_t end;
  };
  using Map = std::map<uint64_t, Entry>;
  Map live;
  std::vector<Map::node_type> spare;
};

/// The sweep's intervals by start and by end time (counting sorts, which
/// keep the intervals' order within a time), reused from sweep to sweep.
struct SweepScratch {
  std::vector<size_t> startAt, endAt, starts, ends;
};

/// Sweeps `intervals` (times in [lo, hi]; `place(instance)` gives an
/// instance's offset and bytes) in time order. At each time, first the
/// intervals that end there and started before leave the live set, then
/// those starting there enter it, each checked against it, atTime(time,
/// live bytes) sees the bytes live at that time, and the rest of those
/// ending there leave. Returns the index of the first interval that clashes
/// with a live one (`with`: that instance), or -1 with `live` empty again.
template <typename PlaceFn, typename AtTimeFn>
int64_t sweepIntervals(const std::vector<LiveInterval> &intervals, int64_t lo,
                       int64_t hi, PlaceFn place, AtTimeFn atTime,
                       LiveSet &live, SweepScratch &scratch, uint32_t &with) {
  size_t numTimes = static_cast<size_t>(hi - lo + 1);
  auto bucket = [&](std::vector<size_t> &at, std::vector<size_t> &list,
                    auto timeOf) {
    at.assign(numTimes + 1, 0);
    for (const LiveInterval &interval : intervals)
      ++at[timeOf(interval.life) + 1];
    for (size_t t = 0; t < numTimes; ++t)
      at[t + 1] += at[t];
    list.resize(intervals.size());
    for (size_t v = 0; v < intervals.size(); ++v)
      list[at[timeOf(intervals[v].life)]++] = v;
    // at[t] is now the end of time t's entries: shift back to the starts.
    for (size_t t = numTimes; t > 0; --t)
      at[t] = at[t - 1];
    at[0] = 0;
  };
  bucket(scratch.startAt, scratch.starts,
         [&](const Lifetime &life) { return size_t(life.first - lo); });
  bucket(scratch.endAt, scratch.ends,
         [&](const Lifetime &life) { return size_t(life.last - lo); });
  uint64_t liveBytes = 0;
  for (size_t t = 0; t < numTimes; ++t) {
    for (size_t e = scratch.endAt[t]; e < scratch.endAt[t + 1]; ++e) {
      const LiveInterval &interval = intervals[scratch.ends[e]];
      if (size_t(interval.life.first - lo) < t)
        live.erase(place(interval.instance).first, interval.instance);
    }
    for (size_t s = scratch.startAt[t]; s < scratch.startAt[t + 1]; ++s) {
      uint32_t i = intervals[scratch.starts[s]].instance;
      auto [offset, bytes] = place(i);
      liveBytes += bytes;
      if (bytes == 0)
        continue;
      int64_t clash = live.clash(offset, bytes);
      if (clash >= 0) {
        with = static_cast<uint32_t>(clash);
        live.clear();
        return static_cast<int64_t>(scratch.starts[s]);
      }
      live.insert(offset, bytes, i);
    }
    atTime(static_cast<int64_t>(t) + lo, liveBytes);
    for (size_t e = scratch.endAt[t]; e < scratch.endAt[t + 1]; ++e) {
      const LiveInterval &interval = intervals[scratch.ends[e]];
      auto [offset, bytes] = place(interval.instance);
      liveBytes -= bytes;
      if (size_t(interval.life.first - lo) == t)
        live.erase(offset, interval.instance);
    }
  }
  return -1;
}

/// checkPlanAndMeasurePeak over the runs: one sweep over every interval of
/// program.instanceIntervals (each in runs of the step).
Status sweepPlan(Program &program) {
  std::vector<uint32_t> bufferOf(program.numInstances);
  for (uint32_t b = 0; b < program.buffers.size(); ++b)
    for (uint32_t s = 0, n = slotsOf(program, program.buffers[b]); s < n; ++s)
      bufferOf[program.instanceBase[b] + s] = b;
  auto place = [&](uint32_t i) {
    const TensorRef &t = program.buffers[bufferOf[i]];
    uint32_t slot = i - program.instanceBase[t.buffer];
    return std::make_pair(t.offset + slot * t.poolStride, t.bytes);
  };
  uint64_t peak = 0;
  LiveSet live;
  SweepScratch scratch;
  uint32_t with = 0;
  int64_t v = sweepIntervals(
      program.instanceIntervals, Lifetime::kLoad,
      static_cast<int64_t>(program.numRuns), place,
      [&](int64_t, uint64_t bytes) { peak = std::max(peak, bytes); }, live,
      scratch, with);
  if (v < 0) {
    program.peakBytes = peak;
    return Status::ok();
  }
  auto text = [&](uint32_t i) {
    TensorRef at = program.buffers[bufferOf[i]];
    at.offset = place(i).first;
    return std::to_string(at.buffer) +
           (at.pool >= 0
                ? " slot " + std::to_string(i - program.instanceBase[at.buffer])
                : "") +
           " (bytes " + rangeText(at) + ")";
  };
  // "at load", or the run's action and kernel.
  const LiveInterval &clashing = program.instanceIntervals[v];
  std::string when = "at the end";
  if (clashing.life.first == Lifetime::kLoad)
    when = "at load";
  for (size_t a = 0, run = clashing.life.first;
       a < program.actions.size() && clashing.life.first >= 0; ++a) {
    const ActionRef &action = program.actions[a];
    if (run < action.end - action.begin) {
      when = "at " + runText(program, a, program.calls[action.begin + run]);
      break;
    }
    run -= action.end - action.begin;
  }
  return Status::error("buffers " + text(with) + " and " +
                       text(clashing.instance) +
                       " share arena bytes while both are live " + when);
}

/// A function's side of the summarized plan check, the same in each run.
struct FunctionPlan {
  /// Its temporaries of some bytes by offset, [offset, end), with their
  /// intervals in the run, and the largest end up to each.
  struct Extent {
    uint64_t offset, end;
    Lifetime life;
  };
  std::vector<Extent> temporaries;
  std::vector<uint64_t> reach;
  /// The bytes its temporaries use, as disjoint ranges by offset.
  std::vector<std::pair<uint64_t, uint64_t>> bytes;
  /// The positions where a boundary interval may start or stop counting
  /// (0 and the run's length included), and the most bytes its temporaries
  /// hold at once between each and the next.
  std::vector<uint32_t> cuts;
  std::vector<uint64_t> most;
  /// Boundary touches in sweep order: at a position, the intervals read
  /// last there that started before leave (phase 0), those written first
  /// there enter (1), then those both written first and read last there
  /// leave (2).
  struct Event {
    uint32_t position;
    uint8_t phase;
    uint32_t touch;
  };
  std::vector<Event> events;
  /// The peak's steps: at cut `cut`, a boundary interval starts counting
  /// (it is written first at the cut) or stops (read last just before).
  struct Step {
    uint32_t cut;
    uint32_t touch;
    bool starts;
  };
  std::vector<Step> steps;
  /// Per boundary touch, its cells of the clash memo: 2 per slot (SIZE_MAX
  /// where no slot of it shares a byte with the temporaries: none clashes).
  std::vector<size_t> memo;

  /// Whether a temporary shares a byte with [offset, offset + size) and
  /// clashes with an interval that reaches over the run `within` (first -1:
  /// from before the run; last the run's length: past it).
  bool clashes(uint64_t offset, uint64_t size, const Lifetime &within) const {
    if (size == 0)
      return false;
    auto above = std::lower_bound(
        temporaries.begin(), temporaries.end(), offset + size,
        [](const Extent &e, uint64_t value) { return e.offset < value; });
    for (size_t i = above - temporaries.begin(); i-- > 0 && reach[i] > offset;)
      if (temporaries[i].end > offset &&
          livesClash(temporaries[i].life, within))
        return true;
    return false;
  }
  /// Whether its temporaries use a byte of [offset, offset + size).
  bool uses(uint64_t offset, uint64_t size) const {
    auto above =
        std::lower_bound(bytes.begin(), bytes.end(), offset + size,
                         [](const std::pair<uint64_t, uint64_t> &range,
                            uint64_t value) { return range.first < value; });
    return size && above != bytes.begin() && std::prev(above)->second > offset;
  }
};

/// Builds `plan` for a function run by the step; false if its temporaries
/// clash within a run.
bool planFunction(const Program &program, const FunctionRuns &runs,
                  FunctionPlan &plan, LiveSet &live, SweepScratch &scratch) {
  // One run's temporaries, swept as the whole step is; their live bytes at
  // each position of the run.
  std::vector<LiveInterval> intervals;
  intervals.reserve(runs.temporaries.size());
  for (uint32_t i = 0; i < runs.temporaries.size(); ++i)
    intervals.push_back({i,
                         {int64_t(runs.temporaries[i].first),
                          int64_t(runs.temporaries[i].last)}});
  auto place = [&](uint32_t i) {
    const TensorRef &t = program.buffers[runs.temporaries[i].buffer];
    return std::make_pair(t.offset, t.bytes);
  };
  std::vector<uint64_t> profile(runs.count, 0);
  uint32_t with = 0;
  if (sweepIntervals(
          intervals, 0, int64_t(runs.count) - 1, place,
          [&](int64_t time, uint64_t bytes) { profile[time] = bytes; }, live,
          scratch, with) >= 0)
    return false;

  for (const LiveInterval &interval : intervals) {
    auto [offset, bytes] = place(interval.instance);
    if (bytes)
      plan.temporaries.push_back({offset, offset + bytes, interval.life});
  }
  std::sort(plan.temporaries.begin(), plan.temporaries.end(),
            [](const FunctionPlan::Extent &x, const FunctionPlan::Extent &y) {
              return x.offset < y.offset;
            });
  for (const FunctionPlan::Extent &e : plan.temporaries) {
    plan.reach.push_back(
        std::max(plan.reach.empty() ? 0 : plan.reach.back(), e.end));
    if (!plan.bytes.empty() && e.offset <= plan.bytes.back().second)
      plan.bytes.back().second = std::max(plan.bytes.back().second, e.end);
    else
      plan.bytes.emplace_back(e.offset, e.end);
  }

  plan.cuts = {0, runs.count};
  for (const Touch &touch : runs.boundary) {
    if (!touch.reads)
      plan.cuts.push_back(touch.first);
    plan.cuts.push_back(touch.last + 1);
  }
  std::sort(plan.cuts.begin(), plan.cuts.end());
  plan.cuts.erase(std::unique(plan.cuts.begin(), plan.cuts.end()),
                  plan.cuts.end());
  for (size_t i = 0; i + 1 < plan.cuts.size(); ++i)
    plan.most.push_back(*std::max_element(profile.begin() + plan.cuts[i],
                                          profile.begin() + plan.cuts[i + 1]));
  auto cutAt = [&](uint32_t position) {
    return static_cast<uint32_t>(
        std::lower_bound(plan.cuts.begin(), plan.cuts.end(), position) -
        plan.cuts.begin());
  };
  for (uint32_t j = 0; j < runs.boundary.size(); ++j) {
    const Touch &touch = runs.boundary[j];
    bool before = touch.reads || touch.first < touch.last;
    if (!touch.reads) {
      plan.events.push_back({touch.first, 1, j});
      plan.steps.push_back({cutAt(touch.first), j, true});
    }
    plan.events.push_back({touch.last, uint8_t(before ? 0 : 2), j});
    plan.steps.push_back({cutAt(touch.last + 1), j, false});
  }
  std::sort(plan.events.begin(), plan.events.end(),
            [](const FunctionPlan::Event &x, const FunctionPlan::Event &y) {
              return std::make_pair(x.position, x.phase) <
                     std::make_pair(y.position, y.phase);
            });
  std::sort(plan.steps.begin(), plan.steps.end(),
            [](const FunctionPlan::Step &x, const FunctionPlan::Step &y) {
              return x.cut < y.cut;
            });
  return true;
}

/// The instances that summarizedPlan's live set may hold (params, state
/// and inputs live from load, the slots of the functions' boundary buffers)
/// that share no byte with another of them. Such an instance clashes with
/// nothing while it lives (bar a second entry of its own), so the sweep
/// need not place it among the others by offset. O(n log n) in the
/// instances: no pairs are listed.
std::vector<bool> aloneInstances(const Program &program,
                                 const StepSummary &summary) {
  std::vector<uint32_t> bufferOf(program.numInstances);
  for (uint32_t b = 0; b < program.buffers.size(); ++b)
    for (uint32_t s = 0, n = slotsOf(program, program.buffers[b]); s < n; ++s)
      bufferOf[program.instanceBase[b] + s] = b;
  std::vector<bool> candidate(program.buffers.size(), false);
  for (const LiveInterval &interval : program.instanceIntervals)
    if (interval.life.first == Lifetime::kLoad)
      candidate[bufferOf[interval.instance]] = true;
  for (const FunctionRuns &runs : summary.functions)
    if (runs.count)
      for (const Touch &touch : runs.boundary)
        candidate[touch.buffer] = true;
  struct Extent {
    uint64_t offset, end;
    uint32_t instance;
  };
  std::vector<Extent> extents;
  for (uint32_t b = 0; b < program.buffers.size(); ++b) {
    const TensorRef &t = program.buffers[b];
    if (!candidate[b] || t.bytes == 0)
      continue;
    for (uint32_t s = 0, n = slotsOf(program, t); s < n; ++s)
      extents.push_back({t.offset + s * t.poolStride,
                         t.offset + s * t.poolStride + t.bytes,
                         program.instanceBase[b] + s});
  }
  std::sort(extents.begin(), extents.end(),
            [](const Extent &x, const Extent &y) { return x.offset < y.offset; });
  // By offset: one shares a byte with an earlier one if it starts below the
  // furthest end before it, with a later one if the next starts below its
  // end.
  std::vector<bool> alone(program.numInstances, true);
  uint64_t reach = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    if ((i > 0 && extents[i].offset < reach) ||
        (i + 1 < extents.size() && extents[i + 1].offset < extents[i].end))
      alone[extents[i].instance] = false;
    reach = std::max(reach, extents[i].end);
  }
  return alone;
}

/// checkPlanAndMeasurePeak from the summary and the intervals that
/// summarizedLifetimes (or the replay) made. Sweeps the actions with the
/// live params, state, inputs and boundary instances by offset, each action
/// at its function's boundary touches; a run's temporaries are checked once
/// against each other (planFunction) and, per action, against the boundary
/// instances the run touches (their interval within the run) and the others
/// live throughout it (counted per function: those sharing bytes with its
/// temporaries). The peak at a run's position: the boundary bytes then plus
/// the function's temporaries' most over the cut. False where the plan may
/// clash: the replay's sweep says where. Per action it reads only the
/// function's boundary touches and what they address; an instance sharing
/// no byte with another (aloneInstances) is marked live rather than placed
/// by offset.
bool summarizedPlan(Program &program, const StepSummary &summary) {
  size_t numFunctions = summary.functions.size();
  LiveSet live;
  SweepScratch scratch;
  std::vector<FunctionPlan> plans(numFunctions);
  std::vector<uint8_t> memo;
  size_t widest = 0;
  for (uint32_t f = 0; f < numFunctions; ++f) {
    const FunctionRuns &runs = summary.functions[f];
    if (runs.count == 0)
      continue;
    if (!planFunction(program, runs, plans[f], live, scratch))
      return false;
    for (size_t j = 0; j < runs.boundary.size(); ++j) {
      // Whether any slot of the buffer shares a byte with the function's
      // temporaries: else none clashes with them.
      const Place &place = runs.places[j];
      uint32_t slots =
          slotsOf(program, program.buffers[runs.boundary[j].buffer]);
      bool near = place.bytes &&
                  plans[f].uses(place.offset,
                                (slots - 1) * place.stride + place.bytes);
      plans[f].memo.push_back(near ? memo.size() : SIZE_MAX);
      if (near)
        memo.resize(memo.size() + 2 * slots);
    }
    widest = std::max(widest, runs.boundary.size());
  }

  // The intervals in runs of the step (not those of a run of a function),
  // by instance: the next one of each to start, and the one before it once
  // the sweep has taken that (at load or at a write), for the reads to
  // continue without looking it up again. One entry per instance, so that
  // a touch reads one place.
  const std::vector<LiveInterval> &intervals = program.instanceIntervals;
  struct Cursor {
    size_t next = SIZE_MAX;
    /// first INT64_MIN: none taken (no interval starts there).
    Lifetime taken{INT64_MIN, INT64_MIN};
    bool isTaken() const { return taken.first != INT64_MIN; }
  };
  std::vector<Cursor> cursors(program.numInstances);
  for (size_t v = intervals.size(); v-- > 0;)
    if (intervals[v].function == LiveInterval::kWholeStep)
      cursors[intervals[v].instance].next = v;

  // The functions whose temporaries share bytes with each live instance,
  // listed once per instance ([count, functions...] in `over`), and how
  // many live instances share bytes with each function's.
  std::vector<size_t> overAt(program.numInstances, SIZE_MAX);
  std::vector<uint32_t> over;
  std::vector<int64_t> sharing(numFunctions, 0);
  // The bytes any function's temporaries use: an instance outside them is
  // over none (the pooled slots, many, mostly are).
  FunctionPlan any;
  for (const FunctionPlan &plan : plans)
    any.bytes.insert(any.bytes.end(), plan.bytes.begin(), plan.bytes.end());
  std::sort(any.bytes.begin(), any.bytes.end());
  size_t merged = 0;
  for (const auto &range : any.bytes)
    if (merged && range.first <= any.bytes[merged - 1].second)
      any.bytes[merged - 1].second =
          std::max(any.bytes[merged - 1].second, range.second);
    else
      any.bytes[merged++] = range;
  any.bytes.resize(merged);
  auto functionsOver = [&](uint32_t instance, uint64_t offset, uint64_t bytes) {
    if (overAt[instance] == SIZE_MAX) {
      overAt[instance] = over.size();
      over.push_back(0);
      bool near = any.uses(offset, bytes);
      for (uint32_t f = 0; near && f < numFunctions; ++f)
        if (plans[f].uses(offset, bytes)) {
          over.push_back(f);
          ++over[overAt[instance]];
        }
    }
    return std::make_pair(over.begin() + overAt[instance] + 1,
                          over.begin() + overAt[instance] + 1 +
                              over[overAt[instance]]);
  };
  // An instance that shares no byte with any other that may be live with
  // it (alone) cannot clash but with itself: a flag says whether it is
  // live, and the live set by offset holds only the others (any clash of
  // theirs is with one of them).
  std::vector<bool> alone = aloneInstances(program, summary);
  std::vector<bool> isLive(program.numInstances, false);
  auto enter = [&](uint32_t instance, uint64_t offset, uint64_t bytes) {
    if (bytes == 0)
      return true;
    if (alone[instance]) {
      if (isLive[instance])
        return false;
      isLive[instance] = true;
    } else {
      if (live.clash(offset, bytes) >= 0)
        return false;
      live.insert(offset, bytes, instance);
    }
    auto [first, last] = functionsOver(instance, offset, bytes);
    for (auto it = first; it != last; ++it)
      ++sharing[*it];
    return true;
  };
  auto leave = [&](uint32_t instance, uint64_t offset, uint64_t bytes) {
    if (bytes == 0)
      return;
    if (alone[instance])
      isLive[instance] = false;
    else
      live.erase(offset, instance);
    auto [first, last] = functionsOver(instance, offset, bytes);
    for (auto it = first; it != last; ++it)
      --sharing[*it];
  };

  // At load: the persistent instances.
  uint64_t liveBytes = 0;
  for (uint32_t b = 0; b < program.buffers.size(); ++b) {
    const TensorRef &t = program.buffers[b];
    for (uint32_t s = 0, n = slotsOf(program, t); s < n; ++s) {
      uint32_t instance = program.instanceBase[b] + s;
      Cursor &cursor = cursors[instance];
      size_t v = cursor.next;
      if (v == SIZE_MAX || intervals[v].life.first != Lifetime::kLoad)
        continue;
      ++cursor.next;
      cursor.taken = intervals[v].life;
      liveBytes += t.bytes;
      if (!enter(instance, t.offset + s * t.poolStride, t.bytes))
        return false;
    }
  }
  uint64_t peak = liveBytes;

  // Per boundary touch of the current action: its instance, where it lies,
  // and whether its interval ends in this run.
  struct Current {
    uint32_t instance;
    uint32_t slot;
    uint64_t offset, bytes;
    bool ends;
  };
  std::vector<Current> current(widest);
  for (size_t a = 0; a < program.actions.size(); ++a) {
    const ActionRef &action = program.actions[a];
    const FunctionRuns &runs = summary.functions[action.function];
    const FunctionPlan &plan = plans[action.function];
    int64_t start = summary.starts[a];
    auto length = static_cast<int64_t>(runs.count);
    int64_t throughout = sharing[action.function];
    // The intervals this action's writes take, asked for ahead: the step's
    // intervals are many and an action's lie far apart.
    for (size_t j = 0; j < runs.boundary.size(); ++j)
      if (!runs.boundary[j].reads) {
        const Place &place = runs.places[j];
        size_t v =
            cursors[place.base + place.slotOf(action.microbatch, action.slot)]
                .next;
        if (v < intervals.size())
          __builtin_prefetch(&intervals[v]);
      }
    for (size_t j = 0; j < runs.boundary.size(); ++j) {
      const Touch &touch = runs.boundary[j];
      const Place &place = runs.places[j];
      Current &c = current[j];
      c.slot = place.slotOf(action.microbatch, action.slot);
      c.instance = place.base + c.slot;
      c.offset = place.offset + c.slot * place.stride;
      c.bytes = place.bytes;
      // The instance's interval: the next one if this run starts it (the
      // one before next, if taken, is the cursor's).
      Cursor &cursor = cursors[c.instance];
      Lifetime life;
      if (touch.reads && cursor.isTaken()) {
        life = cursor.taken;
        if (life.first >= start + touch.first)
          return false;
      } else {
        size_t mine = touch.reads ? cursor.next - 1 : cursor.next++;
        if (mine >= intervals.size() || intervals[mine].instance != c.instance ||
            (touch.reads ? intervals[mine].life.first >= start + touch.first
                         : intervals[mine].life.first != start + touch.first))
          return false;
        life = intervals[mine].life;
        if (!touch.reads)
          cursor.taken = life;
      }
      c.ends = life.last == start + touch.last;
      // Against the temporaries: the interval within the run.
      Lifetime within{touch.reads ? -1 : int64_t(touch.first),
                      c.ends ? int64_t(touch.last) : length};
      if (touch.reads && !c.ends) // live throughout: counted in `sharing`
        continue;
      if (plan.memo[j] == SIZE_MAX) // no slot near the temporaries
        continue;
      if (touch.reads && c.bytes && plan.uses(c.offset, c.bytes))
        --throughout;
      uint8_t &known = memo[plan.memo[j] + 2 * c.slot + c.ends];
      if (!known)
        known = plan.clashes(c.offset, c.bytes, within) ? 2 : 1;
      if (known == 2)
        return false;
    }
    if (throughout > 0)
      return false;
    for (const FunctionPlan::Event &event : plan.events) {
      const Current &c = current[event.touch];
      if (event.phase == 1) {
        if (!enter(c.instance, c.offset, c.bytes))
          return false;
      } else if (c.ends) {
        leave(c.instance, c.offset, c.bytes);
      }
    }
    size_t step = 0;
    auto stepTo = [&](size_t cut) {
      for (; step < plan.steps.size() && plan.steps[step].cut == cut; ++step) {
        const FunctionPlan::Step &s = plan.steps[step];
        const Current &c = current[s.touch];
        if (s.starts)
          liveBytes += c.bytes;
        else if (c.ends)
          liveBytes -= c.bytes;
      }
    };
    for (size_t i = 0; i < plan.most.size(); ++i) {
      stepTo(i);
      peak = std::max(peak, liveBytes + plan.most[i]);
    }
    stepTo(plan.most.size());
  }
  // At the end: what lives on (outputs, grads, the persistent instances).
  program.peakBytes = std::max(peak, liveBytes);
  return true;
}

} // namespace

Status tpcrt::computeLifetimes(Program &program) {
  Roles roles;
  if (Status s = claimRoles(program, roles); !s)
    return s;
  if (program.hasActions() &&
      summarizedLifetimes(program, roles, summarize(program, roles)))
    return Status::ok();
  return replayLifetimes(program, roles);
}

Status tpcrt::checkPlanAndMeasurePeak(Program &program) {
  if (!program.hasActions())
    return sweepPlan(program);
  Roles roles;
  if (Status s = claimRoles(program, roles); !s)
    return s;
  if (summarizedPlan(program, summarize(program, roles)))
    return Status::ok();
  // A clash somewhere: the intervals run by run tell where.
  if (Status s = replayLifetimes(program, roles); !s)
    return s;
  return sweepPlan(program);
}

std::vector<Lifetime> Program::intervalsOf(uint32_t instance) const {
  std::vector<Lifetime> list;
  auto first = std::lower_bound(
      instanceIntervals.begin(), instanceIntervals.end(), instance,
      [](const LiveInterval &x, uint32_t i) { return x.instance < i; });
  for (auto it = first;
       it != instanceIntervals.end() && it->instance == instance; ++it) {
    if (it->function == LiveInterval::kWholeStep) {
      list.push_back(it->life);
      continue;
    }
    int64_t start = 0;
    for (const ActionRef &action : actions) {
      if (action.function == it->function)
        list.push_back({start + it->life.first, start + it->life.last});
      start += action.end - action.begin;
    }
  }
  return list;
}
