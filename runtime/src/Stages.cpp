//===- Stages.cpp - the transfers between pipeline stages -----------------===//
//
// On a pipeline (a mesh axis named "pp") each rank runs its stage's kernels
// in file order (or its actions in order), and the stages meet only in
// their transfers (send, recv, send_start, recv_start and the waits on
// those) and in the collectives whose group spans the "pp" axis.
// checkTransfers plays the stages' lists against each other so that a file
// whose stages would wait for each other forever is refused at load: a
// start posts its transfer and goes on; a posted send and a posted recv of
// one channel (from a stage to another) pair in the order they were posted
// (per-peer FIFO); a wait returns once its transfer is paired, and a
// blocking send or recv is a start followed at once by its wait (the worst
// case a backend may have: MPI_Send is a rendezvous for large messages,
// NCCL's send always is); a collective proceeds when every stage is at one.
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

/// A kernel that posts a transfer to or from a peer stage (its int_attrs
/// [peer, axes...]).
bool isTransfer(const KernelCall &call) {
  return call.op == fb::OpCode::Send || call.op == fb::OpCode::Recv ||
         call.op == fb::OpCode::SendStart || call.op == fb::OpCode::RecvStart;
}

bool isSendSide(const KernelCall &call) {
  return call.op == fb::OpCode::Send || call.op == fb::OpCode::SendStart;
}

/// send and recv wait for their transfer; the starts go on.
bool isBlocking(const KernelCall &call) {
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
    text += std::string(isSendSide(call) ? " to" : " from") + " stage " +
            std::to_string(call.intAttrs[0]);
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
        (isSendSide(call) ? "send to" : "receive from") + " itself");
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
  // stages empty), the runs where it meets others or waits for a transfer,
  // in the order of its step (its kernels in file order, or its actions'
  // kernels).
  struct Meeting {
    KernelCall *call;
    uint64_t run;
    uint32_t action;
    /// A transfer: its place among the posts of its side of its channel,
    /// and whether the other side has posted its match. A wait: the
    /// position in the stage's list of the start it waits for (-1: none
    /// started; the lifetimes' checks refuse that).
    uint64_t post = 0;
    bool paired = false;
    int64_t start = -1;
  };
  std::map<uint32_t, std::vector<Meeting>> lists;
  auto meets = [&](const KernelCall &call) {
    return isTransfer(call) || call.op == fb::OpCode::Wait ||
           (spansStages(program, call) &&
            kernelInfo(call.op)->kind == KernelKind::Communicates);
  };
  bool actions = program.hasActions();
  auto add = [&](uint32_t stage, KernelCall &call, uint64_t run,
                 uint32_t action) {
    lists[stage].push_back({&call, run, action});
  };
  if (!actions) {
    forEachRun(program, [&](uint32_t stage, uint64_t run, uint32_t kernel,
                            uint32_t action) {
      if (meets(all[kernel]))
        add(stage, all[kernel], run, action);
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
          add(stage, all[function.firstKernel + p], run + p, a);
        run += function.kernelCount;
      }
    }
  }

  // Each wait's start: the last one on the same buffer instance before it.
  // A start and its wait meet within the stage (evaluate() runs both).
  for (auto &[stage, list] : lists) {
    std::map<uint64_t, int64_t> started; // instance -> position in list
    for (size_t i = 0; i < list.size(); ++i) {
      Meeting &m = list[i];
      if (m.call->op != fb::OpCode::SendStart &&
          m.call->op != fb::OpCode::RecvStart && m.call->op != fb::OpCode::Wait)
        continue;
      ActionRef action = program.stageAction(stage, m.action);
      const TensorRef &t = m.call->operands.empty() ? m.call->results[0]
                                                    : m.call->operands[0];
      uint64_t instance = program.instanceBase[t.buffer] +
                          t.slotOf(action.microbatch, action.slot);
      if (m.call->op != fb::OpCode::Wait) {
        started[instance] = static_cast<int64_t>(i);
        continue;
      }
      auto it = started.find(instance);
      if (it == started.end())
        continue;
      m.start = it->second;
      started.erase(it);
      const Meeting &start = list[m.start];
      program.runMeets[{stage, m.run}].push_back({stage, start.run});
      program.runMeets[{stage, start.run}].push_back({stage, m.run});
    }
  }

  // "kernel 3 (send to stage 1)", "kernel 7 (wait for kernel 3 (send_start
  // to stage 1))", with actions after its action (and its start's).
  auto text = [&](uint32_t stage, const Meeting &m) {
    std::string where;
    if (actions)
      where = actionText(program, m.action,
                         program.stageActions[stage][m.action]) +
              ": ";
    if (m.call->op != fb::OpCode::Wait || m.start < 0)
      return where + meetingText(program, *m.call);
    const Meeting &start = lists[stage][m.start];
    return where + "kernel " + std::to_string(m.call->index) + " (wait for " +
           (actions ? "action " + std::to_string(start.action) + "'s " : "") +
           meetingText(program, *start.call) + ")";
  };
  auto meet = [&](uint32_t stage, const Meeting &m, uint32_t otherStage,
                  const Meeting &other) {
    if (!actions)
      m.call->meets.push_back(other.call->index);
    program.runMeets[{stage, m.run}].push_back({otherStage, other.run});
  };

  // The channels, from a stage to another: each side's posts in order.
  struct Channel {
    std::vector<std::pair<uint32_t, Meeting *>> sends, recvs;
  };
  std::map<std::pair<uint32_t, uint32_t>, Channel> channels;
  // Posts transfer `m` of `stage`, pairing it with the other side's post of
  // the same place if there is one.
  auto post = [&](uint32_t stage, Meeting &m) -> Status {
    auto peer = static_cast<uint32_t>(m.call->intAttrs[0]);
    bool sends = isSendSide(*m.call);
    Channel &channel =
        channels[sends ? std::make_pair(stage, peer) : std::make_pair(peer, stage)];
    auto &mine = sends ? channel.sends : channel.recvs;
    auto &theirs = sends ? channel.recvs : channel.sends;
    m.post = mine.size();
    mine.emplace_back(stage, &m);
    if (theirs.size() <= m.post)
      return Status::ok();
    Meeting &other = *theirs[m.post].second;
    KernelCall &send = sends ? *m.call : *other.call;
    KernelCall &recv = sends ? *other.call : *m.call;
    if (Status st = checkPair(send, recv); !st)
      return actions ? st.withContext(
                           "stage " + std::to_string(stage) + ": " +
                           actionText(program, m.action,
                                      program.stageActions[stage][m.action]))
                     : st;
    meet(stage, m, peer, other);
    meet(peer, other, stage, m);
    m.paired = other.paired = true;
    return Status::ok();
  };

  std::map<uint32_t, size_t> next;
  // Blocking transfers posted and not yet paired, by stage.
  std::map<uint32_t, bool> posted;
  auto at = [&](uint32_t stage) -> Meeting * {
    auto list = lists.find(stage);
    if (list == lists.end() || next[stage] >= list->second.size())
      return nullptr;
    return &list->second[next[stage]];
  };
  bool everyStage = static_cast<int64_t>(lists.size()) == program.numStages;
  for (bool progress = true; progress;) {
    progress = false;
    for (auto &entry : lists) {
      uint32_t stage = entry.first;
      // As far as the stage gets on its own.
      while (Meeting *m = at(stage)) {
        KernelCall *call = m->call;
        if (isTransfer(*call)) {
          if (!posted[stage])
            if (Status st = post(stage, *m); !st)
              return st;
          posted[stage] = isBlocking(*call) && !m->paired;
          if (posted[stage])
            break;
        } else if (call->op == fb::OpCode::Wait) {
          if (m->start >= 0 && !entry.second[m->start].paired)
            break;
        } else {
          break; // a collective: below, with every stage at one
        }
        ++next[stage];
        progress = true;
      }
    }
    if (!everyStage)
      continue;
    std::vector<std::pair<uint32_t, Meeting *>> meeting;
    for (const auto &other : lists) {
      Meeting *o = at(other.first);
      if (!o || isTransfer(*o->call) || o->call->op == fb::OpCode::Wait)
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

  std::string waits;
  for (const auto &entry : lists)
    if (const Meeting *m = at(entry.first)) {
      waits += (waits.empty() ? "stage " : ", stage ") +
               std::to_string(entry.first) + " waits at " +
               text(entry.first, *m);
      const KernelCall *transfer =
          m->call->op == fb::OpCode::Wait ? entry.second[m->start].call
                                          : m->call;
      if (isTransfer(*transfer) &&
          !at(static_cast<uint32_t>(transfer->intAttrs[0])))
        waits += " (stage " + std::to_string(transfer->intAttrs[0]) +
                 " has none left)";
    }
  if (!waits.empty())
    return Status::error(
        std::string("the pipeline stages' transfers never all complete (each "
                    "stage runs ") +
        (actions ? "its actions in order" : "its kernels in file order") +
        "; a send_start or recv_start posts its transfer and goes on, a "
        "wait returns once the peer has posted the other side of the "
        "transfer, a send or recv is both): " +
        waits);
  return Status::ok();
}
