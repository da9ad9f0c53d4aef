//===- Interpreter.cpp - runs a verified executable on a device -----------===//

#include "tpcrt/Interpreter.h"
#include "tpcrt/Watchdog.h"
#include "ProgramChecks.h"
#include "tpcrt/Executable.h"

#include <string>

using namespace tpcrt;

namespace {
/// "dp=2,tp=2".
std::string meshText(const Mesh &mesh) {
  std::string text;
  for (size_t i = 0; i < mesh.names.size(); ++i)
    text +=
        (i ? "," : "") + mesh.names[i] + "=" + std::to_string(mesh.sizes[i]);
  return text;
}
} // namespace

Status Interpreter::makeGroups() {
  const Mesh &mesh = program_.mesh;
  int64_t needed = mesh.worldSize();
  if (!mesh.sizes.empty() && !world_)
    return Status::error("the executable's mesh " + meshText(mesh) + " needs " +
                         std::to_string(needed) +
                         " ranks, the run has no communicator");
  int64_t size = world_ ? world_->size() : 1;
  if (size != needed)
    return Status::error(
        (mesh.sizes.empty()
             ? std::string("the executable has no mesh (")
             : "the executable's mesh " + meshText(mesh) + " needs ") +
        std::to_string(needed) + (needed == 1 ? " rank" : " ranks") +
        (mesh.sizes.empty() ? ")" : "") + ", the run has " +
        std::to_string(size));
  int64_t rank = world_ ? world_->rank() : 0;
  if (Status s = placeProgram(program_, rank); !s)
    return s;
  for (const std::vector<uint32_t> &axes : program_.groups) {
    std::unique_ptr<Communicator> group;
    int64_t color = mesh.groupColor(rank, axes);
    int64_t position = mesh.positionIn(program_.coordinates, axes);
    if (Status s = world_->split(static_cast<int>(color),
                                 static_cast<int>(position), group);
        !s)
      return s.withContext("the group over mesh axes " + axesText(axes));
    if (group->size() != mesh.groupSize(axes) || group->rank() != position)
      return Status::error("the group over mesh axes " + axesText(axes) +
                           " has " + std::to_string(group->size()) +
                           " ranks with this one at " +
                           std::to_string(group->rank()) + ", expected " +
                           std::to_string(mesh.groupSize(axes)) + " and " +
                           std::to_string(position));
    group->setLabel(axesText(axes));
    groups_.push_back(std::move(group));
  }
  return Status::ok();
}

std::string Interpreter::axesText(const std::vector<uint32_t> &axes) const {
  std::string text;
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? "," : "") + program_.mesh.names[axes[i]];
  return "[" + text + "]";
}

Status Interpreter::create(const fb::Executable &exe,
                           std::unique_ptr<Device> device, Interpreter &out,
                           Communicator *world) {
  Interpreter result;
  if (Status s = decodeProgram(exe, result.program_); !s)
    return s;
  if (!device)
    return Status::error("no device");
  result.world_ = world;
  if (Status s = result.makeGroups(); !s)
    return s;
  if (Status s = device->allocateArena(result.program_.arenaBytes); !s)
    return s.withContext(device->name());
  std::vector<Communicator *> groups;
  for (const std::unique_ptr<Communicator> &group : result.groups_)
    groups.push_back(group.get());
  if (Status s = device->prepare(result.program_, groups); !s)
    return s.withContext(device->name());
  result.device_ = std::move(device);
  result.timings_.assign(result.program_.numKernels, KernelTiming());
  result.epoch_ = std::chrono::steady_clock::now();
  if (const BindingRef *loss = result.program_.findOutput("loss"))
    result.lossRuns_ = result.program_.runsComputing(loss->buffer);
  if (Status s = result.resetState(); !s)
    return s;
  out = std::move(result);
  return Status::ok();
}

Status Interpreter::resetState() {
  std::vector<uint8_t> zeros;
  for (const StateRef &state : program_.state) {
    if (!program_.ownsBuffer(state.buffer))
      continue;
    const TensorRef &buffer = program_.buffers[state.buffer];
    zeros.assign(buffer.bytes, 0);
    if (Status s = writeBuffer(state.buffer, zeros.data(), zeros.size()); !s)
      return s;
  }
  return Status::ok();
}

namespace {
Status checkCopy(const Program &program, uint32_t buffer, uint64_t bytes,
                 uint32_t slot) {
  if (buffer >= program.buffers.size())
    return Status::error("buffer " + std::to_string(buffer) +
                         " does not exist (the executable has " +
                         std::to_string(program.buffers.size()) + ")");
  if (bytes != program.buffers[buffer].bytes)
    return Status::error("buffer " + std::to_string(buffer) + " holds " +
                         std::to_string(program.buffers[buffer].bytes) +
                         " bytes, not " + std::to_string(bytes));
  const TensorRef &t = program.buffers[buffer];
  uint32_t slots = t.pool < 0 ? 1 : program.pools[t.pool].slots;
  if (slot >= slots)
    return Status::error(
        "buffer " + std::to_string(buffer) + " has no slot " +
        std::to_string(slot) +
        (t.pool < 0 ? std::string(" (it is not pooled)")
                    : " (its pool " + std::to_string(t.pool) + " has " +
                          std::to_string(slots) + ")"));
  // Another stage's buffer: its bytes may be one of this stage's.
  if (!program.ownsBuffer(buffer)) {
    std::string stages;
    for (uint32_t stage : program.bufferStages[buffer])
      stages += (stages.empty() ? "" : ", ") + std::to_string(stage);
    return Status::error(
        "buffer " + std::to_string(buffer) + " belongs to pipeline stage" +
        (program.bufferStages[buffer].size() > 1 ? "s " : " ") + stages +
        ", not to this rank's stage " + std::to_string(program.stage));
  }
  return Status::ok();
}

/// Where slot `slot` of `t` lies (a slot index checkCopy found below the
/// pool's slots, 0 for a buffer that is not pooled), not an action's slot.
uint64_t slotOffset(const TensorRef &t, uint32_t slot) {
  return t.offset + uint64_t(slot) * t.poolStride;
}
} // namespace

Status Interpreter::writeBuffer(uint32_t buffer, const void *data,
                                uint64_t bytes, uint32_t slot) {
  if (Status s = checkCopy(program_, buffer, bytes, slot); !s)
    return s;
  return device_->copyToArena(slotOffset(program_.buffers[buffer], slot), data,
                              bytes);
}

Status Interpreter::readBuffer(uint32_t buffer, void *data, uint64_t bytes,
                               uint32_t slot) {
  if (Status s = checkCopy(program_, buffer, bytes, slot); !s)
    return s;
  if (Status s = device_->synchronize(); !s)
    return s;
  return device_->copyFromArena(slotOffset(program_.buffers[buffer], slot),
                                data, bytes);
}

Status Interpreter::runOne(uint32_t position, uint32_t action,
                           StepContext &context, size_t run) {
  const KernelCall &call = program_.calls[position];
  const ActionRef &a = program_.actions[action];
  context.microbatch = a.microbatch;
  context.slot = a.slot;
  // What the watchdog names if this kernel waits too long (steps from 1).
  setWatchdogPosition(step_ + 1, call.index, opCodeName(call.op));
  std::chrono::steady_clock::time_point start;
  if (timing_ && markedRuns_) {
    // The device times it (runKernels fills the timing in after the step).
    Status s = device_->markRun(run);
    if (s)
      s = device_->execute(call, context);
    if (run < runTimings_.size())
      runTimings_[run] = {call.index, action, KernelTiming()};
    if (!s)
      return withKernelContext(s, call, action, a);
    return s;
  }
  if (timing_)
    start = std::chrono::steady_clock::now();
  Status s = device_->execute(call, context);
  if (timing_) {
    // Time what the kernel did, not when it was queued.
    if (s)
      s = device_->synchronize();
    auto end = std::chrono::steady_clock::now();
    KernelTiming timing{
        std::chrono::duration_cast<std::chrono::nanoseconds>(start - epoch_)
            .count(),
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start)
            .count()};
    if (run < runTimings_.size())
      runTimings_[run] = {call.index, action, timing};
    KernelTiming &total = timings_[call.index];
    if (total.startNs < firstStartNs_)
      total = timing;
    else
      total.durationNs += timing.durationNs;
  }
  if (!s)
    return withKernelContext(s, call, action, a);
  return s;
}

Status Interpreter::withKernelContext(Status s, const KernelCall &call,
                                      uint32_t action,
                                      const ActionRef &a) const {
  s = s.withContext("kernel " + std::to_string(call.index) + " (" +
                    opCodeName(call.op) + ")");
  if (program_.hasActions())
    s = s.withContext(actionText(program_, action, a));
  return s;
}

Status Interpreter::takeMarkedTimings() {
  if (Status s = device_->runDurations(markedDurations_); !s)
    return s.withContext("timing the step's kernels");
  if (markedDurations_.size() != runTimings_.size())
    return Status::error(
        "the device timed " + std::to_string(markedDurations_.size()) +
        " kernel runs of " + std::to_string(runTimings_.size()));
  // The step's kernels start afresh (their device times need not fit the
  // host's clock between steps).
  for (const RunTiming &r : runTimings_)
    timings_[r.kernel] = {-1, 0};
  // Back to back from the step's start, as the device ran them.
  int64_t at = firstStartNs_;
  for (size_t run = 0; run < runTimings_.size(); ++run) {
    RunTiming &r = runTimings_[run];
    r.timing = {at, markedDurations_[run]};
    at += markedDurations_[run];
    KernelTiming &total = timings_[r.kernel];
    if (total.startNs < 0)
      total = r.timing;
    else
      total.durationNs += r.timing.durationNs;
  }
  return Status::ok();
}

Status Interpreter::runKernels(const std::vector<KernelRun> *subset,
                               StepContext context) {
  markedRuns_ = false;
  if (timing_) {
    // Sized once: a later step reuses the storage.
    runTimings_.resize(subset ? subset->size() : program_.numRuns);
    firstStartNs_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - epoch_)
                        .count();
    markedRuns_ = device_->markRuns(runTimings_.size());
  }
  size_t run = 0;
  if (subset) {
    for (const KernelRun &one : *subset)
      if (Status s = runOne(one.call, one.action, context, run++); !s)
        return s;
  } else {
    for (uint32_t a = 0; a < program_.actions.size(); ++a) {
      const ActionRef &action = program_.actions[a];
      for (uint32_t p = action.begin; p < action.end; ++p)
        if (Status s = runOne(p, a, context, run++); !s)
          return s;
    }
  }
  if (Status s = device_->synchronize(); !s || !markedRuns_)
    return s;
  return takeMarkedTimings();
}

Status Interpreter::runStep() {
  const BindingRef *input = program_.findInput("step");
  if (input && program_.ownsBuffer(input->buffer)) {
    auto value = static_cast<int64_t>(step_ + 1);
    if (Status s = writeBuffer(input->buffer, &value, sizeof(value)); !s)
      return s.withContext("input 'step'");
  }
  if (Status s = runKernels(nullptr, StepContext{program_.seed, step_}); !s)
    return s;
  ++step_;
  return Status::ok();
}

Status Interpreter::evaluate() {
  if (!program_.findOutput("loss"))
    return Status::error("the executable has no 'loss' output to evaluate");
  StepContext context{program_.seed, step_};
  context.evaluation = true;
  return runKernels(&lossRuns_, context);
}
