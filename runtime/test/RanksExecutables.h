//===- RanksExecutables.h - a small executable on a mesh --------*- C++ -*-===//
//
// The executable of the tpc-run rank tests (RanksTest.cpp, tpc_run_ranks.sh):
// params split, padded and reshaped in the ways the contract allows, inputs
// split over the batch, and a one-rank twin that holds the same tensors
// whole, so that every file a run on N ranks writes can be compared byte for
// byte with the twin's.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_RANKSEXECUTABLES_H
#define TPCRT_TEST_RANKSEXECUTABLES_H

#include "TestExecutables.h"

#include <string>
#include <utility>
#include <vector>

namespace tpcrt {
namespace test {

/// Named mesh axes with sizes; empty: one rank.
using MeshAxes = std::vector<std::pair<std::string, int64_t>>;

/// Sizes of the rank model.
struct RanksSizes {
  int64_t batch = 4, seq = 3, hidden = 2, vocab = 8;
};

/// The rank model on `mesh` (its last axis plays tp, its first the batch
/// axis; empty: the one-rank twin, every tensor whole and padded alike).
/// Params, by Hugging Face name (view -> padded, split):
///   a.weight  f32  [5, 3] -> [6, 3], dim 0 over tp (a padded row)
///   b.weight  f32  [4, 6] viewed [4, 2, 3] -> [4, 2, 4], dim 1 over tp
///   c.bias    f32  [3], replicated, init ones
///   d.weight  bf16 [3, 2] -> [4, 2], dim 0 over every axis
///   e.table   f32  [vocab, hidden], replicated
/// with optimizer state exp_avg for a and b, a grad per param (a copy of the
/// param, f32), inputs input_ids and labels [batch, seq] split on dim 0 over
/// the batch axis, and outputs loss (sum of squares of c.bias), embedded and
/// embedded_labels (e.table rows of the ids and labels, [batch, seq,
/// hidden]) and a_padded (a.weight's padded view, [6, 3]). With
/// `collectives`, the outputs are made whole by AllGather kernels (the twin
/// copies instead); without, the mesh model has only local kernels and the
/// whole-tensor outputs (embedded, embedded_labels, a_padded) are left out.
inline fb::ExecutableT ranksModel(const MeshAxes &mesh, bool collectives = true,
                                  RanksSizes z = {}) {
  using Op = fb::OpCode;
  const fb::DType F32 = fb::DType::F32;
  ExecutableBuilder b;
  for (const auto &[name, size] : mesh) {
    auto axis = std::make_unique<fb::MeshAxisT>();
    axis->name = name;
    axis->size = size;
    b.exe.mesh.push_back(std::move(axis));
  }
  bool onMesh = !mesh.empty();
  uint32_t tp = onMesh ? static_cast<uint32_t>(mesh.size() - 1) : 0;
  std::vector<uint32_t> all, batchAxes;
  for (uint32_t a = 0; a < mesh.size(); ++a)
    all.push_back(a);
  if (onMesh)
    batchAxes = {0};
  auto sizeOf = [&](const std::vector<uint32_t> &axes) {
    int64_t n = 1;
    for (uint32_t a : axes)
      n *= mesh[a].second;
    return n;
  };
  auto splitsOf = [&](std::vector<std::vector<uint32_t>> perDim) {
    std::vector<std::unique_ptr<fb::DimSplitT>> splits;
    if (!onMesh)
      return splits;
    for (std::vector<uint32_t> &axes : perDim) {
      auto split = std::make_unique<fb::DimSplitT>();
      split->axes = std::move(axes);
      splits.push_back(std::move(split));
    }
    return splits;
  };
  struct Param {
    uint32_t index, buffer;
  };
  // view, padded, per-dim axes; the buffer is the block.
  auto param =
      [&](const std::string &name, fb::DType dtype, std::vector<int64_t> hf,
          std::vector<int64_t> view, std::vector<int64_t> padded,
          std::vector<std::vector<uint32_t>> axes, fb::ParamInit init) {
        std::vector<int64_t> local = padded;
        if (onMesh)
          for (size_t d = 0; d < axes.size(); ++d)
            local[d] /= sizeOf(axes[d]);
        uint32_t buffer = b.param(name, dtype, local, init, hf);
        fb::ParamT &p = *b.exe.params.back();
        p.view_shape = std::move(view);
        if (padded != p.view_shape)
          p.padded_shape = std::move(padded);
        p.splits = splitsOf(std::move(axes));
        return Param{static_cast<uint32_t>(b.exe.params.size() - 1), buffer};
      };
  const fb::ParamInit Normal = fb::ParamInit::Normal;
  Param a = param("a.weight", F32, {5, 3}, {5, 3}, {6, 3}, {{tp}, {}}, Normal);
  Param bw = param("b.weight", F32, {4, 6}, {4, 2, 3}, {4, 2, 4},
                   {{}, {tp}, {}}, Normal);
  Param c = param("c.bias", F32, {3}, {3}, {3}, {}, fb::ParamInit::Ones);
  Param d = param("d.weight", fb::DType::BF16, {3, 2}, {3, 2}, {4, 2},
                  {all, {}}, Normal);
  Param e = param("e.table", F32, {z.vocab, z.hidden}, {z.vocab, z.hidden},
                  {z.vocab, z.hidden}, {}, Normal);
  // State is laid out as its param (ExecutableBuilder::state would use the
  // whole view).
  for (Param p : {a, bw}) {
    auto state = std::make_unique<fb::StateT>();
    state->name = "exp_avg";
    state->param = p.index;
    state->buffer = b.buffer(F32, b.exe.buffers[p.buffer]->shape);
    b.exe.state.push_back(std::move(state));
  }

  int64_t localBatch = z.batch / sizeOf(batchAxes);
  auto input = [&](const std::string &name) {
    uint32_t id = b.input(name, {localBatch, z.seq}, z.vocab);
    b.exe.inputs.back()->splits = splitsOf({batchAxes, {}});
    return id;
  };
  uint32_t ids = input("input_ids");
  uint32_t labels = input("labels");

  uint32_t loss = b.buffer(F32, {});
  b.kernel(Op::SumSquares, {c.buffer}, {loss});
  b.output("loss", loss);

  // Whole outputs: gathered on a mesh, copied by the twin.
  auto whole = [&](const std::string &name, uint32_t local,
                   std::vector<int64_t> shape, int64_t dim,
                   const std::vector<uint32_t> &axes) {
    if (onMesh && !collectives)
      return;
    uint32_t out = b.buffer(F32, std::move(shape));
    if (onMesh) {
      std::vector<int64_t> ints = {dim};
      ints.insert(ints.end(), axes.begin(), axes.end());
      b.kernel(Op::AllGather, {local}, {out}, ints);
    } else {
      b.kernel(Op::Copy, {local}, {out});
    }
    b.output(name, out);
  };
  for (auto [name, source] :
       {std::pair<const char *, uint32_t>{"embedded", ids},
        {"embedded_labels", labels}}) {
    uint32_t rows = b.buffer(F32, {localBatch, z.seq, z.hidden});
    b.kernel(Op::Embedding, {e.buffer, source}, {rows});
    whole(name, rows, {z.batch, z.seq, z.hidden}, 0, batchAxes);
  }
  whole("a_padded", a.buffer, {6, 3}, 0, {tp});

  for (Param p : {a, bw, c, d, e}) {
    const fb::ParamT &spec = *b.exe.params[p.index];
    uint32_t grad = b.buffer(F32, b.exe.buffers[p.buffer]->shape);
    b.kernel(spec.hf_name == "d.weight" ? Op::Cast : Op::Copy, {p.buffer},
             {grad});
    b.grad(spec.hf_name, grad);
  }
  fb::ExecutableT exe = b.finish();
  exe.seed = 5;
  return exe;
}

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_RANKSEXECUTABLES_H
