//===- PipelineExecutables.h - a training step over pipeline stages -*- C++
//-*-===//
//
// The executable of the pipeline tests (PipelineTest.cpp, PipelineCheck.cpp,
// tpc_run_pipeline.sh): one training step of a small model cut into two
// stages, and its twin on one stage that runs the very same kernels, a copy
// where the stages send and receive and an add where they all-reduce over
// "pp", so that every value of a run on the stages can be compared bit for
// bit with the twin's.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_PIPELINEEXECUTABLES_H
#define TPCRT_TEST_PIPELINEEXECUTABLES_H

#include "TestExecutables.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace tpcrt {
namespace test {

/// What pipelineModel builds.
struct PipelineOptions {
  /// 2: mesh axis "pp" of size 2; 1: the twin, every kernel on one stage.
  int64_t stages = 2;
  /// > 1: mesh axis "dp" (after "pp"), the batch split over it and the
  /// gradients, the loss sum and the target count all-reduced over it.
  int64_t dp = 1;
  /// The buffers only one stage uses start at the same offset on every
  /// stage (they share arena bytes across stages); else all lie one after
  /// the other.
  bool shareArena = true;
  int64_t batch = 4, seq = 3, hidden = 4, vocab = 8;
};

/// Gives every buffer an offset: those of several stages (or none) first,
/// one after the other, then each stage's own, from the same offset on
/// every stage when `share`. Sets arena_bytes, planned_peak_bytes and, with
/// stages, stage_planned_peak_bytes (the end of each stage's buffers).
inline void layOutStages(fb::ExecutableT &exe, int64_t stages, bool share) {
  std::vector<std::set<uint32_t>> users(exe.buffers.size());
  for (const auto &kernel : exe.kernels) {
    for (uint32_t id : kernel->operands)
      users[id].insert(kernel->stage);
    for (uint32_t id : kernel->results)
      users[id].insert(kernel->stage);
  }
  uint64_t end = 0;
  auto place = [&](uint32_t id, uint64_t &at) {
    exe.buffers[id]->offset = at;
    at += (exe.buffers[id]->size + 63) / 64 * 64;
  };
  for (uint32_t id = 0; id < exe.buffers.size(); ++id)
    if (users[id].size() != 1)
      place(id, end);
  uint64_t shared = end, arena = end;
  std::vector<uint64_t> peaks;
  for (int64_t stage = 0; stage < stages; ++stage) {
    uint64_t at = share ? shared : arena;
    for (uint32_t id = 0; id < exe.buffers.size(); ++id)
      if (users[id].size() == 1 && *users[id].begin() == stage)
        place(id, at);
    peaks.push_back(share ? at : at - arena + shared);
    arena = std::max(arena, at);
  }
  exe.arena_bytes = arena;
  exe.planned_peak_bytes = *std::max_element(peaks.begin(), peaks.end());
  if (stages > 1)
    exe.stage_planned_peak_bytes = peaks;
}

/// One SGD training step, stage 0 the embedding (tied to the head) and a
/// linear layer, stage 1 gelu, a linear layer, the head, the loss and their
/// backward; the activation goes over as send/recv, its gradient back, and
/// the tied embedding's two gradients are summed over "pp" (all_reduce on
/// both stages), as are the stages' sums of squares for the gradient norm.
/// Both stages update the embedding alike. Params e.weight [vocab, hidden]
/// (read by both stages), w0.weight and w1.weight [hidden, hidden]; state
/// momentum; inputs input_ids (stage 0), labels (stage 1), step (both);
/// outputs loss (stage 1), grad_norm and lr (both); a grad per param.
inline fb::ExecutableT pipelineModel(const PipelineOptions &o = {}) {
  using Op = fb::OpCode;
  const fb::DType F32 = fb::DType::F32, I64 = fb::DType::I64;
  ExecutableBuilder b;
  bool pp = o.stages > 1, dp = o.dp > 1;
  auto axis = [&](const char *name, int64_t size) {
    auto a = std::make_unique<fb::MeshAxisT>();
    a->name = name;
    a->size = size;
    b.exe.mesh.push_back(std::move(a));
  };
  if (pp)
    axis("pp", o.stages);
  if (dp)
    axis("dp", o.dp);
  const int64_t ppAxis = 0, dpAxis = pp ? 1 : 0;
  int64_t B = o.batch / o.dp, S = o.seq, H = o.hidden, V = o.vocab;

  struct P {
    uint32_t index, buffer;
  };
  auto param = [&](const std::string &name, std::vector<int64_t> shape) {
    uint32_t buffer = b.param(name, F32, std::move(shape));
    // Values large enough that every kernel's output matters.
    b.exe.params.back()->init_std = 0.5;
    return P{static_cast<uint32_t>(b.exe.params.size() - 1), buffer};
  };
  P e = param("e.weight", {V, H});
  P w0 = param("w0.weight", {H, H});
  P w1 = param("w1.weight", {H, H});
  auto input = [&](const std::string &name) {
    uint32_t id = b.input(name, {B, S}, V);
    if (dp) {
      b.exe.inputs.back()->splits.push_back(std::make_unique<fb::DimSplitT>());
      b.exe.inputs.back()->splits.back()->axes = {
          static_cast<uint32_t>(dpAxis)};
      b.exe.inputs.back()->splits.push_back(std::make_unique<fb::DimSplitT>());
    }
    return id;
  };
  uint32_t ids = input("input_ids");
  uint32_t labels = input("labels");
  uint32_t step = b.input("step", {}, 0);

  auto k = [&](int64_t stage, Op op, std::vector<uint32_t> operands,
               std::vector<uint32_t> results, std::vector<int64_t> ints = {},
               std::vector<double> floats = {}, uint32_t flags = 0) {
    b.kernel(op, std::move(operands), std::move(results), std::move(ints),
             std::move(floats), flags);
    b.exe.kernels.back()->stage = pp ? static_cast<uint32_t>(stage) : 0;
  };
  // Stage `from`'s x becomes stage `to`'s y: a send and a recv, or a copy.
  auto transfer = [&](int64_t from, uint32_t x, int64_t to, uint32_t y) {
    if (!pp)
      return k(0, Op::Copy, {x}, {y});
    k(from, Op::Send, {x}, {}, {to, ppAxis});
    k(to, Op::Recv, {}, {y}, {from, ppAxis});
  };
  // Stage 0's a0 plus stage 1's a1, into `sum` on both: an all_reduce over
  // "pp" on each stage, or an add.
  auto sumStages = [&](uint32_t a0, uint32_t a1, uint32_t sum) {
    if (!pp)
      return k(0, Op::Add, {a0, a1}, {sum});
    k(0, Op::AllReduce, {a0}, {sum}, {ppAxis});
    k(1, Op::AllReduce, {a1}, {sum}, {ppAxis});
  };
  auto dpSum = [&](int64_t stage, uint32_t x) {
    if (dp)
      k(stage, Op::AllReduce, {x}, {x}, {dpAxis});
  };
  auto act = [&](int64_t last) { return b.buffer(F32, {B, S, last}); };

  // Forward.
  uint32_t x = act(H), h = act(H), hr = act(H);
  k(0, Op::Embedding, {e.buffer, ids}, {x});
  k(0, Op::Linear, {x, w0.buffer}, {h});
  transfer(0, h, 1, hr);
  uint32_t a = act(H), z = act(H), logits = act(V);
  k(1, Op::Gelu, {hr}, {a}, {}, {}, 1);
  k(1, Op::Linear, {a, w1.buffer}, {z});
  k(1, Op::Linear, {z, e.buffer}, {logits}, {}, {}, 1);
  uint32_t sum = b.buffer(F32, {}), count = b.buffer(I64, {});
  k(1, Op::CrossEntropy, {logits, labels}, {sum, count}, {-100});
  dpSum(1, sum);
  dpSum(1, count);
  uint32_t loss = b.buffer(F32, {}), dsum = b.buffer(F32, {});
  k(1, Op::LossMean, {sum, count}, {loss});
  k(1, Op::InverseCount, {count}, {dsum});

  // Backward: stage 1, then stage 0.
  uint32_t dlogits = act(V), dz = act(H), da = act(H), dh = act(H);
  uint32_t gE1 = b.buffer(F32, {V, H}), gW1 = b.buffer(F32, {H, H});
  k(1, Op::CrossEntropyGrad, {logits, labels, dsum}, {dlogits}, {-100});
  k(1, Op::LinearInputGrad, {dlogits, e.buffer}, {dz}, {}, {}, 1);
  k(1, Op::LinearWeightGrad, {z, dlogits}, {gE1}, {}, {}, 1);
  k(1, Op::LinearInputGrad, {dz, w1.buffer}, {da});
  k(1, Op::LinearWeightGrad, {a, dz}, {gW1});
  k(1, Op::GeluGrad, {da, hr}, {dh}, {}, {}, 1);
  uint32_t dhr = act(H);
  transfer(1, dh, 0, dhr);
  dpSum(1, gW1);
  dpSum(1, gE1);
  uint32_t dx = act(H);
  uint32_t gW0 = b.buffer(F32, {H, H}), gE0 = b.buffer(F32, {V, H});
  k(0, Op::LinearWeightGrad, {x, dhr}, {gW0});
  k(0, Op::LinearInputGrad, {dhr, w0.buffer}, {dx});
  k(0, Op::EmbeddingGrad, {dx, ids}, {gE0});
  dpSum(0, gW0);
  dpSum(0, gE0);
  uint32_t gE = b.buffer(F32, {V, H});
  sumStages(gE0, gE1, gE);

  // The norm counts the tied gradient once (on stage 1), then each stage
  // updates what it holds.
  uint32_t ss0 = b.buffer(F32, {}), ss1 = b.buffer(F32, {});
  uint32_t squares = b.buffer(F32, {});
  k(0, Op::SumSquares, {gW0}, {ss0});
  k(1, Op::SumSquares, {gW1, gE}, {ss1});
  sumStages(ss0, ss1, squares);
  uint32_t norm = b.buffer(F32, {}), coefficient = b.buffer(F32, {});
  uint32_t lr = b.buffer(F32, {});
  uint32_t mE = b.state("momentum", e.index);
  uint32_t mW0 = b.state("momentum", w0.index);
  uint32_t mW1 = b.state("momentum", w1.index);
  for (int64_t stage = 0; stage < (pp ? 2 : 1); ++stage) {
    k(stage, Op::ClipCoefficient, {squares}, {norm, coefficient}, {}, {1.0});
    k(stage, Op::LrSchedule, {step}, {lr}, {0, 0}, {0.25, 0.0});
    k(stage, Op::SgdUpdate, {e.buffer, gE, mE, lr, coefficient}, {e.buffer, mE},
      {}, {0.9, 0.01});
    if (!pp || stage == 0)
      k(stage, Op::SgdUpdate, {w0.buffer, gW0, mW0, lr, coefficient},
        {w0.buffer, mW0}, {}, {0.9, 0.01});
    if (!pp || stage == 1)
      k(stage, Op::SgdUpdate, {w1.buffer, gW1, mW1, lr, coefficient},
        {w1.buffer, mW1}, {}, {0.9, 0.01});
  }
  b.output("loss", loss);
  b.output("grad_norm", norm);
  b.output("lr", lr);
  b.grad("e.weight", gE);
  b.grad("w0.weight", gW0);
  b.grad("w1.weight", gW1);
  fb::ExecutableT exe = b.finish();
  exe.seed = 11;
  layOutStages(exe, pp ? o.stages : 1, o.shareArena);
  return exe;
}

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_PIPELINEEXECUTABLES_H
