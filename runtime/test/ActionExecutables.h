//===- ActionExecutables.h - a training step as functions and actions -*- C++
//-*-===//
//
// The executable of the action-list tests (ActionsTest.cpp, PipelineCheck.cpp,
// tpc_run_pipeline.sh): one SGD training step over M microbatches with
// dropout (a mask and an attention's), written twice from the same code:
//
//   - unrolled, today's form: M copies of each microbatch's forward and
//     backward kernels, each microbatch's own buffers, the dropout kernels'
//     first index i * N in copy i, the inputs sliced per microbatch from the
//     whole batch, the target count taken over the whole batch, and the
//     first microbatch's gradients and loss sum the accumulators (later ones
//     added in place);
//   - as functions and actions: each function's kernels once (F, B, the
//     transfers, a prologue and an epilogue), run by one action per
//     microbatch; the stash in a pool of two slots (the action's slot
//     microbatch % 2, or the microbatch itself, which the pool takes mod
//     2), the inputs in pools by microbatch, the accumulators zeroed by the
//     prologue (`zeros`) and added to in place (`add`, the count in i64).
//
// One stage (the 1F1B-like order F0 F1 B0 F2 B1 ...) or two ("pp" = 2: the
// activation sent from a pooled buffer of stage 0 to one of stage 1, its
// gradient back, each stage in 1F1B order with the transfers as actions of
// their own). Both forms run each stage's work in the same order, so every
// value is the same bit for bit, but for the sign of an exact zero where an
// accumulator starts at 0 instead of its first term.
//
// With started transfers (two stages) the stages exchange in 1F1B's steady
// state order, which blocking transfers cannot run: stage 0 sends
// microbatch i + 1's activation before it receives i's gradient, stage 1
// sends that gradient before it receives the activation. Each transfer is a
// send_start or recv_start action, and a wait action later; the F and B
// work of each stage runs in the same order as with blocking transfers.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_ACTIONEXECUTABLES_H
#define TPCRT_TEST_ACTIONEXECUTABLES_H

#include "TestExecutables.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace tpcrt {
namespace test {

struct ActionModelOptions {
  /// 1, or 2: mesh axis "pp" of size 2.
  int64_t stages = 1;
  /// At least 2.
  int64_t microbatches = 3;
  /// Functions and actions; else the unrolled form.
  bool actions = true;
  double dropout = 0.25;
  /// Unrolled: every copy draws from first index 0 (a wrong unrolling, for
  /// the tests to show that they see the microbatch's stream).
  bool sameStream = false;
  /// Two stages: send_start, recv_start and wait in the exchange order
  /// (see the file comment); else send and recv.
  bool startedTransfers = false;
  /// With started transfers: stage 1 receives the activations with a
  /// blocking recv (started and blocking transfers on one channel).
  bool blockingActivationRecv = false;
  /// Actions: each action's slot is its microbatch (tpc-compile's
  /// numbering; the stash pools take it mod their 2 slots), else
  /// microbatch % 2.
  bool slotsAreMicrobatches = false;
  /// Rows of one microbatch, and the model's sizes.
  int64_t rows = 2, seq = 3, hidden = 4, vocab = 8;
};

/// Builds the step (see the file comment).
class ActionModel {
public:
  using Op = fb::OpCode;

  explicit ActionModel(const ActionModelOptions &o) : o(o) {
    exe.schema_version = kExecutableSchemaVersion;
    if (o.stages > 1) {
      auto axis = std::make_unique<fb::MeshAxisT>();
      axis->name = "pp";
      axis->size = o.stages;
      exe.mesh.push_back(std::move(axis));
    }
  }

  fb::ExecutableT build() {
    const fb::DType F32 = fb::DType::F32;
    int64_t R = o.rows, S = o.seq, H = o.hidden, V = o.vocab;
    bool pp = o.stages > 1;
    uint32_t last = pp ? 1 : 0;
    e = param("e.weight", {V, H});
    w0 = param("w0.weight", {H, H});
    w1 = param("w1.weight", {H, H});
    head = param("head.weight", {V, H});
    step = named("step", fb::DType::I64, {});
    exe.inputs.push_back(makeBinding("step", step, 0));
    // The whole batch (unrolled) or a microbatch per slot (actions).
    for (const char *name : {"input_ids", "labels"}) {
      uint32_t id = named(name, fb::DType::I64,
                          {o.actions ? R : R * o.microbatches, S});
      exe.inputs.push_back(makeBinding(name, id, V));
      if (o.actions)
        exe.buffers[id]->pool = inputPool(id);
    }
    // Accumulators: the gradients (bindings), the loss sum, the count.
    gE = acc("gE", 0, F32, {V, H});
    gW0 = acc("gW0", 0, F32, {H, H});
    gW1 = acc("gW1", last, F32, {H, H});
    gHead = acc("gHead", last, F32, {V, H});
    lossSum = acc("lossSum", last, F32, {});
    total = named("total", fb::DType::I64, {});
    if (o.actions)
      accumulators[last].push_back(total);

    for (int64_t stage = 0; stage < o.stages; ++stage)
      for (const auto &[function, mb] : schedule(stage))
        run(stage, function, mb);

    exe.outputs.push_back(makeBinding("loss", named("loss", F32, {})));
    exe.outputs.push_back(makeBinding("grad_norm", named("norm", F32, {})));
    exe.outputs.push_back(makeBinding("lr", named("lr", F32, {})));
    for (auto [name, id] : {std::make_pair("e.weight", gE),
                            std::make_pair("w0.weight", gW0),
                            std::make_pair("w1.weight", gW1),
                            std::make_pair("head.weight", gHead)})
      exe.grads.push_back(makeBinding(name, id));
    exe.seed = 23;
    layOut();
    return std::move(exe);
  }

  /// A stage's steps: (function, microbatch), the order both forms run.
  std::vector<std::pair<std::string, int64_t>> schedule(int64_t stage) const {
    int64_t M = o.microbatches;
    std::vector<std::pair<std::string, int64_t>> list;
    auto add = [&](const std::string &f, int64_t mb) {
      list.emplace_back(f, mb);
    };
    bool pp = o.stages > 1;
    if (!pp || stage == 1) {
      add("start", 0);
      for (int64_t i = 0; i < M; ++i)
        add("count", i);
      add("scale", 0);
    } else {
      add("start", 0);
    }
    if (pp && o.startedTransfers && stage == 0) {
      // F(i+1) and its activation sent before B(i)'s gradient is received.
      add("F", 0);
      add("sendA", 0);
      for (int64_t i = 0; i < M; ++i) {
        if (i + 1 < M) {
          add("F", i + 1);
          add("sendA", i + 1);
        }
        add("recvG", i);
        add("waitG", i);
        add("B", i);
        add("waitA", i);
      }
    } else if (pp && o.startedTransfers) {
      // B(i)'s gradient sent before F(i+1)'s activation is received.
      add("recvA", 0);
      if (!o.blockingActivationRecv)
        add("waitA", 0);
      add("F", 0);
      for (int64_t i = 0; i < M; ++i) {
        add("B", i);
        add("sendG", i);
        if (i + 1 < M) {
          add("recvA", i + 1);
          if (!o.blockingActivationRecv)
            add("waitA", i + 1);
          add("F", i + 1);
        }
        add("waitG", i);
      }
    } else if (!pp) {
      // F0 F1 B0 F2 B1 ... B(M-1): two microbatches in flight.
      add("F", 0);
      for (int64_t i = 1; i < M; ++i) {
        add("F", i);
        add("B", i - 1);
      }
      add("B", M - 1);
    } else if (stage == 0) {
      add("F", 0);
      add("sendA", 0);
      add("F", 1);
      add("sendA", 1);
      for (int64_t i = 0; i < M; ++i) {
        add("recvG", i);
        add("B", i);
        if (i + 2 < M) {
          add("F", i + 2);
          add("sendA", i + 2);
        }
      }
    } else {
      add("recvA", 0);
      add("F", 0);
      add("recvA", 1);
      for (int64_t i = 0; i < M; ++i) {
        add("B", i);
        add("sendG", i);
        if (i + 1 < M)
          add("F", i + 1);
        if (i + 2 < M)
          add("recvA", i + 2);
      }
    }
    add("end", 0);
    return list;
  }

  /// The actions, the functions (actions form) and the kernels, per name.
  std::map<std::string, uint32_t> functionIndex;

private:
  const ActionModelOptions o;
  fb::ExecutableT exe;
  uint32_t e = 0, w0 = 0, w1 = 0, head = 0, step = 0;
  uint32_t gE = 0, gW0 = 0, gW1 = 0, gHead = 0, lossSum = 0, total = 0;
  std::map<std::string, uint32_t> buffers;
  std::map<int64_t, std::vector<uint32_t>> accumulators;
  /// Unrolled: the accumulators written so far.
  std::vector<uint32_t> started;
  /// Actions: the stash pool of each stage, the input pools.
  std::map<int64_t, int32_t> stashPools;
  std::vector<std::vector<uint32_t>> poolBuffers;
  /// The current step.
  int64_t stage = 0, mb = 0;

  uint32_t newBuffer(fb::DType dtype, std::vector<int64_t> shape) {
    exe.buffers.push_back(makeBuffer(0, dtype, std::move(shape)));
    return static_cast<uint32_t>(exe.buffers.size() - 1);
  }
  /// One buffer per name, whatever the microbatch.
  uint32_t named(const std::string &name, fb::DType dtype,
                 std::vector<int64_t> shape) {
    auto it = buffers.find(name);
    if (it != buffers.end())
      return it->second;
    return buffers[name] = newBuffer(dtype, std::move(shape));
  }
  uint32_t param(const std::string &name, std::vector<int64_t> shape) {
    auto p = std::make_unique<fb::ParamT>();
    p->hf_name = name;
    p->view_shape = shape;
    p->hf_shape = shape;
    p->buffer = named(name, fb::DType::F32, shape);
    p->init_std = 0.5;
    exe.params.push_back(std::move(p));
    auto st = std::make_unique<fb::StateT>();
    st->name = "momentum";
    st->param = static_cast<uint32_t>(exe.params.size() - 1);
    st->buffer = named(name + ".momentum", fb::DType::F32, shape);
    exe.state.push_back(std::move(st));
    return exe.params.back()->buffer;
  }
  uint32_t acc(const std::string &name, int64_t on, fb::DType dtype,
               std::vector<int64_t> shape) {
    uint32_t id = named(name, dtype, std::move(shape));
    accumulators[on].push_back(id);
    return id;
  }
  int32_t newPool(uint32_t slots, bool byMicrobatch) {
    auto pool = std::make_unique<fb::PoolT>();
    pool->slots = slots;
    pool->by_microbatch = byMicrobatch;
    exe.pools.push_back(std::move(pool));
    poolBuffers.emplace_back();
    return static_cast<int32_t>(exe.pools.size() - 1);
  }
  int32_t inputPool(uint32_t id) {
    int32_t pool = newPool(static_cast<uint32_t>(o.microbatches), true);
    poolBuffers[pool].push_back(id);
    return pool;
  }
  /// A value that crosses the stage's actions of one microbatch: a pooled
  /// buffer (actions), or one per microbatch (unrolled).
  uint32_t stash(const std::string &name, fb::DType dtype,
                 std::vector<int64_t> shape) {
    if (!o.actions)
      return named(name + "@" + std::to_string(mb), dtype, std::move(shape));
    auto it = buffers.find(name);
    if (it != buffers.end())
      return it->second;
    if (!stashPools.count(stage))
      stashPools[stage] = newPool(2, false);
    uint32_t id = named(name, dtype, std::move(shape));
    exe.buffers[id]->pool = stashPools[stage];
    poolBuffers[stashPools[stage]].push_back(id);
    return id;
  }
  /// Microbatch mb of input `name`: the pooled input (actions) or a slice of
  /// the whole batch (unrolled, sliced where first read).
  uint32_t input(const std::string &name) {
    uint32_t whole = buffers.at(name);
    if (o.actions)
      return whole;
    std::string key = name + "@" + std::to_string(mb);
    if (buffers.count(key))
      return buffers[key];
    uint32_t id = named(key, fb::DType::I64, {o.rows, o.seq});
    k(Op::Slice, {whole}, {id}, {0, mb * o.rows, o.rows});
    return id;
  }
  /// A temporary of one function run.
  uint32_t temp(const std::string &name, fb::DType dtype,
                std::vector<int64_t> shape) {
    return named(name, dtype, std::move(shape));
  }

  void k(Op op, std::vector<uint32_t> operands, std::vector<uint32_t> results,
         std::vector<int64_t> ints = {}, std::vector<double> floats = {},
         uint32_t flags = 0) {
    exe.kernels.push_back(
        makeKernel(op, std::move(operands), std::move(results)));
    exe.kernels.back()->int_attrs = std::move(ints);
    exe.kernels.back()->float_attrs = std::move(floats);
    exe.kernels.back()->flags = flags;
    exe.kernels.back()->stage = static_cast<uint32_t>(stage);
  }
  /// A dropout stream's int_attrs: the template's (actions: the runtime
  /// adds mb * N) or copy mb's first index.
  std::vector<int64_t> stream(int64_t id, int64_t n) const {
    return {id, o.actions || o.sameStream ? 0 : mb * n};
  }
  /// acc += value: in place (actions), or the first term copied (unrolled).
  void accumulate(uint32_t accumulator, uint32_t value) {
    if (!o.actions &&
        std::find(started.begin(), started.end(), accumulator) ==
            started.end()) {
      started.push_back(accumulator);
      k(Op::Copy, {value}, {accumulator});
      return;
    }
    k(Op::Add, {accumulator, value}, {accumulator});
  }

  /// Runs (actions: the action of) `function` for microbatch `i`.
  void run(int64_t on, const std::string &function, int64_t i) {
    stage = on;
    mb = i;
    std::string key = function + "." + std::to_string(on);
    if (o.actions) {
      auto it = functionIndex.find(key);
      if (it == functionIndex.end()) {
        auto f = std::make_unique<fb::FunctionT>();
        f->name = key;
        f->first_kernel = static_cast<uint32_t>(exe.kernels.size());
        mb = 0;
        emit(function);
        mb = i;
        f->kernel_count =
            static_cast<uint32_t>(exe.kernels.size()) - f->first_kernel;
        exe.functions.push_back(std::move(f));
        it = functionIndex
                 .emplace(key, static_cast<uint32_t>(exe.functions.size() - 1))
                 .first;
      }
      while (exe.stage_actions.size() <= static_cast<size_t>(on))
        exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
      exe.stage_actions[on]->actions.emplace_back(
          it->second, static_cast<uint32_t>(i),
          static_cast<uint32_t>(o.slotsAreMicrobatches ? i : i % 2));
      return;
    }
    emit(function);
  }

  void emit(const std::string &function) {
    const fb::DType F32 = fb::DType::F32, I64 = fb::DType::I64,
                    U8 = fb::DType::U8;
    int64_t R = o.rows, S = o.seq, H = o.hidden, V = o.vocab;
    bool pp = o.stages > 1;
    uint32_t pp0 = 0;
    Op send = o.startedTransfers ? Op::SendStart : Op::Send;
    Op recv = o.startedTransfers ? Op::RecvStart : Op::Recv;
    double rate = o.dropout;
    std::vector<int64_t> act = {R, S, H}, qkvShape = {R, 1, S, H};
    if (function == "start") {
      if (o.actions) {
        for (uint32_t id : accumulators[stage])
          k(Op::Zeros, {}, {id});
      } else if (!pp || stage == 1) {
        k(Op::CountTargets, {buffers.at("labels")}, {total}, {-100});
      }
    } else if (function == "count") {
      if (o.actions) {
        uint32_t c = temp("c", I64, {});
        k(Op::CountTargets, {input("labels")}, {c}, {-100});
        k(Op::Add, {total, c}, {total});
      }
    } else if (function == "scale") {
      k(Op::InverseCount, {total}, {named("dsum", F32, {})});
    } else if (function == "F") {
      uint32_t hr = 0;
      if (!pp || stage == 0) {
        uint32_t x = temp("x", F32, act);
        k(Op::Embedding, {e, input("input_ids")}, {x});
        uint32_t mask = stash("mask", U8, act);
        k(Op::DropoutMask, {}, {mask}, stream(1, R * S * H), {rate});
        uint32_t xd = stash("xd", F32, act);
        k(Op::ApplyMask, {x, mask}, {xd}, {}, {rate});
        uint32_t h = stash("h", F32, act);
        k(Op::Linear, {xd, w0}, {h});
        hr = h;
      }
      if (!pp || stage == 1) {
        if (pp)
          hr = stash("hr", F32, act);
        uint32_t a = temp("a", F32, act);
        k(Op::Gelu, {hr}, {a}, {}, {}, 1);
        uint32_t qkv = stash("qkv", F32, qkvShape);
        k(Op::Copy, {a}, {qkv});
        uint32_t att = temp("att", F32, qkvShape);
        // The attention's stream indexes its probabilities [R, 1, S, S].
        k(Op::Attention, {qkv, qkv, qkv}, {att}, stream(3, R * S * S),
          {0.5, rate});
        uint32_t o2 = stash("o2", F32, act);
        k(Op::Copy, {att}, {o2});
        uint32_t z = stash("z", F32, act);
        k(Op::Linear, {o2, w1}, {z});
        uint32_t logits = stash("logits", F32, {R, S, V});
        k(Op::Linear, {z, head}, {logits}, {}, {}, 1);
        uint32_t sum = temp("sum", F32, {}), count = temp("count", I64, {});
        k(Op::CrossEntropy, {logits, input("labels")}, {sum, count}, {-100});
        accumulate(lossSum, sum);
      }
    } else if (function == "sendA") {
      k(send, {stash("h", F32, act)}, {}, {1, pp0});
    } else if (function == "recvA") {
      k(o.blockingActivationRecv ? Op::Recv : recv, {}, {stash("hr", F32, act)},
        {0, pp0});
    } else if (function == "sendG") {
      k(send, {stash("dh", F32, act)}, {}, {0, pp0});
    } else if (function == "recvG") {
      k(recv, {}, {stash("dhr", F32, act)}, {1, pp0});
    } else if (function == "waitA") {
      k(Op::Wait, {stash(stage == 0 ? "h" : "hr", F32, act)}, {});
    } else if (function == "waitG") {
      k(Op::Wait, {stash(stage == 0 ? "dhr" : "dh", F32, act)}, {});
    } else if (function == "B") {
      uint32_t dh = 0;
      if (!pp || stage == 1) {
        uint32_t dLogits = temp("dLogits", F32, {R, S, V});
        k(Op::CrossEntropyGrad,
          {stash("logits", F32, {R, S, V}), input("labels"),
           named("dsum", F32, {})},
          {dLogits}, {-100});
        uint32_t dz = temp("dz", F32, act);
        k(Op::LinearInputGrad, {dLogits, head}, {dz}, {}, {}, 1);
        uint32_t gHeadI = temp("gHead_i", F32, {V, H});
        k(Op::LinearWeightGrad, {stash("z", F32, act), dLogits}, {gHeadI}, {},
          {}, 1);
        accumulate(gHead, gHeadI);
        uint32_t dO2 = temp("dO2", F32, act);
        k(Op::LinearInputGrad, {dz, w1}, {dO2});
        uint32_t gW1I = temp("gW1_i", F32, {H, H});
        k(Op::LinearWeightGrad, {stash("o2", F32, act), dz}, {gW1I});
        accumulate(gW1, gW1I);
        uint32_t dAtt = temp("dAtt", F32, qkvShape);
        k(Op::Copy, {dO2}, {dAtt});
        uint32_t qkv = stash("qkv", F32, qkvShape);
        uint32_t dq = temp("dq", F32, qkvShape), dk = temp("dk", F32, qkvShape),
                 dv = temp("dv", F32, qkvShape);
        k(Op::AttentionGrad, {dAtt, qkv, qkv, qkv}, {dq, dk, dv},
          stream(3, R * S * S), {0.5, rate});
        k(Op::Add, {dq, dk}, {dq});
        k(Op::Add, {dq, dv}, {dq});
        uint32_t da = temp("da", F32, act);
        k(Op::Copy, {dq}, {da});
        dh = pp ? stash("dh", F32, act) : temp("dh", F32, act);
        k(Op::GeluGrad, {da, stash(pp ? "hr" : "h", F32, act)}, {dh}, {}, {},
          1);
      }
      if (!pp || stage == 0) {
        if (pp)
          dh = stash("dhr", F32, act);
        uint32_t dxd = temp("dxd", F32, act);
        k(Op::LinearInputGrad, {dh, w0}, {dxd});
        uint32_t gW0I = temp("gW0_i", F32, {H, H});
        k(Op::LinearWeightGrad, {stash("xd", F32, act), dh}, {gW0I});
        accumulate(gW0, gW0I);
        uint32_t dx = temp("dx", F32, act);
        k(Op::ApplyMask, {dxd, stash("mask", U8, act)}, {dx}, {}, {rate});
        uint32_t gEI = temp("gE_i", F32, {V, H});
        k(Op::EmbeddingGrad, {dx, input("input_ids")}, {gEI});
        accumulate(gE, gEI);
      }
    } else if (function == "end") {
      if (!pp || stage == 1)
        k(Op::LossMean, {lossSum, total}, {named("loss", F32, {})});
      std::vector<uint32_t> grads;
      if (!pp || stage == 0)
        grads = {gE, gW0};
      if (!pp || stage == 1)
        grads.insert(grads.end(), {gW1, gHead});
      uint32_t squares = named("squares", F32, {});
      if (pp) {
        uint32_t mine = temp("ss" + std::to_string(stage), F32, {});
        k(Op::SumSquares, grads, {mine});
        k(Op::AllReduce, {mine}, {squares}, {pp0});
      } else {
        k(Op::SumSquares, grads, {squares});
      }
      uint32_t norm = named("norm", F32, {}), coefficient = temp("coef", F32, {});
      k(Op::ClipCoefficient, {squares}, {norm, coefficient}, {}, {1.0});
      uint32_t lr = named("lr", F32, {});
      k(Op::LrSchedule, {step}, {lr}, {0, 0}, {0.25, 0.0});
      std::vector<std::pair<uint32_t, uint32_t>> updates;
      if (!pp || stage == 0)
        updates.insert(updates.end(), {{e, gE}, {w0, gW0}});
      if (!pp || stage == 1)
        updates.insert(updates.end(), {{w1, gW1}, {head, gHead}});
      for (auto [p, g] : updates) {
        uint32_t m = momentumOf(p);
        k(Op::SgdUpdate, {p, g, m, lr, coefficient}, {p, m}, {}, {0.9, 0.01});
      }
    }
  }

  uint32_t momentumOf(uint32_t paramBuffer) const {
    for (const auto &st : exe.state)
      if (exe.params[st->param]->buffer == paramBuffer)
        return st->buffer;
    return 0;
  }

  /// Unpooled buffers one after the other, then each pool: its slots one
  /// after the other, each slot the pool's buffers one after the other.
  void layOut() {
    auto line = [](uint64_t bytes) { return (bytes + 63) / 64 * 64; };
    uint64_t end = 0;
    for (auto &buffer : exe.buffers)
      if (buffer->pool < 0) {
        buffer->offset = end;
        end += line(buffer->size);
      }
    for (size_t p = 0; p < exe.pools.size(); ++p) {
      uint64_t within = 0;
      for (uint32_t id : poolBuffers[p]) {
        exe.buffers[id]->offset = end + within;
        within += line(exe.buffers[id]->size);
      }
      exe.pools[p]->stride = within;
      end += within * exe.pools[p]->slots;
    }
    exe.arena_bytes = end;
    exe.planned_peak_bytes = end;
    if (o.stages > 1)
      exe.stage_planned_peak_bytes.assign(o.stages, end);
  }
};

inline fb::ExecutableT actionModel(const ActionModelOptions &o = {}) {
  return ActionModel(o).build();
}

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_ACTIONEXECUTABLES_H
