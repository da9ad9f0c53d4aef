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
    /// Its place among every stage's meetings, the stages in order.
    size_t id = 0;
  };
  // The channels, from a stage to another: each side's posts in order.
  struct Channel {
    std::vector<std::pair<uint32_t, Meeting *>> sends, recvs;
  };
  // A stage's meetings, how far it has got through them (the next one) and
  // whether it waits for a blocking transfer it posted; the channels it
  // posts on (to a peer: sends; from one: recvs), found once each.
  struct Stage {
    std::vector<Meeting> list;
    size_t next = 0;
    bool posted = false;
    std::vector<std::pair<std::pair<uint32_t, bool>, Channel *>> channels;
  };
  std::map<uint32_t, Stage> lists;
  auto meets = [&](const KernelCall &call) {
    return isTransfer(call) || call.op == fb::OpCode::Wait ||
           (spansStages(program, call) &&
            kernelInfo(call.op)->kind == KernelKind::Communicates);
  };
  bool actions = program.hasActions();
  if (!actions) {
    forEachRun(program, [&](uint32_t stage, uint64_t run, uint32_t kernel,
                            uint32_t action) {
      if (meets(all[kernel]))
        lists[stage].list.push_back({&all[kernel], run, action});
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
      std::vector<Meeting> *mine = nullptr;
      for (uint32_t a = 0; a < list.size(); ++a) {
        const FunctionRef &function = program.functions[list[a].function];
        for (uint32_t p : meetingsOf[list[a].function]) {
          if (!mine)
            mine = &lists[stage].list;
          mine->push_back({&all[function.firstKernel + p], run + p, a});
        }
        run += function.kernelCount;
      }
    }
  }
  size_t numMeetings = 0;
  for (auto &entry : lists)
    for (Meeting &m : entry.second.list)
      m.id = numMeetings++;

  // What each meeting meets (Program::runMeets, once the check passes),
  // with the meeting's id (most meet once or twice).
  struct Found {
    size_t id;
    Program::RunMeet meet;
  };
  std::vector<Found> found;
  found.reserve(2 * numMeetings);

  // Each wait's start: the last one on the same buffer instance before it.
  // A start and its wait meet within the stage (evaluate() runs both).
  std::vector<int64_t> started; // instance -> position in list, or -1
  for (auto &[stage, entry] : lists) {
    std::vector<Meeting> &list = entry.list;
    auto instanceOf = [&, stage = stage](const Meeting &m) {
      ActionRef action = program.stageAction(stage, m.action);
      const TensorRef &t = m.call->operands.empty() ? m.call->results[0]
                                                    : m.call->operands[0];
      return program.instanceBase[t.buffer] +
             t.slotOf(action.microbatch, action.slot);
    };
    auto isStartOrWait = [](const Meeting &m) {
      return m.call->op == fb::OpCode::SendStart ||
             m.call->op == fb::OpCode::RecvStart ||
             m.call->op == fb::OpCode::Wait;
    };
    for (size_t i = 0; i < list.size(); ++i) {
      Meeting &m = list[i];
      if (!isStartOrWait(m))
        continue;
      if (started.empty())
        started.assign(program.numInstances, -1);
      int64_t &at = started[instanceOf(m)];
      if (m.call->op != fb::OpCode::Wait) {
        at = static_cast<int64_t>(i);
        continue;
      }
      if (at < 0)
        continue;
      m.start = at;
      at = -1;
      const Meeting &start = list[m.start];
      found.push_back({m.id, {stage, m.run, stage, start.run}});
      found.push_back({start.id, {stage, start.run, stage, m.run}});
    }
    // None started for the next stage.
    for (const Meeting &m : list)
      if (isStartOrWait(m))
        started[instanceOf(m)] = -1;
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
    const Meeting &start = lists[stage].list[m.start];
    return where + "kernel " + std::to_string(m.call->index) + " (wait for " +
           (actions ? "action " + std::to_string(start.action) + "'s " : "") +
           meetingText(program, *start.call) + ")";
  };
  auto meet = [&](uint32_t stage, const Meeting &m, uint32_t otherStage,
                  const Meeting &other) {
    if (!actions)
      m.call->meets.push_back(other.call->index);
    found.push_back({m.id, {stage, m.run, otherStage, other.run}});
  };

  std::map<std::pair<uint32_t, uint32_t>, Channel> channels;
  // Posts transfer `m` of `stage`, pairing it with the other side's post of
  // the same place if there is one.
  auto post = [&](uint32_t stage, Stage &mine, Meeting &m) -> Status {
    auto peer = static_cast<uint32_t>(m.call->intAttrs[0]);
    bool sends = isSendSide(*m.call);
    Channel *channel = nullptr;
    for (const auto &known : mine.channels)
      if (known.first == std::make_pair(peer, sends))
        channel = known.second;
    if (!channel) {
      channel = &channels[sends ? std::make_pair(stage, peer)
                                : std::make_pair(peer, stage)];
      mine.channels.push_back({{peer, sends}, channel});
    }
    auto &ours = sends ? channel->sends : channel->recvs;
    auto &theirs = sends ? channel->recvs : channel->sends;
    m.post = ours.size();
    ours.emplace_back(stage, &m);
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

  auto next = [](Stage &entry) -> Meeting * {
    return entry.next < entry.list.size() ? &entry.list[entry.next] : nullptr;
  };
  auto at = [&](uint32_t stage) -> Meeting * {
    auto entry = lists.find(stage);
    return entry == lists.end() ? nullptr : next(entry->second);
  };
  bool everyStage = static_cast<int64_t>(lists.size()) == program.numStages;
  std::vector<std::pair<uint32_t, Meeting *>> meeting;
  std::vector<const KernelCall *> calls;
  for (bool progress = true; progress;) {
    progress = false;
    for (auto &[stage, entry] : lists) {
      // As far as the stage gets on its own.
      while (Meeting *m = next(entry)) {
        KernelCall *call = m->call;
        if (isTransfer(*call)) {
          if (!entry.posted)
            if (Status st = post(stage, entry, *m); !st)
              return st;
          entry.posted = isBlocking(*call) && !m->paired;
          if (entry.posted)
            break;
        } else if (call->op == fb::OpCode::Wait) {
          if (m->start >= 0 && !entry.list[m->start].paired)
            break;
        } else {
          break; // a collective: below, with every stage at one
        }
        ++entry.next;
        progress = true;
      }
    }
    if (!everyStage)
      continue;
    meeting.clear();
    for (auto &[stage, entry] : lists) {
      Meeting *o = next(entry);
      if (!o || isTransfer(*o->call) || o->call->op == fb::OpCode::Wait)
        break;
      meeting.emplace_back(stage, o);
    }
    if (meeting.size() != lists.size())
      continue;
    calls.clear();
    for (const auto &one : meeting)
      calls.push_back(one.second->call);
    if (Status st = checkMeeting(program, calls); !st)
      return st;
    for (const auto &one : meeting) {
      for (const auto &other : meeting)
        if (other.second != one.second)
          meet(one.first, *one.second, other.first, *other.second);
      ++lists[one.first].next;
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
          m->call->op == fb::OpCode::Wait ? entry.second.list[m->start].call
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

  // Program::runMeets: by meeting (by stage, then run), each one's in the
  // order found.
  std::vector<size_t> from(numMeetings + 1, 0);
  for (const Found &f : found)
    ++from[f.id + 1];
  for (size_t i = 0; i < numMeetings; ++i)
    from[i + 1] += from[i];
  program.runMeets.resize(found.size());
  for (const Found &f : found)
    program.runMeets[from[f.id]++] = f.meet;
  return Status::ok();
}
