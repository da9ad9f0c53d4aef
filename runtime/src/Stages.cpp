//===- Stages.cpp - the transfers between pipeline stages -----------------===//
//
// On a pipeline (a mesh axis named "pp") each rank runs its stage's kernels
// in file order, and the stages meet only in their transfers (send, recv)
// and in the collectives whose group spans the "pp" axis. Every such call
// blocks until its counterparts reach theirs; checkTransfers plays the
// stages' lists against each other with rendezvous semantics (the worst
// case: a send returns only once its recv has begun), so that a file whose
// stages would wait for each other forever is refused at load.
//
//===----------------------------------------------------------------------===//

#include "ProgramChecks.h"
#include "tpcrt/KernelTable.h"
#include "tpcrt/Shape.h"

#include <map>
#include <string>
#include <vector>

using namespace tpcrt;

namespace {

bool isTransfer(const KernelCall &call) {
  return call.op == fb::OpCode::Send || call.op == fb::OpCode::Recv;
}

/// "[dp,tp]".
std::string axesText(const Mesh &mesh, const std::vector<uint32_t> &axes) {
  std::string text;
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? "," : "") + mesh.names[axes[i]];
  return "[" + text + "]";
}

bool spansStages(const Program &program, const KernelCall &call) {
  if (call.group < 0 || program.stageAxis < 0)
    return false;
  for (uint32_t axis : program.groups[call.group])
    if (static_cast<int32_t>(axis) == program.stageAxis)
      return true;
  return false;
}

/// "kernel 3 (send to stage 1)", "kernel 5 (all_reduce over [pp])".
std::string meetingText(const Program &program, const KernelCall &call) {
  std::string text =
      "kernel " + std::to_string(call.index) + " (" + kernelInfo(call.op)->name;
  if (isTransfer(call))
    text += std::string(call.op == fb::OpCode::Send ? " to" : " from") +
            " stage " + std::to_string(call.intAttrs[0]);
  else
    text += " over " + axesText(program.mesh, program.groups[call.group]);
  return text + ")";
}

std::string tensorText(const TensorRef &t) {
  return std::string(executableDTypeName(t.dtype)) + " " + formatShape(t.shape);
}

/// A transfer's peer: the "pp" axis alone, another stage.
Status checkPeer(const Program &program, const KernelCall &call) {
  const char *none = "the executable has no \"pp\" mesh axis";
  const std::vector<uint32_t> &axes = program.groups[call.group];
  if (program.stageAxis < 0 || axes.size() != 1 ||
      static_cast<int32_t>(axes[0]) != program.stageAxis)
    return Status::error(
        kernelText(call) + ": its group is mesh axes " +
        axesText(program.mesh, axes) +
        "; a transfer's must be the \"pp\" axis alone (its peer is a "
        "pipeline stage)" +
        (program.stageAxis < 0 ? std::string(", and ") + none : ""));
  if (call.intAttrs[0] == static_cast<int64_t>(call.stage))
    return Status::error(
        kernelText(call) + ": peer " + std::to_string(call.intAttrs[0]) +
        " is its own stage: a stage cannot " +
        (call.op == fb::OpCode::Send ? "send to" : "receive from") + " itself");
  return Status::ok();
}

/// A send and the recv it meets move the same dtype and element count.
Status checkPair(const KernelCall &send, const KernelCall &recv) {
  const TensorRef &x = send.operands[0], &y = recv.results[0];
  if (x.dtype == y.dtype && x.elements == y.elements)
    return Status::ok();
  return Status::error(
      kernelText(send) + " on stage " + std::to_string(send.stage) + " sends " +
      tensorText(x) + " to stage " + std::to_string(recv.stage) +
      ", whose matching " + kernelText(recv) + " receives " + tensorText(y) +
      " (transfers between two stages pair up in file order)");
}

/// Collectives across the stages meeting at once: one opcode, group, flags
/// and input.
Status checkMeeting(const Program &program,
                    const std::vector<const KernelCall *> &calls) {
  const KernelCall &first = *calls.front();
  for (const KernelCall *call : calls) {
    const TensorRef &x = first.operands[0], &y = call->operands[0];
    if (call->op == first.op && call->group == first.group &&
        call->flags == first.flags && x.dtype == y.dtype &&
        x.elements == y.elements)
      continue;
    return Status::error(
        "stage " + std::to_string(first.stage) + " reaches " +
        meetingText(program, first) + " on " + tensorText(x) + " when stage " +
        std::to_string(call->stage) + " reaches " +
        meetingText(program, *call) + " on " + tensorText(y) +
        ": collectives across the stages must meet in the same order, alike");
  }
  return Status::ok();
}

} // namespace

Status tpcrt::checkTransfers(Program &program) {
  std::vector<KernelCall> &all =
      program.allCalls.empty() ? program.calls : program.allCalls;
  // Per stage that has any (a map: the "pp" axis may be large and most
  // stages empty), the kernels where it meets others, in file order.
  std::map<uint32_t, std::vector<uint32_t>> lists;
  for (KernelCall &call : all) {
    KernelKind kind = kernelInfo(call.op)->kind;
    if (isTransfer(call)) {
      if (Status s = checkPeer(program, call); !s)
        return s;
    } else if (!spansStages(program, call) || kind == KernelKind::Local) {
      continue;
    } else if (kind != KernelKind::Communicates) {
      return Status::error(
          kernelText(call) + ": its group, mesh axes " +
          axesText(program.mesh, program.groups[call.group]) +
          ", includes the \"pp\" axis, whose coordinate is a rank's pipeline "
          "stage: only transfers and collectives work across stages");
    }
    lists[call.stage].push_back(call.index);
  }

  // Rendezvous: a stage at a send proceeds with the peer at its recv from
  // this stage (the next of that pair: both lists hold a pair's transfers in
  // the same order), a stage at a collective over "pp" with every stage at
  // one (every stage has a list then).
  std::map<uint32_t, size_t> next;
  auto at = [&](uint32_t stage) -> KernelCall * {
    auto list = lists.find(stage);
    if (list == lists.end() || next[stage] >= list->second.size())
      return nullptr;
    return &all[list->second[next[stage]]];
  };
  bool everyStage = static_cast<int64_t>(lists.size()) == program.numStages;
  for (bool progress = true; progress;) {
    progress = false;
    for (const auto &[stage, list] : lists) {
      KernelCall *call = at(stage);
      if (!call)
        continue;
      if (isTransfer(*call)) {
        auto peer = static_cast<uint32_t>(call->intAttrs[0]);
        KernelCall *other = at(peer);
        if (!other || !isTransfer(*other) || other->op == call->op ||
            other->intAttrs[0] != static_cast<int64_t>(stage))
          continue;
        KernelCall &send = call->op == fb::OpCode::Send ? *call : *other;
        KernelCall &recv = call->op == fb::OpCode::Send ? *other : *call;
        if (Status st = checkPair(send, recv); !st)
          return st;
        call->meets.push_back(other->index);
        other->meets.push_back(call->index);
        ++next[stage];
        ++next[peer];
        progress = true;
        continue;
      }
      if (!everyStage)
        continue;
      std::vector<KernelCall *> meeting;
      for (const auto &entry : lists) {
        KernelCall *other = at(entry.first);
        if (!other || isTransfer(*other))
          break;
        meeting.push_back(other);
      }
      if (meeting.size() != lists.size())
        continue;
      if (Status st = checkMeeting(
              program,
              std::vector<const KernelCall *>(meeting.begin(), meeting.end()));
          !st)
        return st;
      for (KernelCall *one : meeting) {
        for (const KernelCall *other : meeting)
          if (other != one)
            one->meets.push_back(other->index);
        ++next[one->stage];
      }
      progress = true;
    }
  }

  std::string waits;
  for (const auto &entry : lists)
    if (const KernelCall *call = at(entry.first)) {
      waits += (waits.empty() ? "stage " : ", stage ") +
               std::to_string(entry.first) + " waits at " +
               meetingText(program, *call);
      if (isTransfer(*call) && !at(static_cast<uint32_t>(call->intAttrs[0])))
        waits +=
            " (stage " + std::to_string(call->intAttrs[0]) + " has none left)";
    }
  if (!waits.empty())
    return Status::error("the pipeline stages' transfers never all complete "
                         "(each stage runs its kernels in file order, a send "
                         "returning once its recv has begun): " +
                         waits);
  return Status::ok();
}
