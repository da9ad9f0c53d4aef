//===- DistExecutables.h - distributed executables in tests --*- C++ -*-===//
//
// What the distributed tests add to TestExecutables.h: a mesh, splits on
// params, inputs and kernels, and an independent account of a rank's place
// on the mesh (coordinates, group members, blocks) that the tests compute
// expected values with, written without the runtime's Layout.h.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_DISTEXECUTABLES_H
#define TPCRT_TEST_DISTEXECUTABLES_H

#include "TestExecutables.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Safetensors.h"

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tpcrt {
namespace test {

/// Per dimension, the mesh axes (indices) splitting it.
using TestSplits = std::vector<std::vector<uint32_t>>;

inline std::vector<std::unique_ptr<fb::DimSplitT>>
makeSplits(const TestSplits &splits) {
  std::vector<std::unique_ptr<fb::DimSplitT>> list;
  for (const std::vector<uint32_t> &axes : splits) {
    list.push_back(std::make_unique<fb::DimSplitT>());
    list.back()->axes = axes;
  }
  return list;
}

/// Axes by name and size, e.g. {{"dp", 2}, {"tp", 2}}.
using TestMesh = std::vector<std::pair<std::string, int64_t>>;

inline void setMesh(fb::ExecutableT &exe, const TestMesh &mesh) {
  exe.mesh.clear();
  for (const auto &[name, size] : mesh) {
    exe.mesh.push_back(std::make_unique<fb::MeshAxisT>());
    exe.mesh.back()->name = name;
    exe.mesh.back()->size = size;
  }
}

/// A rank's place on a mesh, computed the way the contract words it: its
/// coordinates are the rank written row-major over the axes.
struct Place {
  std::vector<int64_t> sizes;
  std::vector<int64_t> coords;

  Place(const TestMesh &mesh, int64_t rank) {
    for (const auto &axis : mesh)
      sizes.push_back(axis.second);
    coords.assign(sizes.size(), 0);
    for (size_t i = sizes.size(); i-- > 0; rank /= sizes[i])
      coords[i] = rank % sizes[i];
  }
  int64_t rankOf(const std::vector<int64_t> &c) const {
    int64_t r = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      r = r * sizes[i] + c[i];
    return r;
  }
  int64_t groupSize(const std::vector<uint32_t> &axes) const {
    int64_t g = 1;
    for (uint32_t a : axes)
      g *= sizes[a];
    return g;
  }
  int64_t position(const std::vector<uint32_t> &axes) const {
    int64_t p = 0;
    for (uint32_t a : axes)
      p = p * sizes[a] + coords[a];
    return p;
  }
  /// The ranks agreeing with this one off `axes`, by position.
  std::vector<int64_t> members(const std::vector<uint32_t> &axes) const {
    std::vector<int64_t> ranks;
    for (int64_t p = 0, g = groupSize(axes); p < g; ++p) {
      std::vector<int64_t> c = coords;
      int64_t rest = p;
      for (size_t i = axes.size(); i-- > 0; rest /= sizes[axes[i]])
        c[axes[i]] = rest % sizes[axes[i]];
      ranks.push_back(rankOf(c));
    }
    return ranks;
  }
  /// The offset and extent of this rank's block of dimension `global`
  /// split by `axes`.
  std::pair<int64_t, int64_t> block(int64_t global,
                                    const std::vector<uint32_t> &axes) const {
    int64_t extent = global / groupSize(axes);
    return {position(axes) * extent, extent};
  }
};

/// Row-major element count and multi-index helpers.
inline int64_t elementsOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
inline std::vector<int64_t> unflatten(int64_t i,
                                      const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0; i /= shape[d])
    index[d] = i % shape[d];
  return index;
}
inline int64_t flatten(const std::vector<int64_t> &index,
                       const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + index[d];
  return i;
}

/// This rank's block of a whole row-major tensor split by `splits`.
template <typename T>
std::vector<T> blockOfWhole(const std::vector<T> &whole,
                            const std::vector<int64_t> &shape,
                            const TestSplits &splits, const Place &place) {
  std::vector<int64_t> local = shape, offset(shape.size(), 0);
  for (size_t d = 0; d < splits.size(); ++d) {
    auto [o, e] = place.block(shape[d], splits[d]);
    offset[d] = o;
    local[d] = e;
  }
  std::vector<T> out(elementsOf(local));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    std::vector<int64_t> index = unflatten(i, local);
    for (size_t d = 0; d < index.size(); ++d)
      index[d] += offset[d];
    out[i] = whole[flatten(index, shape)];
  }
  return out;
}

/// The vocabulary-parallel kernels in one executable. Inputs: "table"
/// [tableRows, hidden] and "logits" [positions..., columns] (global shapes;
/// rows, columns split over `axes`), "ids" and "labels" [positions...], "dY"
/// [positions..., hidden] and "scale" (f32 []). Kernels and outputs:
///   embedding(table, ids) -> "embedding" (all-reduced over the axes);
///   embedding_grad(dY, ids) -> "table_grad" (gathered whole);
///   cross_entropy(logits, labels) -> "loss_sum", "count";
///   cross_entropy_grad(logits, labels, scale) -> "logits_grad" (gathered).
/// Without axes, embedding(_grad) take no int_attrs and cross-entropy
/// [ignore] when `vocab` is `columns`, else [ignore, vocab]; with axes they
/// take [axes...] and [ignore, vocab, axes...]. The logits and their
/// gradient are stored as `logitsType` (f32 or bf16).
struct VocabCase {
  int64_t tableRows = 12;
  int64_t columns = 12;
  int64_t vocab = 12;
  std::vector<uint32_t> axes;
  std::vector<int64_t> positions = {2, 3};
  int64_t hidden = 4;
  int64_t ignore = -100;
  fb::DType logitsType = fb::DType::F32;

  std::vector<int64_t> with(int64_t last) const {
    std::vector<int64_t> shape = positions;
    shape.push_back(last);
    return shape;
  }
  fb::ExecutableT build(const TestMesh &mesh) const {
    using Op = fb::OpCode;
    int64_t g = 1;
    for (uint32_t a : axes)
      g *= mesh[a].second;
    int64_t rank = static_cast<int64_t>(positions.size());
    ExecutableBuilder b;
    setMesh(b.exe, mesh);
    auto input = [&](const std::string &name, fb::DType dtype,
                     std::vector<int64_t> shape, int64_t splitDim) {
      uint32_t id = b.buffer(dtype, shape);
      b.exe.inputs.push_back(makeBinding(name, id));
      if (splitDim >= 0 && !axes.empty()) {
        TestSplits splits(shape.size());
        splits[splitDim] = axes;
        b.exe.inputs.back()->splits = makeSplits(splits);
      }
      return id;
    };
    uint32_t table = input("table", fb::DType::F32, {tableRows / g, hidden}, 0);
    uint32_t logits = input("logits", logitsType, with(columns / g), rank);
    uint32_t ids = input("ids", fb::DType::I64, positions, -1);
    uint32_t labels = input("labels", fb::DType::I64, positions, -1);
    uint32_t dY = input("dY", fb::DType::F32, with(hidden), -1);
    uint32_t scale = input("scale", fb::DType::F32, {}, -1);
    std::vector<int64_t> groupInts(axes.begin(), axes.end());
    std::vector<int64_t> ceInts = {ignore};
    if (!axes.empty() || vocab != columns)
      ceInts.push_back(vocab);
    ceInts.insert(ceInts.end(), axes.begin(), axes.end());
    // Gathers `local`, split along `dim` over the axes, whole.
    auto gather = [&](uint32_t local, std::vector<int64_t> shape, int64_t dim,
                      fb::DType dtype) {
      if (axes.empty())
        return local;
      shape[dim] *= g;
      uint32_t whole = b.buffer(dtype, shape);
      std::vector<int64_t> ints = {dim};
      ints.insert(ints.end(), axes.begin(), axes.end());
      b.kernel(Op::AllGather, {local}, {whole}, ints);
      return whole;
    };

    uint32_t e = b.buffer(fb::DType::F32, with(hidden));
    b.kernel(Op::Embedding, {table, ids}, {e}, groupInts);
    if (!axes.empty())
      b.kernel(Op::AllReduce, {e}, {e}, groupInts);
    b.output("embedding", e);
    uint32_t dt = b.buffer(fb::DType::F32, {tableRows / g, hidden});
    b.kernel(Op::EmbeddingGrad, {dY, ids}, {dt}, groupInts);
    b.output("table_grad",
             gather(dt, {tableRows / g, hidden}, 0, fb::DType::F32));
    uint32_t loss = b.buffer(fb::DType::F32, {});
    uint32_t count = b.buffer(fb::DType::I64, {});
    b.kernel(Op::CrossEntropy, {logits, labels}, {loss, count}, ceInts);
    b.output("loss_sum", loss);
    b.output("count", count);
    uint32_t dl = b.buffer(logitsType, with(columns / g));
    b.kernel(Op::CrossEntropyGrad, {logits, labels, scale}, {dl}, ceInts);
    b.output("logits_grad", gather(dl, with(columns / g), rank, logitsType));
    return b.finish();
  }
};

/// Whole inputs of a VocabCase: logits N(0, 3^2) in the real columns and
/// 30 in the padding ones (which would dominate any sum they slipped into),
/// labels in [0, vocab) with some ignored and the last class among them,
/// ids over the whole table, scale = 1 / count.
struct VocabInputs {
  std::vector<float> table, logits, dY;
  std::vector<int64_t> ids, labels;
  float scale = 1.0f;

  VocabInputs(const VocabCase &c, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    int64_t n = elementsOf(c.positions);
    for (int64_t i = 0; i < c.tableRows * c.hidden; ++i)
      table.push_back(normal(gen));
    for (int64_t i = 0; i < n * c.hidden; ++i)
      dY.push_back(normal(gen));
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < c.columns; ++j)
        logits.push_back(j < c.vocab ? 3.0f * normal(gen) : 30.0f);
    int64_t count = 0;
    for (int64_t p = 0; p < n; ++p) {
      ids.push_back(static_cast<int64_t>(gen() % c.tableRows));
      int64_t label = static_cast<int64_t>(gen() % c.vocab);
      if (p == 1 || (p > 2 && gen() % 4 == 0))
        label = c.ignore;
      if (p == 0)
        label = c.vocab - 1;
      labels.push_back(label);
      count += label != c.ignore;
    }
    scale = 1.0f / static_cast<float>(count);
  }
  /// The logits' first `vocab` of `columns` columns (the real classes).
  std::vector<float> realLogits(int64_t columns, int64_t vocab) const {
    std::vector<float> real;
    for (size_t p = 0; p < logits.size() / columns; ++p)
      real.insert(real.end(), logits.begin() + p * columns,
                  logits.begin() + p * columns + vocab);
    return real;
  }
};

/// Writes this rank's block of each input (by the input's splits).
inline Status writeVocabInputs(Interpreter &interpreter, const VocabCase &c,
                               const VocabInputs &in, const TestMesh &mesh,
                               int64_t rank) {
  Place place(mesh, rank);
  const Program &program = interpreter.program();
  auto write = [&](const std::string &name, const auto &whole,
                   const std::vector<int64_t> &shape) {
    const BindingRef *input = program.findInput(name);
    if (!input)
      return Status::error("no input " + name);
    TestSplits splits(input->splits.begin(), input->splits.end());
    auto block = blockOfWhole(whole, shape, splits, place);
    return interpreter.writeBuffer(input->buffer, block.data(),
                                   block.size() * sizeof(block[0]));
  };
  Status s = write("table", in.table, {c.tableRows, c.hidden});
  if (s && c.logitsType == fb::DType::BF16) {
    std::vector<uint16_t> half;
    for (float x : in.logits)
      half.push_back(floatToBFloat16(x));
    s = write("logits", half, c.with(c.columns));
  } else if (s) {
    s = write("logits", in.logits, c.with(c.columns));
  }
  if (s)
    s = write("ids", in.ids, c.positions);
  if (s)
    s = write("labels", in.labels, c.positions);
  if (s)
    s = write("dY", in.dY, c.with(c.hidden));
  if (s)
    s = write("scale", std::vector<float>{in.scale}, {});
  return s;
}

} // namespace test
} // namespace tpcrt

#endif // TPCRT_TEST_DISTEXECUTABLES_H
