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
  for (KernelCall &call : all) {
    KernelKind kind = kernelInfo(call.op)->kind;
    if (isTransfer(call)) {
      if (Status s = checkPeer(program, call); !s)
        return s;
    } else if (spansStages(program, call) && kind != KernelKind::Local &&
               kind != KernelKind::Communicates) {
      return Status::error(
          kernelText(call) + ": its group, mesh axes " +
          axesText(program.mesh, program.groups[call.group]) +
          ", includes the \"pp\" axis, whose coordinate is a rank's pipeline "
          "stage: only transfers and collectives work across stages");
    }
  }

  // Per stage that has any (a map: the "pp" axis may be large and most
  // stages empty), the runs where it meets others, in the order of its step
  // (its kernels in file order, or its actions' kernels).
  struct Meeting {
    KernelCall *call;
    uint64_t run;
    uint32_t action;
  };
  std::map<uint32_t, std::vector<Meeting>> lists;
  auto meets = [&](const KernelCall &call) {
    return isTransfer(call) ||
           (spansStages(program, call) &&
            kernelInfo(call.op)->kind == KernelKind::Communicates);
  };
  bool actions = program.hasActions();
  if (!actions) {
    forEachRun(program, [&](uint32_t stage, uint64_t run, uint32_t kernel,
                            uint32_t action) {
      if (meets(all[kernel]))
        lists[stage].push_back({&all[kernel], run, action});
    });
  } else {
    // Each function's meeting kernels, found once: an action adds them at
    // its runs, not walking every kernel of every action (a step of many
    // microbatches runs each function hundreds of times).
    std::vector<std::vector<uint32_t>> meetingsOf(program.functions.size());
    for (size_t f = 0; f < program.functions.size(); ++f) {
      const FunctionRef &function = program.functions[f];
      for (uint32_t p = 0; p < function.kernelCount; ++p)
        if (meets(all[function.firstKernel + p]))
          meetingsOf[f].push_back(p);
    }
    for (uint32_t stage = 0; stage < program.stageActions.size(); ++stage) {
      uint64_t run = 0;
      const std::vector<ActionRef> &list = program.stageActions[stage];
      for (uint32_t a = 0; a < list.size(); ++a) {
        const FunctionRef &function = program.functions[list[a].function];
        for (uint32_t p : meetingsOf[list[a].function])
          lists[stage].push_back({&all[function.firstKernel + p], run + p, a});
        run += function.kernelCount;
      }
    }
  }
  // "kernel 3 (send to stage 1)", with actions after its action.
  auto text = [&](uint32_t stage, const Meeting &m) {
    std::string where;
    if (actions)
      where = actionText(program, m.action,
                         program.stageActions[stage][m.action]) +
              ": ";
    return where + meetingText(program, *m.call);
  };
  auto meet = [&](uint32_t stage, const Meeting &m, uint32_t otherStage,
                  const Meeting &other) {
    if (!actions)
      m.call->meets.push_back(other.call->index);
    program.runMeets[{stage, m.run}].push_back({otherStage, other.run});
  };

  // Rendezvous: a stage at a send proceeds with the peer at its recv from
  // this stage (the next of that pair: both lists hold a pair's transfers in
  // the same order), a stage at a collective over "pp" with every stage at
  // one (every stage has a list then).
  std::map<uint32_t, size_t> next;
  auto at = [&](uint32_t stage) -> Meeting * {
    auto list = lists.find(stage);
    if (list == lists.end() || next[stage] >= list->second.size())
      return nullptr;
    return &list->second[next[stage]];
  };
  bool everyStage = static_cast<int64_t>(lists.size()) == program.numStages;
  for (bool progress = true; progress;) {
    progress = false;
    for (const auto &entry : lists) {
      uint32_t stage = entry.first;
      Meeting *m = at(stage);
      if (!m)
        continue;
      KernelCall *call = m->call;
      if (isTransfer(*call)) {
        auto peer = static_cast<uint32_t>(call->intAttrs[0]);
        Meeting *o = at(peer);
        KernelCall *other = o ? o->call : nullptr;
        if (!other || !isTransfer(*other) || other->op == call->op ||
            other->intAttrs[0] != static_cast<int64_t>(stage))
          continue;
        KernelCall &send = call->op == fb::OpCode::Send ? *call : *other;
        KernelCall &recv = call->op == fb::OpCode::Send ? *other : *call;
        if (Status st = checkPair(send, recv); !st)
          return actions ? st.withContext(
                               "stage " + std::to_string(stage) + ": " +
                               actionText(program, m->action,
                                          program.stageActions[stage][m->action]))
                         : st;
        meet(stage, *m, peer, *o);
        meet(peer, *o, stage, *m);
        ++next[stage];
        ++next[peer];
        progress = true;
        continue;
      }
      if (!everyStage)
        continue;
      std::vector<std::pair<uint32_t, Meeting *>> meeting;
      for (const auto &other : lists) {
        Meeting *o = at(other.first);
        if (!o || isTransfer(*o->call))
          break;
        meeting.emplace_back(other.first, o);
      }
      if (meeting.size() != lists.size())
        continue;
      std::vector<const KernelCall *> calls;
      for (const auto &one : meeting)
        calls.push_back(one.second->call);
      if (Status st = checkMeeting(program, calls); !st)
        return st;
      for (const auto &one : meeting) {
        for (const auto &other : meeting)
          if (other.second != one.second)
            meet(one.first, *one.second, other.first, *other.second);
        ++next[one.first];
      }
      progress = true;
    }
  }

  std::string waits;
  for (const auto &entry : lists)
    if (const Meeting *m = at(entry.first)) {
      waits += (waits.empty() ? "stage " : ", stage ") +
               std::to_string(entry.first) + " waits at " +
               text(entry.first, *m);
      if (isTransfer(*m->call) &&
          !at(static_cast<uint32_t>(m->call->intAttrs[0])))
        waits += " (stage " + std::to_string(m->call->intAttrs[0]) +
                 " has none left)";
    }
  if (!waits.empty())
    return Status::error(
        std::string("the pipeline stages' transfers never all complete (each "
                    "stage runs ") +
        (actions ? "its actions in order" : "its kernels in file order") +
        ", a send returning once its recv has begun): " + waits);
  return Status::ok();
}
