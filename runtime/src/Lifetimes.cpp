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
//===----------------------------------------------------------------------===//

#include "ProgramChecks.h"
#include "tpcrt/KernelTable.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>

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

} // namespace

/// Derives the lifetimes from the runs and checks that nothing is read
/// before it is written, that inputs are only read and that params and
/// state are written only by the in-place updates of the optimizer. Times
/// are run indices (positions in program.calls without actions): the
/// params, state and inputs live from load are those the stage owns, the
/// outputs and grads live to the end too (their last interval); a buffer is
/// at most one param, state or input whatever the stages. With actions an
/// instance has an interval per action that writes it before reading it
/// (LiveInterval); without actions exactly one, today's lifetime.
Status tpcrt::computeLifetimes(Program &program) {
  size_t numBuffers = program.buffers.size();
  auto end = static_cast<int64_t>(program.numRuns);
  enum class Role { None, Param, Input, State };
  std::vector<Role> roles(numBuffers, Role::None);
  std::vector<std::string> owners(numBuffers);
  // Each instance's current interval (INT64_MAX: never written yet), the
  // action that last touched it and whether it persists (one interval).
  std::vector<Lifetime> lives(program.numInstances, Lifetime{INT64_MAX, -1});
  std::vector<uint32_t> touchedBy(program.numInstances, UINT32_MAX);
  std::vector<bool> persists(program.numInstances, false);
  // The intervals that a later action's write closed.
  std::vector<LiveInterval> closed;
  const std::vector<uint32_t> &base = program.instanceBase;

  auto claim = [&](uint32_t buffer, Role role, const std::string &owner) {
    if (roles[buffer] != Role::None)
      return Status::error(owner + " uses buffer " + std::to_string(buffer) +
                           ", which is already " + owners[buffer]);
    roles[buffer] = role;
    owners[buffer] = owner;
    if (program.ownsBuffer(buffer))
      for (uint32_t s = 0, n = slotsOf(program, program.buffers[buffer]); s < n;
           ++s) {
        lives[base[buffer] + s] = {Lifetime::kLoad, end};
        persists[base[buffer] + s] = true;
      }
    return Status::ok();
  };
  for (size_t i = 0; i < program.params.size(); ++i) {
    const ParamRef &param = program.params[i];
    if (Status s =
            claim(param.buffer, Role::Param,
                  "param " + std::to_string(i) + " ('" + param.hfName + "')");
        !s)
      return s;
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const BindingRef &input = program.inputs[i];
    if (Status s =
            claim(input.buffer, Role::Input,
                  "input " + std::to_string(i) + " ('" + input.name + "')");
        !s)
      return s;
  }
  for (size_t i = 0; i < program.state.size(); ++i) {
    const StateRef &state = program.state[i];
    if (Status s = claim(state.buffer, Role::State,
                         "state " + std::to_string(i) + " ('" +
                             program.params[state.param].hfName + "." +
                             state.name + "')");
        !s)
      return s;
  }

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
        Role role = roles[buffer];
        bool update = inPlaceOperand(call.op, j) >= 0;
        if (role == Role::Input || (role != Role::None && !update))
          return Status::error(
              runText(program, a, call) + ": " + resultRole(call.op, j) +
              " is buffer " + std::to_string(buffer) + ", " + owners[buffer] +
              ", which " +
              (role == Role::Input ? "kernels only read"
                                   : "only the optimizer updates in place"));
        uint32_t instance = base[buffer] + result.slotOf(mb, slot);
        Lifetime &life = lives[instance];
        // A write by an action that has not touched the instance yet (not
        // an operand of this kernel either) starts a new interval: the
        // value of an earlier action is dead from here on.
        if (life.first != INT64_MAX && touchedBy[instance] != a &&
            !persists[instance]) {
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
      life.last = end;
    }
    return Status::ok();
  };
  if (Status s = toEnd(program.outputs, "output"); !s)
    return s;
  if (Status s = toEnd(program.grads, "grad"); !s)
    return s;
  // Each instance's intervals in time order: the closed ones (already in
  // that order per instance), then the current one.
  std::vector<LiveInterval> &intervals = program.instanceIntervals;
  intervals.clear();
  intervals.reserve(closed.size() + lives.size());
  std::stable_sort(closed.begin(), closed.end(),
                   [](const LiveInterval &x, const LiveInterval &y) {
                     return x.instance < y.instance;
                   });
  std::vector<Lifetime> &spans = program.instanceLifetimes;
  spans.assign(program.numInstances, Lifetime{0, -1});
  size_t next = 0;
  for (uint32_t i = 0; i < program.numInstances; ++i) {
    for (; next < closed.size() && closed[next].instance == i; ++next)
      intervals.push_back(closed[next]);
    if (lives[i].first != INT64_MAX)
      intervals.push_back({i, lives[i]});
  }
  for (const LiveInterval &interval : intervals) {
    Lifetime &span = spans[interval.instance];
    if (!span.live())
      span = interval.life;
    span.last = std::max(span.last, interval.life.last);
  }
  const std::vector<Lifetime> &lifeOf = spans;
  // A buffer's lifetime: the span of its instances'.
  program.lifetimes.assign(numBuffers, Lifetime{0, -1});
  for (uint32_t b = 0; b < numBuffers; ++b) {
    Lifetime &span = program.lifetimes[b];
    for (uint32_t s = 0, n = slotsOf(program, program.buffers[b]); s < n; ++s) {
      const Lifetime &life = lifeOf[base[b] + s];
      if (!life.live())
        continue;
      if (!span.live())
        span = life;
      span.first = std::min(span.first, life.first);
      span.last = std::max(span.last, life.last);
    }
  }
  return Status::ok();
}

/// Sweeps the runs in order with the set of live instances sorted by
/// offset: an instance whose interval starts must not overlap its
/// neighbours there.
/// An instance read for the last time by run t leaves the set before run
/// t's results enter it (checkAliasing already decided which results may
/// reuse an operand's bytes). The same sweep measures the peak.
Status tpcrt::checkPlanAndMeasurePeak(Program &program) {
  size_t numInstances = program.numInstances;
  // Each instance's buffer and slot.
  std::vector<uint32_t> bufferOf(numInstances), slotOf(numInstances);
  for (uint32_t b = 0; b < program.buffers.size(); ++b)
    for (uint32_t s = 0, n = slotsOf(program, program.buffers[b]); s < n;
         ++s) {
      bufferOf[program.instanceBase[b] + s] = b;
      slotOf[program.instanceBase[b] + s] = s;
    }
  auto offsetOf = [&](uint32_t i) {
    const TensorRef &t = program.buffers[bufferOf[i]];
    return t.offset + slotOf[i] * t.poolStride;
  };
  auto bytesOf = [&](uint32_t i) { return program.buffers[bufferOf[i]].bytes; };
  auto text = [&](uint32_t i) {
    const TensorRef &t = program.buffers[bufferOf[i]];
    TensorRef at = t;
    at.offset = offsetOf(i);
    return std::to_string(t.buffer) +
           (t.pool >= 0 ? " slot " + std::to_string(slotOf[i]) : "") +
           " (bytes " + rangeText(at) + ")";
  };

  // The live intervals starting and ending at each time (indices into
  // instanceIntervals); an instance's intervals are disjoint in time.
  const std::vector<LiveInterval> &intervals = program.instanceIntervals;
  size_t numTimes = program.numRuns + 2;
  std::vector<std::vector<size_t>> starts(numTimes), ends(numTimes);
  for (size_t v = 0; v < intervals.size(); ++v) {
    const Lifetime &life = intervals[v].life;
    if (!life.live())
      continue;
    starts[life.first + 1].push_back(v);
    ends[life.last + 1].push_back(v);
  }
  std::map<uint64_t, uint32_t> live; // offset -> instance, non-empty only
  auto release = [&](uint32_t i) {
    auto it = live.find(offsetOf(i));
    if (it != live.end() && it->second == i)
      live.erase(it);
  };
  uint64_t liveBytes = 0, peak = 0;
  // "at load", or the run `time - 1`.
  auto when = [&](size_t time) {
    if (time == 0)
      return std::string("at load");
    uint64_t run = time - 1;
    for (size_t a = 0; a < program.actions.size(); ++a) {
      const ActionRef &action = program.actions[a];
      uint64_t count = action.end - action.begin;
      if (run < count)
        return "at " + runText(program, a, program.calls[action.begin + run]);
      run -= count;
    }
    return std::string("at the end");
  };
  for (size_t time = 0; time < numTimes; ++time) {
    for (size_t v : ends[time])
      if (intervals[v].life.first + 1 < static_cast<int64_t>(time))
        release(intervals[v].instance);
    for (size_t v : starts[time]) {
      uint32_t i = intervals[v].instance;
      uint64_t offset = offsetOf(i), bytes = bytesOf(i);
      liveBytes += bytes;
      if (bytes == 0)
        continue;
      auto next = live.lower_bound(offset);
      int64_t clash = -1;
      if (next != live.end() && next->first < offset + bytes)
        clash = next->second;
      else if (next != live.begin()) {
        uint32_t prev = std::prev(next)->second;
        if (offsetOf(prev) + bytesOf(prev) > offset)
          clash = prev;
      }
      if (clash >= 0)
        return Status::error("buffers " + text(static_cast<uint32_t>(clash)) +
                             " and " + text(i) +
                             " share arena bytes while both are live " +
                             when(time));
      live.emplace(offset, i);
    }
    peak = std::max(peak, liveBytes);
    for (size_t v : ends[time]) {
      uint32_t i = intervals[v].instance;
      liveBytes -= bytesOf(i);
      if (intervals[v].life.first + 1 == static_cast<int64_t>(time))
        release(i);
    }
  }
  program.peakBytes = peak;
  return Status::ok();
}
