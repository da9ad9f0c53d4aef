//===- Lifetimes.cpp - buffer lifetimes, the plan, the peak ---------------===//
//
// The buffer lifetimes follow from the kernel order; they give the measured
// peak and check the plan's offsets: two buffers live at the same time must
// not share a byte of the arena.
//
//===----------------------------------------------------------------------===//

#include "ProgramChecks.h"
#include "tpcrt/KernelTable.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

using namespace tpcrt;

/// Derives the lifetimes from the kernel order and checks that nothing is
/// read before it is written, that inputs are only read and that params and
/// state are written only by the in-place updates of the optimizer. Times
/// are positions in program.calls (one stage's kernels on a pipeline): the
/// params, state and inputs live from load are those the stage owns, the
/// outputs and grads live to the end too; a buffer is at most one param,
/// state or input whatever the stages.
Status tpcrt::computeLifetimes(Program &program) {
  size_t numBuffers = program.buffers.size();
  auto numKernels = static_cast<int64_t>(program.calls.size());
  enum class Role { None, Param, Input, State };
  std::vector<Role> roles(numBuffers, Role::None);
  std::vector<std::string> owners(numBuffers);
  program.lifetimes.assign(numBuffers, Lifetime{INT64_MAX, -1});

  auto claim = [&](uint32_t buffer, Role role, const std::string &owner) {
    if (roles[buffer] != Role::None)
      return Status::error(owner + " uses buffer " + std::to_string(buffer) +
                           ", which is already " + owners[buffer]);
    roles[buffer] = role;
    owners[buffer] = owner;
    if (program.ownsBuffer(buffer))
      program.lifetimes[buffer] = {Lifetime::kLoad, numKernels};
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

  for (size_t position = 0; position < program.calls.size(); ++position) {
    const KernelCall &call = program.calls[position];
    auto t = static_cast<int64_t>(position);
    for (size_t j = 0; j < call.operands.size(); ++j) {
      Lifetime &life = program.lifetimes[call.operands[j].buffer];
      if (life.first >= t)
        return Status::error(kernelText(call) + ": " + operandRole(call.op, j) +
                             " (buffer " +
                             std::to_string(call.operands[j].buffer) +
                             ") is read before any kernel writes it");
      life.last = std::max(life.last, t);
    }
    for (size_t j = 0; j < call.results.size(); ++j) {
      uint32_t buffer = call.results[j].buffer;
      Role role = roles[buffer];
      bool update = inPlaceOperand(call.op, j) >= 0;
      if (role == Role::Input || (role != Role::None && !update))
        return Status::error(
            kernelText(call) + ": " + resultRole(call.op, j) +
            " is buffer " + std::to_string(buffer) + ", " + owners[buffer] +
            ", which " +
            (role == Role::Input ? "kernels only read"
                                 : "only the optimizer updates in place"));
      Lifetime &life = program.lifetimes[buffer];
      life.first = std::min(life.first, t);
      life.last = std::max(life.last, t);
    }
  }
  auto toEnd = [&](const std::vector<BindingRef> &list, const char *kind) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (!program.ownsBuffer(list[i].buffer))
        continue;
      Lifetime &life = program.lifetimes[list[i].buffer];
      if (life.first == INT64_MAX)
        return Status::error(std::string(kind) + " " + std::to_string(i) +
                             " ('" + list[i].name +
                             "') is never written by a kernel");
      life.last = numKernels;
    }
    return Status::ok();
  };
  if (Status s = toEnd(program.outputs, "output"); !s)
    return s;
  if (Status s = toEnd(program.grads, "grad"); !s)
    return s;
  for (Lifetime &life : program.lifetimes)
    if (life.first == INT64_MAX)
      life = Lifetime{0, -1};
  return Status::ok();
}

/// Sweeps the kernels in order with the set of live buffers sorted by
/// offset: a buffer becoming live must not overlap its neighbours there. A
/// buffer read for the last time by kernel t leaves the set before kernel
/// t's results enter it (checkAliasing already decided which results may
/// reuse an operand's bytes). The same sweep measures the peak.
Status tpcrt::checkPlanAndMeasurePeak(Program &program) {
  std::vector<std::vector<uint32_t>> starts(program.calls.size() + 2),
      ends(program.calls.size() + 2);
  for (uint32_t b = 0; b < program.buffers.size(); ++b) {
    const Lifetime &life = program.lifetimes[b];
    if (!life.live())
      continue;
    starts[life.first + 1].push_back(b);
    ends[life.last + 1].push_back(b);
  }
  std::map<uint64_t, uint32_t> live; // offset -> buffer, non-empty only
  auto release = [&](uint32_t b) {
    auto it = live.find(program.buffers[b].offset);
    if (it != live.end() && it->second == b)
      live.erase(it);
  };
  uint64_t liveBytes = 0, peak = 0;
  auto when = [&](size_t slot) {
    return slot == 0 ? std::string("at load")
                     : "at " + kernelText(program.calls[slot - 1]);
  };
  for (size_t slot = 0; slot < starts.size(); ++slot) {
    for (uint32_t b : ends[slot])
      if (program.lifetimes[b].first + 1 < static_cast<int64_t>(slot))
        release(b);
    for (uint32_t b : starts[slot]) {
      const TensorRef &t = program.buffers[b];
      liveBytes += t.bytes;
      if (t.bytes == 0)
        continue;
      auto next = live.lower_bound(t.offset);
      const TensorRef *clash = nullptr;
      if (next != live.end() && next->first < t.offset + t.bytes)
        clash = &program.buffers[next->second];
      else if (next != live.begin()) {
        const TensorRef &prev = program.buffers[std::prev(next)->second];
        if (prev.offset + prev.bytes > t.offset)
          clash = &prev;
      }
      if (clash)
        return Status::error("buffers " + std::to_string(clash->buffer) +
                             " (bytes " + rangeText(*clash) + ") and " +
                             std::to_string(b) + " (bytes " + rangeText(t) +
                             ") share arena bytes while both are live " +
                             when(slot));
      live.emplace(t.offset, b);
    }
    peak = std::max(peak, liveBytes);
    for (uint32_t b : ends[slot]) {
      liveBytes -= program.buffers[b].bytes;
      if (program.lifetimes[b].first + 1 == static_cast<int64_t>(slot))
        release(b);
    }
  }
  program.peakBytes = peak;
  return Status::ok();
}
