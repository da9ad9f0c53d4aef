//===- LifetimesTest.cpp - the lifetimes, plan and peak over actions ------===//
//
// The loader's replay of action lists (Lifetimes.cpp) against a reference
// written here from the rules of docs/runtime/executable-format.md
// ("Lifetimes and the measured peak", "Functions, pools and actions"), by
// brute force over every (action, kernel) run and every pair of live
// intervals: on many small random programs (seeded) with several functions,
// pools of several slots (by slot and by microbatch), values crossing
// functions, params and inputs, outputs, buffers of no bytes, and now and
// then a read too early, a write of a param or input, a kernel whose result
// overlaps an operand, plans that put live buffers on the same bytes, the
// acceptance, the measured peak and every instance's intervals and lifetime
// agree. So too with started transfers (send_start, recv_start, wait, and
// blocking send and recv among them) on stage 0 of two, stage 1 taking
// them in order: the rules of a transfer in flight (one wait later in the
// step, nothing touching the buffer in between but what the transfer
// allows, the wait by the start's microbatch where slots change hands).
// And the replay's cost: a step of many actions over large functions is
// checked allocating about what a few actions do.
//
//===----------------------------------------------------------------------===//

#include "TestExecutables.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Program.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

using Op = fb::OpCode;

/// A random step: buffers of 64, 128 or no bytes (f32 [16], [2, 16] or
/// [0, 16]), the kernels of its functions, its actions.
struct Spec {
  struct Buffer {
    uint64_t offset = 0;
    int shape = 0; // [16], [2, 16], [0, 16]
    int32_t pool = -1;
    uint64_t bytes() const { return shape == 0 ? 64 : shape == 1 ? 128 : 0; }
  };
  struct Pool {
    uint32_t slots = 1;
    uint64_t stride = 0;
    bool byMicrobatch = false;
  };
  struct Kernel {
    Kernel(Op op = Op::Copy, std::vector<uint32_t> operands = {},
           std::vector<uint32_t> results = {}, std::vector<int64_t> ints = {})
        : op(op), operands(std::move(operands)), results(std::move(results)),
          ints(std::move(ints)) {}
    Op op;
    std::vector<uint32_t> operands, results;
    /// A transfer's [peer, axes...].
    std::vector<int64_t> ints;
  };
  struct Action {
    uint32_t function = 0, microbatch = 0, slot = 0;
  };
  std::vector<Buffer> buffers;
  std::vector<Pool> pools;
  std::vector<Kernel> kernels;
  /// Each function's first kernel; the last ends at kernels.size().
  std::vector<uint32_t> functions;
  std::vector<Action> actions;
  std::vector<uint32_t> params, inputs, outputs;
  uint64_t arena = 0;
  /// Stage 0 of two ("pp" = 2), its transfers to and from stage 1, which
  /// takes each in the order stage 0 posts them (blocking, so that it
  /// never waits for a transfer stage 0 has not posted).
  bool pipeline = false;

  static bool isTransfer(Op op) {
    return op == Op::Send || op == Op::Recv || op == Op::SendStart ||
           op == Op::RecvStart;
  }

  uint32_t slotsOf(uint32_t b) const {
    return buffers[b].pool < 0 ? 1 : pools[buffers[b].pool].slots;
  }
  /// The slot action `a` addresses: the microbatch in a by_microbatch pool,
  /// else the action's slot mod the pool's slots.
  uint32_t slotOf(uint32_t b, const Action &a) const {
    if (buffers[b].pool < 0)
      return 0;
    const Pool &pool = pools[buffers[b].pool];
    return pool.byMicrobatch ? a.microbatch : a.slot % pool.slots;
  }
  /// Whether an action addresses a pool that is not by microbatch at a slot
  /// beyond its slots (which the pool takes mod its slots).
  bool wraps() const {
    for (const Action &a : actions)
      for (uint32_t k = functions[a.function]; k < functionEnd(a.function); ++k)
        for (const auto *list : {&kernels[k].operands, &kernels[k].results})
          for (uint32_t b : *list)
            if (buffers[b].pool >= 0 && !pools[buffers[b].pool].byMicrobatch &&
                a.slot >= pools[buffers[b].pool].slots)
              return true;
    return false;
  }
  uint64_t offsetOf(uint32_t b, uint32_t slot) const {
    const Buffer &buffer = buffers[b];
    return buffer.offset +
           (buffer.pool < 0 ? 0 : slot * pools[buffer.pool].stride);
  }
  uint32_t functionEnd(uint32_t f) const {
    return f + 1 < functions.size() ? functions[f + 1]
                                    : static_cast<uint32_t>(kernels.size());
  }

  fb::ExecutableT executable() const {
    fb::ExecutableT exe;
    exe.schema_version = kExecutableSchemaVersion;
    for (const Buffer &buffer : buffers) {
      std::vector<int64_t> shape = buffer.shape == 0 ? std::vector<int64_t>{16}
                                   : buffer.shape == 1
                                       ? std::vector<int64_t>{2, 16}
                                       : std::vector<int64_t>{0, 16};
      exe.buffers.push_back(makeBuffer(buffer.offset, fb::DType::F32, shape));
      exe.buffers.back()->pool = buffer.pool;
    }
    for (const Pool &pool : pools) {
      auto p = std::make_unique<fb::PoolT>();
      p->slots = pool.slots;
      p->stride = pool.stride;
      p->by_microbatch = pool.byMicrobatch;
      exe.pools.push_back(std::move(p));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      auto p = std::make_unique<fb::ParamT>();
      p->hf_name = "w" + std::to_string(i);
      p->view_shape = p->hf_shape = exe.buffers[params[i]]->shape;
      p->buffer = params[i];
      exe.params.push_back(std::move(p));
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      exe.inputs.push_back(makeBinding("x" + std::to_string(i), inputs[i]));
    for (size_t i = 0; i < outputs.size(); ++i)
      exe.outputs.push_back(makeBinding("y" + std::to_string(i), outputs[i]));
    for (const Kernel &kernel : kernels) {
      exe.kernels.push_back(
          makeKernel(kernel.op, kernel.operands, kernel.results));
      exe.kernels.back()->int_attrs = kernel.ints;
    }
    for (uint32_t f = 0; f < functions.size(); ++f) {
      auto function = std::make_unique<fb::FunctionT>();
      function->name = "f" + std::to_string(f);
      function->first_kernel = functions[f];
      function->kernel_count = functionEnd(f) - functions[f];
      exe.functions.push_back(std::move(function));
    }
    exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
    for (const Action &a : actions)
      exe.stage_actions[0]->actions.emplace_back(a.function, a.microbatch,
                                                 a.slot);
    exe.arena_bytes = arena;
    exe.planned_peak_bytes = arena;
    if (pipeline)
      addStageOne(exe);
    return exe;
  }

  /// The mesh [pp=2] and stage 1: per buffer shape a param it sends from
  /// and a buffer it receives into, a one-kernel function for each, and an
  /// action per transfer stage 0's step posts, in that order.
  void addStageOne(fb::ExecutableT &exe) const {
    auto axis = std::make_unique<fb::MeshAxisT>();
    axis->name = "pp";
    axis->size = 2;
    exe.mesh.push_back(std::move(axis));
    uint32_t firstBuffer = static_cast<uint32_t>(exe.buffers.size());
    uint32_t firstFunction = static_cast<uint32_t>(exe.functions.size());
    const std::vector<int64_t> shapes[] = {{16}, {2, 16}, {0, 16}};
    uint64_t at = 0;
    for (int shape = 0; shape < 3; ++shape) {
      // Buffer firstBuffer + 2 * shape sends, the next one receives.
      for (int receives = 0; receives < 2; ++receives) {
        exe.buffers.push_back(makeBuffer(at, fb::DType::F32, shapes[shape]));
        at += 128;
      }
      uint32_t from = firstBuffer + 2 * shape;
      auto p = std::make_unique<fb::ParamT>();
      p->hf_name = "stage1." + std::to_string(shape);
      p->view_shape = p->hf_shape = shapes[shape];
      p->buffer = from;
      exe.params.push_back(std::move(p));
      for (int receives = 0; receives < 2; ++receives) {
        auto function = std::make_unique<fb::FunctionT>();
        function->name = (receives ? "recv" : "send") + std::to_string(shape);
        function->first_kernel = static_cast<uint32_t>(exe.kernels.size());
        function->kernel_count = 1;
        exe.functions.push_back(std::move(function));
        exe.kernels.push_back(
            receives ? makeKernel(Op::Recv, {}, {from + 1})
                     : makeKernel(Op::Send, {from}, {}));
        exe.kernels.back()->int_attrs = {0, 0};
        exe.kernels.back()->stage = 1;
      }
    }
    exe.arena_bytes = std::max<uint64_t>(exe.arena_bytes, at);
    exe.planned_peak_bytes = exe.arena_bytes;
    exe.stage_planned_peak_bytes = {exe.arena_bytes, exe.arena_bytes};
    exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
    for (const Action &a : actions)
      for (uint32_t k = functions[a.function]; k < functionEnd(a.function);
           ++k) {
        const Kernel &kernel = kernels[k];
        if (!isTransfer(kernel.op))
          continue;
        bool stageZeroSends =
            kernel.op == Op::Send || kernel.op == Op::SendStart;
        uint32_t buffer =
            stageZeroSends ? kernel.operands[0] : kernel.results[0];
        // Stage 1 receives what stage 0 sends, and the other way round.
        exe.stage_actions[1]->actions.emplace_back(
            firstFunction + 2 * buffers[buffer].shape + (stageZeroSends ? 1 : 0),
            0, 0);
      }
  }
};

/// What the rules say of a Spec: accepted or not, and if so the peak and
/// each instance's live intervals in time order.
struct Expected {
  bool accepted = false;
  uint64_t peak = 0;
  std::vector<uint32_t> base;
  std::vector<std::vector<Lifetime>> intervals;
};

Expected reference(const Spec &spec) {
  Expected out;
  uint32_t numInstances = 0;
  for (uint32_t b = 0; b < spec.buffers.size(); ++b) {
    out.base.push_back(numInstances);
    numInstances += spec.slotsOf(b);
  }
  auto isIn = [](const std::vector<uint32_t> &list, uint32_t b) {
    return std::find(list.begin(), list.end(), b) != list.end();
  };
  // A kernel's result shares no byte with its operands but their very bytes
  // (gelu, copy and add run in place).
  auto aliasingHolds = [&](const Spec::Kernel &kernel, const Spec::Action &a) {
    for (uint32_t r : kernel.results) {
      uint64_t ro = spec.offsetOf(r, spec.slotOf(r, a));
      uint64_t rb = spec.buffers[r].bytes();
      for (uint32_t o : kernel.operands) {
        uint64_t oo = spec.offsetOf(o, spec.slotOf(o, a));
        uint64_t ob = spec.buffers[o].bytes();
        bool overlap = rb && ob && ro < oo + ob && oo < ro + rb;
        if (overlap && !(ro == oo && rb == ob))
          return false;
      }
    }
    return true;
  };
  for (const Spec::Kernel &kernel : spec.kernels) {
    bool pooled = false;
    for (const auto *list : {&kernel.operands, &kernel.results})
      for (uint32_t b : *list)
        pooled = pooled || spec.buffers[b].pool >= 0;
    if (!pooled && !aliasingHolds(kernel, {}))
      return out;
  }

  int64_t numRuns = 0;
  for (const Spec::Action &a : spec.actions)
    numRuns += spec.functionEnd(a.function) - spec.functions[a.function];
  const int64_t none = INT64_MAX;
  std::vector<Lifetime> current(numInstances, Lifetime{none, none});
  std::vector<int64_t> touchedBy(numInstances, -1);
  out.intervals.assign(numInstances, {});
  for (const auto *list : {&spec.params, &spec.inputs})
    for (uint32_t b : *list)
      for (uint32_t s = 0; s < spec.slotsOf(b); ++s)
        current[out.base[b] + s] = {Lifetime::kLoad, numRuns};
  // Started transfers: per instance nothing, a send or a receive in
  // flight, and the microbatch that started it.
  enum { Idle, Sending, Receiving };
  std::vector<int> transfer(numInstances, Idle);
  std::vector<uint32_t> startedFor(numInstances, 0);
  auto slotChangesHands = [&](uint32_t b) {
    return spec.buffers[b].pool >= 0 &&
           !spec.pools[spec.buffers[b].pool].byMicrobatch;
  };
  int64_t t = 0;
  for (size_t a = 0; a < spec.actions.size(); ++a) {
    const Spec::Action &action = spec.actions[a];
    for (uint32_t k = spec.functions[action.function];
         k < spec.functionEnd(action.function); ++k, ++t) {
      const Spec::Kernel &kernel = spec.kernels[k];
      if (!aliasingHolds(kernel, action))
        return out;
      // A wait ends a transfer started by its microbatch (where slots
      // change hands); a start needs none in flight; a buffer being sent
      // is only read, one being received not touched.
      for (uint32_t b : kernel.operands) {
        uint32_t i = out.base[b] + spec.slotOf(b, action);
        if (kernel.op == Op::Wait) {
          if (transfer[i] == Idle ||
              (slotChangesHands(b) && startedFor[i] != action.microbatch))
            return out;
          transfer[i] = Idle;
        } else if (kernel.op == Op::SendStart) {
          if (transfer[i] != Idle)
            return out;
          transfer[i] = Sending;
          startedFor[i] = action.microbatch;
        } else if (transfer[i] == Receiving) {
          return out;
        }
      }
      for (uint32_t b : kernel.results) {
        uint32_t i = out.base[b] + spec.slotOf(b, action);
        if (transfer[i] != Idle)
          return out;
        if (kernel.op == Op::RecvStart) {
          transfer[i] = Receiving;
          startedFor[i] = action.microbatch;
        }
      }
      for (uint32_t b : kernel.operands) {
        uint32_t i = out.base[b] + spec.slotOf(b, action);
        if (current[i].first == none)
          return out; // read before written
        current[i].last = std::max(current[i].last, t);
        touchedBy[i] = static_cast<int64_t>(a);
      }
      for (uint32_t b : kernel.results) {
        if (isIn(spec.params, b) || isIn(spec.inputs, b))
          return out; // only read (no optimizer update here)
        uint32_t i = out.base[b] + spec.slotOf(b, action);
        if (current[i].first != none &&
            touchedBy[i] != static_cast<int64_t>(a)) {
          out.intervals[i].push_back(current[i]);
          current[i] = {none, none};
        }
        if (current[i].first == none)
          current[i] = {t, t};
        current[i].last = t;
        touchedBy[i] = static_cast<int64_t>(a);
      }
    }
  }
  for (uint32_t b : spec.outputs) {
    if (current[out.base[b]].first == none)
      return out; // never written
    current[out.base[b]].last = numRuns;
  }
  for (int state : transfer)
    if (state != Idle)
      return out; // a transfer in flight at the end
  for (uint32_t i = 0; i < numInstances; ++i)
    if (current[i].first != none)
      out.intervals[i].push_back(current[i]);

  // Every live interval with its bytes.
  struct Live {
    Lifetime life;
    uint64_t offset, bytes;
  };
  std::vector<Live> all;
  for (uint32_t b = 0; b < spec.buffers.size(); ++b)
    for (uint32_t s = 0; s < spec.slotsOf(b); ++s)
      for (const Lifetime &life : out.intervals[out.base[b] + s])
        all.push_back({life, spec.offsetOf(b, s), spec.buffers[b].bytes()});
  // Two intervals clash when they share a byte and one starts while the
  // other is live, but where the other's last read is that very run.
  for (size_t x = 0; x < all.size(); ++x)
    for (size_t y = x + 1; y < all.size(); ++y) {
      const Live &p = all[x], &q = all[y];
      if (!p.bytes || !q.bytes || p.offset >= q.offset + q.bytes ||
          q.offset >= p.offset + p.bytes)
        continue;
      int64_t pf = p.life.first, qf = q.life.first;
      if (pf == qf || (pf < qf && qf < p.life.last) ||
          (qf < pf && pf < q.life.last))
        return out;
    }
  for (int64_t r = Lifetime::kLoad; r <= numRuns; ++r) {
    uint64_t bytes = 0;
    for (const Live &live : all)
      if (live.life.first <= r && r <= live.life.last)
        bytes += live.bytes;
    out.peak = std::max(out.peak, bytes);
  }
  out.accepted = true;
  return out;
}

/// A random Spec from `seed`: a prologue (run once, first) and 1 to 4
/// functions that each microbatch runs in order, of 1 to 7 kernels each;
/// pools; reads mostly of what the prologue, an earlier function or an
/// earlier kernel of the function wrote (now and then of anything, so
/// that some read too early); results mostly sharing no byte with their
/// operands but their very bytes; offsets on few lanes, so that plans are
/// right about half the time; the microbatches interleaved, each slot held
/// by one microbatch at a time (action slots below every pool's slots, or
/// the microbatch itself, wrapping in each pool).
Spec randomSpec(uint32_t seed, bool transfers = false) {
  std::mt19937 rng(seed);
  auto uniform = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  auto chance = [&](double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng) < p;
  };
  Spec spec;
  spec.pipeline = transfers;
  uint32_t microbatches = uniform(1, 5);
  uint32_t numPools = uniform(0, 2);
  for (uint32_t p = 0; p < numPools; ++p) {
    Spec::Pool pool;
    pool.byMicrobatch = chance(0.3);
    pool.slots = pool.byMicrobatch ? microbatches : uniform(1, 3);
    spec.pools.push_back(pool);
  }
  // Mostly [16], some [2, 16], now and then [0, 16].
  auto shape = [&]() { return chance(0.05) ? 2 : chance(0.4) ? 1 : 0; };
  auto add = [&](int shape, int32_t pool) {
    Spec::Buffer buffer;
    buffer.shape = shape;
    buffer.pool = pool;
    spec.buffers.push_back(buffer);
    return static_cast<uint32_t>(spec.buffers.size() - 1);
  };
  for (uint32_t i = 0, n = uniform(1, 2); i < n; ++i)
    spec.params.push_back(add(shape(), -1));
  for (uint32_t i = 0, n = uniform(0, 1); i < n; ++i) {
    int32_t pool = -1;
    for (uint32_t p = 0; p < numPools; ++p)
      if (spec.pools[p].byMicrobatch && chance(0.7))
        pool = static_cast<int32_t>(p);
    spec.inputs.push_back(add(shape(), pool));
  }
  std::vector<uint32_t> values;
  for (uint32_t i = 0, n = uniform(3, 12); i < n; ++i) {
    int32_t pool = numPools && chance(0.4)
                       ? static_cast<int32_t>(uniform(0, numPools - 1))
                       : -1;
    values.push_back(add(shape(), pool));
  }

  // Offsets, 64-aligned: params and inputs one after the other (now and
  // then on another's bytes), the other unpooled buffers on few lanes after
  // them; each pool after those (or, now and then, over them), its buffers
  // at random places in its stride.
  uint64_t end = 0;
  for (const std::vector<uint32_t> *list : {&spec.params, &spec.inputs})
    for (uint32_t b : *list) {
      Spec::Buffer &buffer = spec.buffers[b];
      if (buffer.pool >= 0)
        continue;
      buffer.offset = chance(0.05) ? 64 * uint64_t(uniform(0, 2)) : end;
      end = std::max(end, buffer.offset + buffer.bytes());
    }
  uint32_t unpooled = 0;
  for (const Spec::Buffer &buffer : spec.buffers)
    unpooled += buffer.pool < 0;
  uint32_t lanes = unpooled + unpooled / 2 + 1;
  uint64_t first = end;
  for (uint32_t b : values) {
    Spec::Buffer &buffer = spec.buffers[b];
    if (buffer.pool >= 0)
      continue;
    buffer.offset =
        (chance(0.05) ? 0 : first) + 64 * uint64_t(uniform(0, lanes));
    end = std::max(end, buffer.offset + buffer.bytes());
  }
  for (uint32_t p = 0; p < numPools; ++p) {
    uint32_t count = 0;
    for (const Spec::Buffer &buffer : spec.buffers)
      count += buffer.pool == static_cast<int32_t>(p);
    uint64_t start = chance(0.1) ? 64 * uint64_t(uniform(0, lanes)) : end;
    uint64_t stride = 128 * (count + 1);
    for (Spec::Buffer &buffer : spec.buffers)
      if (buffer.pool == static_cast<int32_t>(p))
        buffer.offset = start + 64 * uint64_t(uniform(0, 2 * count));
    spec.pools[p].stride = stride;
    end = std::max(end, start + stride * spec.pools[p].slots);
  }
  spec.arena = end;

  // One of `from` of shape `shape` (-1: any).
  auto pick = [&](const std::vector<uint32_t> &from, int shape) -> int64_t {
    std::vector<uint32_t> fit;
    for (uint32_t b : from)
      if (shape < 0 || spec.buffers[b].shape == shape)
        fit.push_back(b);
    if (fit.empty())
      return -1;
    return fit[uniform(0, static_cast<uint32_t>(fit.size() - 1))];
  };
  std::vector<uint32_t> everything = values;
  everything.insert(everything.end(), spec.params.begin(), spec.params.end());
  everything.insert(everything.end(), spec.inputs.begin(), spec.inputs.end());
  // What the functions so far wrote, and the params and inputs.
  std::vector<uint32_t> written = spec.params;
  written.insert(written.end(), spec.inputs.begin(), spec.inputs.end());
  auto read = [&](int shape) {
    return pick(chance(0.03) ? everything : written, shape);
  };
  // An add's rhs: [16], or the lhs's shape.
  auto rhsOf = [&](int64_t lhs) {
    return lhs < 0 ? -1 : read(chance(0.5) ? spec.buffers[lhs].shape : 0);
  };
  auto overlaps = [&](uint32_t x, uint32_t y) {
    const Spec::Buffer &p = spec.buffers[x], &q = spec.buffers[y];
    bool overlap =
        p.offset < q.offset + q.bytes() && q.offset < p.offset + p.bytes();
    return overlap && !(p.offset == q.offset && p.shape == q.shape);
  };
  // A result: a value (the prologue's unpooled), now and then a param or an
  // input (refused); mostly none that overlaps an operand.
  auto result = [&](int shape, bool prologue,
                    const std::vector<uint32_t> &operands) -> int64_t {
    std::vector<uint32_t> from;
    if (chance(0.01)) {
      from = spec.params;
      from.insert(from.end(), spec.inputs.begin(), spec.inputs.end());
    } else {
      bool careful = !chance(0.05);
      for (uint32_t b : values) {
        if (prologue && spec.buffers[b].pool >= 0)
          continue;
        bool clear = true;
        for (uint32_t o : operands)
          clear = clear && !(careful && o != b && overlaps(o, b));
        if (clear)
          from.push_back(b);
      }
    }
    return pick(from, shape);
  };
  // With transfers: the buffers the function started and has not yet
  // waited for, which waits mostly pick (a received one is read once it has
  // been waited for).
  std::vector<uint32_t> pending;
  auto waitFor = [&](uint32_t b) {
    spec.kernels.push_back({Op::Wait, {b}});
    written.push_back(b);
  };
  uint32_t numFunctions = uniform(2, 5);
  for (uint32_t f = 0; f < numFunctions; ++f) {
    spec.functions.push_back(static_cast<uint32_t>(spec.kernels.size()));
    // At least one kernel (a wait with none to wait for adds none).
    for (uint32_t k = 0, n = uniform(1, 7);
         k < n || spec.kernels.size() == spec.functions.back(); ++k) {
      Spec::Kernel kernel{Op::Zeros};
      uint32_t kind = uniform(0, transfers ? 9 : 4);
      if (kind >= 5) {
        // 5, 6: send_start, send of a value; 7, 8: recv_start, recv into
        // one; 9: a wait, mostly for a pending transfer.
        if (kind == 9) {
          int64_t b = -1;
          if (!pending.empty() && !chance(0.1)) {
            size_t i = uniform(0, static_cast<uint32_t>(pending.size() - 1));
            b = pending[i];
            pending.erase(pending.begin() + i);
          } else if (chance(0.2)) {
            b = pick(everything, -1);
          } else {
            continue;
          }
          waitFor(static_cast<uint32_t>(b));
          continue;
        }
        bool sends = kind <= 6, starts = kind == 5 || kind == 7;
        int64_t b = sends ? read(-1) : result(-1, f == 0, {});
        if (b < 0)
          continue;
        Op op = sends ? (starts ? Op::SendStart : Op::Send)
                      : (starts ? Op::RecvStart : Op::Recv);
        spec.kernels.push_back({op, {}, {}, {1, 0}});
        (sends ? spec.kernels.back().operands : spec.kernels.back().results)
            .push_back(static_cast<uint32_t>(b));
        if (starts)
          pending.push_back(static_cast<uint32_t>(b));
        else if (!sends)
          written.push_back(static_cast<uint32_t>(b));
        continue;
      }
      if (kind == 0 || kind == 1) { // gelu, copy: the operand's shape
        int64_t x = read(-1);
        if (x >= 0)
          kernel = {
              kind == 0 ? Op::Gelu : Op::Copy, {static_cast<uint32_t>(x)}, {}};
      } else if (kind == 2) { // add: rhs [16] or lhs's shape
        int64_t lhs = read(-1);
        int64_t rhs = rhsOf(lhs);
        if (rhs >= 0)
          kernel = {Op::Add,
                    {static_cast<uint32_t>(lhs), static_cast<uint32_t>(rhs)},
                    {}};
      } else if (kind == 3) { // acc += x, in place
        int64_t acc = read(-1);
        int64_t x = rhsOf(acc);
        if (x >= 0 &&
            std::find(values.begin(), values.end(), acc) != values.end())
          kernel = {Op::Add,
                    {static_cast<uint32_t>(acc), static_cast<uint32_t>(x)},
                    {static_cast<uint32_t>(acc)}};
      }
      if (kernel.results.empty()) {
        int shape = kernel.operands.empty()
                        ? -1
                        : spec.buffers[kernel.operands[0]].shape;
        int64_t y = result(shape, f == 0, kernel.operands);
        if (y < 0) {
          kernel = {Op::Zeros, {}, {}};
          y = result(-1, false, {});
        }
        kernel.results.push_back(static_cast<uint32_t>(y));
      }
      for (uint32_t b : kernel.results)
        written.push_back(b);
      spec.kernels.push_back(kernel);
    }
    // Mostly, the function's transfers end with it (a wait in a later
    // function runs once per run of that one).
    if (transfers && chance(0.9))
      for (uint32_t b : pending)
        waitFor(b);
    pending.clear();
  }
  for (uint32_t b : values)
    if (spec.buffers[b].pool < 0 && chance(0.3) &&
        (std::find(written.begin(), written.end(), b) != written.end() ||
         chance(0.1)))
      spec.outputs.push_back(b);

  // The prologue, then each microbatch's functions in order, a microbatch
  // starting once the ones before it on its slots are done. Slots by
  // microbatch: half the time mb % slots (the smallest pool's, below every
  // pool's slots), else mb itself (tpc-compile's numbering), which each
  // pool takes mod its own slots.
  bool wraps = chance(0.5);
  uint32_t slots = 3;
  for (const Spec::Pool &pool : spec.pools)
    if (!pool.byMicrobatch)
      slots = std::min(slots, pool.slots);
  spec.actions.push_back({0, 0, 0});
  std::vector<uint32_t> done(microbatches, 0);
  uint32_t steps = numFunctions - 1;
  auto isReady = [&](uint32_t mb) {
    if (done[mb] == steps)
      return false;
    if (!wraps)
      return mb < slots || done[mb - slots] == steps;
    for (const Spec::Pool &pool : spec.pools)
      if (!pool.byMicrobatch && mb >= pool.slots &&
          done[mb - pool.slots] != steps)
        return false;
    return true;
  };
  for (;;) {
    std::vector<uint32_t> ready;
    for (uint32_t mb = 0; mb < microbatches; ++mb)
      if (isReady(mb))
        ready.push_back(mb);
    if (ready.empty())
      break;
    uint32_t mb = ready[uniform(0, static_cast<uint32_t>(ready.size() - 1))];
    spec.actions.push_back({1 + done[mb]++, mb, wraps ? mb : mb % slots});
  }
  return spec;
}

/// Expects instance `i`'s intervals in `program` to be the reference's.
void expectIntervals(uint32_t seed, const Program &program, uint32_t i,
                     const std::vector<Lifetime> &want) {
  std::vector<Lifetime> got = program.intervalsOf(i);
  ASSERT_EQ(got.size(), want.size()) << "seed " << seed << " instance " << i;
  for (size_t v = 0; v < got.size(); ++v) {
    EXPECT_EQ(got[v].first, want[v].first) << "seed " << seed;
    EXPECT_EQ(got[v].last, want[v].last) << "seed " << seed;
  }
}

TEST(LifetimesTest, TheReplayFollowsTheRulesOnRandomSteps) {
  int accepted = 0, refused = 0, wrapped = 0;
  for (uint32_t seed = 1; seed <= 5000; ++seed) {
    Spec spec = randomSpec(seed);
    Expected expected = reference(spec);
    fb::ExecutableT exe = spec.executable();
    std::vector<uint8_t> payload = pack(exe);
    const fb::Executable &root = *fb::GetExecutable(payload.data());
    Status checked = checkExecutable(root);
    ASSERT_EQ(checked.isOk(), expected.accepted)
        << "seed " << seed << ": " << checked.message();
    if (!expected.accepted) {
      ++refused;
      continue;
    }
    ++accepted;
    wrapped += spec.wraps();
    Program program;
    ASSERT_TRUE(decodeProgram(root, program));
    EXPECT_EQ(program.peakBytes, expected.peak) << "seed " << seed;
    for (uint32_t b = 0; b < spec.buffers.size(); ++b) {
      Lifetime span{0, -1};
      for (uint32_t s = 0; s < spec.slotsOf(b); ++s) {
        uint32_t i = expected.base[b] + s;
        const std::vector<Lifetime> &want = expected.intervals[i];
        ASSERT_NO_FATAL_FAILURE(expectIntervals(seed, program, i, want));
        Lifetime whole{0, -1};
        if (!want.empty())
          whole = {want.front().first, want.back().last};
        EXPECT_EQ(program.instanceLifetimes[i].first, whole.first);
        EXPECT_EQ(program.instanceLifetimes[i].last, whole.last);
        if (whole.live()) {
          span.first =
              span.live() ? std::min(span.first, whole.first) : whole.first;
          span.last = std::max(span.last, whole.last);
        }
      }
      EXPECT_EQ(program.lifetimes[b].first, span.first) << "seed " << seed;
      EXPECT_EQ(program.lifetimes[b].last, span.last) << "seed " << seed;
    }
  }
  // Both outcomes are common, and accepted steps address slots beyond
  // their pools' slots.
  EXPECT_GT(accepted, 600);
  EXPECT_GT(refused, 600);
  EXPECT_GT(wrapped, 100);
  std::printf("random steps: %d accepted (%d with wrapped slots), %d "
              "refused\n",
              accepted, wrapped, refused);
}

TEST(LifetimesTest, TheStartedTransfersFollowTheRulesOnRandomSteps) {
  int accepted = 0, refused = 0, transfers = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    Spec spec = randomSpec(seed, true);
    Expected expected = reference(spec);
    std::vector<uint8_t> payload = pack(spec.executable());
    const fb::Executable &root = *fb::GetExecutable(payload.data());
    Status checked = checkExecutable(root);
    ASSERT_EQ(checked.isOk(), expected.accepted)
        << "seed " << seed << ": " << checked.message();
    if (!expected.accepted) {
      ++refused;
      continue;
    }
    ++accepted;
    for (const Spec::Kernel &kernel : spec.kernels)
      transfers += kernel.op == Op::SendStart || kernel.op == Op::RecvStart;
    Program program;
    ASSERT_TRUE(decodeProgram(root, program));
    EXPECT_EQ(program.peakBytes, expected.peak) << "seed " << seed;
    for (uint32_t i = 0; i < expected.intervals.size(); ++i)
      ASSERT_NO_FATAL_FAILURE(
          expectIntervals(seed, program, i, expected.intervals[i]));
  }
  // Both outcomes are common, and accepted steps start transfers.
  EXPECT_GT(accepted, 300);
  EXPECT_GT(refused, 300);
  EXPECT_GT(transfers, 300);
  std::printf("random steps with transfers: %d accepted (%d started "
              "transfers), %d refused\n",
              accepted, transfers, refused);
}

//===----------------------------------------------------------------------===//
// The cost of many actions
//===----------------------------------------------------------------------===//

/// A 1F1B-like step of `microbatches` microbatches over three functions of
/// `kernels` kernels each (F, B, W), as a compiler emits them: each a chain
/// of temporaries; F stashes every 50th value in a pool of two slots, which B
/// and W read back; B and W add to an accumulator (an output) that a
/// one-kernel prologue zeroes; F draws a dropout stream.
fb::ExecutableT manyActions(uint32_t microbatches, uint32_t kernels = 500) {
  ExecutableBuilder b;
  const fb::DType F32 = fb::DType::F32;
  uint32_t w = b.param("w", F32, {16});
  uint32_t acc = b.buffer(F32, {16});
  b.output("acc", acc);
  std::vector<uint32_t> stash;
  for (uint32_t i = 0; i < kernels / 50; ++i)
    stash.push_back(b.buffer(F32, {16}));
  std::vector<uint32_t> firsts;
  firsts.push_back(0);
  b.kernel(Op::Zeros, {}, {acc});
  for (int f = 0; f < 3; ++f) {
    firsts.push_back(static_cast<uint32_t>(b.exe.kernels.size()));
    uint32_t value = f == 0 ? w : stash.back();
    for (uint32_t k = 0; k + 1 < kernels; ++k) {
      if (f == 0 && k % 50 == 49) {
        b.kernel(Op::Copy, {value}, {stash[k / 50]});
        continue;
      }
      uint32_t next = b.buffer(F32, {16});
      if (f == 0 && k == 0)
        b.kernel(Op::Dropout, {value}, {next}, {1, 0}, {0.5});
      else if (k % 50 == 49)
        b.kernel(Op::Add, {value, stash[k / 50]}, {next});
      else
        b.kernel(Op::Gelu, {value}, {next});
      value = next;
    }
    if (f == 0)
      b.kernel(Op::Copy, {value}, {stash.back()});
    else
      b.kernel(Op::Add, {acc, value}, {acc});
  }
  fb::ExecutableT exe = b.finish();
  auto pool = std::make_unique<fb::PoolT>();
  pool->slots = 2;
  pool->stride = 64 * stash.size();
  exe.pools.push_back(std::move(pool));
  for (size_t i = 0; i < stash.size(); ++i) {
    exe.buffers[stash[i]]->pool = 0;
    exe.buffers[stash[i]]->offset = exe.arena_bytes + 64 * i;
  }
  exe.arena_bytes += 2 * 64 * stash.size();
  exe.planned_peak_bytes = exe.arena_bytes;
  const char *names[] = {"start", "F", "B", "W"};
  for (uint32_t f = 0; f < 4; ++f) {
    auto function = std::make_unique<fb::FunctionT>();
    function->name = names[f];
    function->first_kernel = firsts[f];
    function->kernel_count =
        (f + 1 < 4 ? firsts[f + 1] : exe.kernels.size()) - firsts[f];
    exe.functions.push_back(std::move(function));
  }
  exe.stage_actions.push_back(std::make_unique<fb::StageActionsT>());
  auto &actions = exe.stage_actions[0]->actions;
  actions.emplace_back(0, 0, 0);
  // F0 F1 B0 W0 F2 B1 W1 ... B(M-1) W(M-1).
  for (uint32_t i = 0; i < microbatches; ++i) {
    actions.emplace_back(1, i, i % 2);
    if (i > 0) {
      actions.emplace_back(2, i - 1, (i - 1) % 2);
      actions.emplace_back(3, i - 1, (i - 1) % 2);
    }
  }
  actions.emplace_back(2, microbatches - 1, (microbatches - 1) % 2);
  actions.emplace_back(3, microbatches - 1, (microbatches - 1) % 2);
  return exe;
}

TEST(LifetimesTest, ManyActionsCostAboutWhatAFewDo) {
  struct Measure {
    double seconds;
    long allocations;
  };
  auto measure = [](uint32_t microbatches) {
    std::vector<uint8_t> payload = pack(manyActions(microbatches));
    const fb::Executable &root = *fb::GetExecutable(payload.data());
    Measure best{1e9, 0};
    for (int i = 0; i < 3; ++i) {
      long before = allocationCount();
      auto start = std::chrono::steady_clock::now();
      Status s = checkExecutable(root);
      std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start;
      EXPECT_TRUE(s) << s.message();
      best = {std::min(best.seconds, took.count()), allocationCount() - before};
    }
    return best;
  };
  Measure few = measure(8), many = measure(667);
  std::printf("checkExecutable, 3 x 500 kernels: 25 actions %.1f ms "
              "(%ld allocations), 2002 actions %.1f ms (%ld allocations)\n",
              few.seconds * 1e3, few.allocations, many.seconds * 1e3,
              many.allocations);
  // 80 times the kernel runs: the loader's replay allocated per run (about
  // 60 times as much), now per function and boundary touch. The times are
  // printed, not compared (a loaded machine).
  EXPECT_LT(many.allocations, 2 * few.allocations);
}

} // namespace
