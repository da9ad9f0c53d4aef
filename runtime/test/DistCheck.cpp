//===- DistCheck.cpp - tpcrt-dist-check: distributed executables on MPI ---===//
//
// `mpiexec -n 2|4 tpcrt-dist-check` runs small distributed executables, one
// Interpreter per rank, and checks on every rank:
//   - each collective opcode (shard_slice and shard_pad too) over every
//     group of the mesh ([tp=2] on 2 ranks;
//     [dp=2, tp=2] and [tp=2] on each half of the world on 4 ranks) against
//     values the test computes from the rank-indexed inputs alone;
//   - a column-parallel linear, gelu and a row-parallel linear with its
//     all-reduce (weights split per rank by the test) against the one-rank
//     executable;
//   - dropout, dropout_mask, attention and attention_grad with dropout, their
//     results split on various dimensions and gathered, bit for bit against
//     the unsplit one-rank kernels;
//   - embedding, embedding_grad, cross_entropy and cross_entropy_grad on a
//     vocabulary split over tp (and dp x tp), padded or not, against the
//     one-rank kernels on the whole table and the real classes alone;
//   - that a step allocates nothing, and that a world of the wrong size is
//     refused with a message naming both numbers.
// Exit 0 when every rank passed, 1 otherwise, 77 (skipped) without MPI.
//
//===----------------------------------------------------------------------===//

#include "DistExecutables.h"
#include "RankChecker.h"
#include "tpcrt/Comm.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Safetensors.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

using namespace tpcrt;
using namespace tpcrt::test;

/// Allocations through operator new so far (AllocationCounter.cpp).
long allocationCount();

namespace {

using Op = fb::OpCode;
constexpr fb::DType F32 = fb::DType::F32;
constexpr fb::DType BF16 = fb::DType::BF16;
constexpr fb::DType I64 = fb::DType::I64;

using Checker = RankChecker;

/// An executable and its interpreter on this rank.
struct Run {
  std::vector<uint8_t> payload;
  Interpreter interpreter;

  Status create(const fb::ExecutableT &exe, Communicator *world) {
    payload = pack(exe);
    const fb::Executable *root = fb::GetExecutable(payload.data());
    if (Status s = checkExecutable(*root); !s)
      return s;
    return Interpreter::create(*root, createCpuDevice(), interpreter, world);
  }
  uint32_t output(const std::string &name) const {
    return interpreter.program().findOutput(name)->buffer;
  }
  template <typename T> Status write(uint32_t buffer, const std::vector<T> &v) {
    return interpreter.writeBuffer(buffer, v.data(), v.size() * sizeof(T));
  }
  template <typename T> std::vector<T> read(uint32_t buffer) {
    const TensorRef &t = interpreter.program().buffers[buffer];
    std::vector<T> v(t.bytes / sizeof(T));
    if (!interpreter.readBuffer(buffer, v.data(), t.bytes))
      v.clear();
    return v;
  }
  /// A float buffer of any float dtype, as floats.
  std::vector<float> readFloats(uint32_t buffer) {
    if (interpreter.program().buffers[buffer].dtype != BF16)
      return read<float>(buffer);
    std::vector<float> v;
    for (uint16_t h : read<uint16_t>(buffer))
      v.push_back(bfloat16ToFloat(h));
    return v;
  }
};

std::vector<uint16_t> toBf16(const std::vector<float> &v) {
  std::vector<uint16_t> out;
  for (float x : v)
    out.push_back(floatToBFloat16(x));
  return out;
}

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

std::string axesText(const TestMesh &mesh, const std::vector<uint32_t> &axes) {
  std::string text;
  for (uint32_t a : axes)
    text += (text.empty() ? "" : ",") + mesh[a].first;
  return "[" + text + "]";
}

//===----------------------------------------------------------------------===//
// Each collective against the test's own account of the group
//===----------------------------------------------------------------------===//

const std::vector<int64_t> kShape = {4, 8, 4};

/// Rank r's input element i: exact in f32 and summed exactly; every third
/// element negative, so that the max comes from the lowest rank there.
float f32Value(int64_t r, int64_t i) {
  return float((i % 3 == 0 ? -1 : 1) * (1000 * r + i));
}
int64_t i64Value(int64_t r, int64_t i) { return (int64_t(1) << 40) * r + i; }
/// Small integers: exact in bf16, and so are their sums over 4 ranks.
float bf16Value(int64_t r, int64_t i) { return float((5 * r + i) % 16 - 8); }

/// One kernel of the collectives executable and what it must return.
struct CollectiveCase {
  std::string name;
  Op op;
  std::vector<int64_t> dims; ///< int_attrs before the axes
  fb::DType dtype = F32;
  uint32_t flags = 0;
};

std::vector<CollectiveCase> collectiveCases() {
  std::vector<CollectiveCase> cases = {
      {"all_reduce sum", Op::AllReduce, {}},
      {"all_reduce max", Op::AllReduce, {}, F32, 1},
      {"all_reduce i64", Op::AllReduce, {}, I64},
      {"all_reduce bf16", Op::AllReduce, {}, BF16},
      {"all_reduce bf16 max", Op::AllReduce, {}, BF16, 1},
      {"all_gather bf16 dim 1", Op::AllGather, {1}, BF16},
      {"reduce_scatter bf16 dim 2", Op::ReduceScatter, {2}, BF16},
      {"all_to_all 1 1", Op::AllToAll, {1, 1}},
      {"all_to_all 0 1", Op::AllToAll, {0, 1}},
      {"all_to_all 2 0", Op::AllToAll, {2, 0}},
      {"all_to_all bf16 1 2", Op::AllToAll, {1, 2}, BF16},
      // Data movement of token ids and labels.
      {"all_gather i64 dim 2", Op::AllGather, {2}, I64},
      {"shard_slice i64 dim 1", Op::ShardSlice, {1}, I64},
      {"all_to_all i64 0 2", Op::AllToAll, {0, 2}, I64},
      {"shard_pad bf16 dim 1", Op::ShardPad, {1}, BF16},
  };
  for (int64_t d = 0; d < 3; ++d) {
    std::string dim = " dim " + std::to_string(d);
    cases.push_back({"all_gather" + dim, Op::AllGather, {d}});
    cases.push_back({"reduce_scatter" + dim, Op::ReduceScatter, {d}});
    cases.push_back({"shard_slice" + dim, Op::ShardSlice, {d}});
    cases.push_back({"shard_pad" + dim, Op::ShardPad, {d}});
  }
  return cases;
}

/// The result shape of a case over a group of g ranks.
std::vector<int64_t> resultShape(const CollectiveCase &c, int64_t g) {
  std::vector<int64_t> shape = kShape;
  switch (c.op) {
  case Op::AllGather:
  case Op::ShardPad:
    shape[c.dims[0]] *= g;
    break;
  case Op::ReduceScatter:
  case Op::ShardSlice:
    shape[c.dims[0]] /= g;
    break;
  case Op::AllToAll:
    shape[c.dims[0]] /= g;
    shape[c.dims[1]] *= g;
    break;
  default:
    break;
  }
  return shape;
}

/// What a case returns on this rank, from the members' inputs.
std::vector<double> expectedCollective(const CollectiveCase &c,
                                       const Place &place,
                                       const std::vector<uint32_t> &axes,
                                       int64_t me) {
  std::vector<int64_t> members = place.members(axes);
  auto g = static_cast<int64_t>(members.size());
  int64_t position = place.position(axes);
  auto value = [&](int64_t r, int64_t i) {
    return c.dtype == I64    ? double(i64Value(r, i))
           : c.dtype == BF16 ? double(bf16Value(r, i))
                             : double(f32Value(r, i));
  };
  std::vector<int64_t> out = resultShape(c, g);
  std::vector<double> want(elementsOf(out));
  for (int64_t e = 0; e < static_cast<int64_t>(want.size()); ++e) {
    std::vector<int64_t> idx = unflatten(e, out);
    switch (c.op) {
    case Op::AllReduce: {
      double acc = value(members[0], e);
      for (int64_t m = 1; m < g; ++m)
        acc = c.flags ? std::max(acc, value(members[m], e))
                      : acc + value(members[m], e);
      want[e] = acc;
      break;
    }
    case Op::AllGather: {
      int64_t d = c.dims[0], p = idx[d] / kShape[d];
      idx[d] %= kShape[d];
      want[e] = value(members[p], flatten(idx, kShape));
      break;
    }
    case Op::ReduceScatter: {
      idx[c.dims[0]] += position * out[c.dims[0]];
      for (int64_t m = 0; m < g; ++m)
        want[e] += value(members[m], flatten(idx, kShape));
      break;
    }
    case Op::ShardSlice:
      idx[c.dims[0]] += position * out[c.dims[0]];
      want[e] = value(me, flatten(idx, kShape));
      break;
    case Op::ShardPad: {
      // Zeros but for this rank's block.
      int64_t d = c.dims[0];
      if (idx[d] / kShape[d] == position) {
        idx[d] %= kShape[d];
        want[e] = value(me, flatten(idx, kShape));
      }
      break;
    }
    case Op::AllToAll: {
      // Piece p came from member p: its piece number `position`.
      int64_t s = c.dims[0], cd = c.dims[1];
      int64_t pieceConcat = out[cd] / g, pieceSplit = kShape[s] / g;
      int64_t p = idx[cd] / pieceConcat;
      idx[cd] %= pieceConcat;
      idx[s] += position * pieceSplit;
      want[e] = value(members[p], flatten(idx, kShape));
      break;
    }
    default:
      break;
    }
  }
  return want;
}

/// Every case over `axes` in one executable; two steps, allocating nothing.
void checkCollectives(Communicator &world, const TestMesh &mesh,
                      const std::vector<uint32_t> &axes, Checker &check) {
  std::vector<CollectiveCase> cases = collectiveCases();
  Place place(mesh, world.rank());
  int64_t g = place.groupSize(axes);
  ExecutableBuilder b;
  setMesh(b.exe, mesh);
  uint32_t x = b.buffer(F32, kShape), x64 = b.buffer(I64, kShape),
           xh = b.buffer(BF16, kShape);
  b.exe.inputs.push_back(makeBinding("x", x));
  b.exe.inputs.push_back(makeBinding("x64", x64));
  b.exe.inputs.push_back(makeBinding("xh", xh));
  for (const CollectiveCase &c : cases) {
    uint32_t from = c.dtype == I64 ? x64 : c.dtype == BF16 ? xh : x;
    uint32_t y = b.buffer(c.dtype, resultShape(c, g));
    std::vector<int64_t> ints = c.dims;
    ints.insert(ints.end(), axes.begin(), axes.end());
    b.kernel(c.op, {from}, {y}, ints, {}, c.flags);
    b.output(c.name, y);
  }
  std::string where = axesText(mesh, axes) + " on mesh of " +
                      std::to_string(mesh.size()) + " axes: ";
  Run run;
  if (!check.ok(where + "create", run.create(b.finish(), &world)))
    return;
  int64_t n = elementsOf(kShape);
  std::vector<float> xs(n), xhs(n);
  std::vector<int64_t> x64s(n);
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = f32Value(world.rank(), i);
    x64s[i] = i64Value(world.rank(), i);
    xhs[i] = bf16Value(world.rank(), i);
  }
  if (!check.ok(where + "inputs", run.write(x, xs)) ||
      !check.ok(where + "inputs", run.write(x64, x64s)) ||
      !check.ok(where + "inputs", run.write(xh, toBf16(xhs))))
    return;
  for (int step = 0; step < 2; ++step) {
    long before = allocationCount();
    Status s = run.interpreter.runStep();
    long allocations = allocationCount() - before;
    if (!check.ok(where + "step", s))
      return;
    check.equal(where + "allocations in step " + std::to_string(step),
                std::vector<long>{allocations}, std::vector<long>{0});
  }
  for (const CollectiveCase &c : cases) {
    std::vector<double> want = expectedCollective(c, place, axes, world.rank());
    std::vector<double> got;
    uint32_t y = run.output(c.name);
    if (c.dtype == I64)
      for (int64_t v : run.read<int64_t>(y))
        got.push_back(double(v));
    else
      for (float v : run.readFloats(y))
        got.push_back(v);
    check.equal(where + c.name, got, want);
  }
}

//===----------------------------------------------------------------------===//
// Tensor-parallel linear pair
//===----------------------------------------------------------------------===//

/// x [4, 3, 8] -> linear(w1 [8, 16], b1) -> gelu -> linear(w2 [16, 8]) +
/// b2. On a mesh: w1, b1 column-parallel and w2 row-parallel over `tp`, its
/// partial result all-reduced over tp before b2; with `dp`, x split on the
/// batch and the result gathered over dp.
struct Mlp {
  int64_t tp = -1, dp = -1; ///< mesh axis indices (-1: none)
  std::vector<int64_t> sizes;

  fb::ExecutableT build(const TestMesh &mesh) const {
    int64_t t = tp >= 0 ? mesh[tp].second : 1;
    int64_t d = dp >= 0 ? mesh[dp].second : 1;
    ExecutableBuilder b;
    setMesh(b.exe, mesh);
    auto split = [&](int64_t axis) {
      return axis >= 0 ? std::vector<uint32_t>{uint32_t(axis)}
                       : std::vector<uint32_t>{};
    };
    auto param = [&](const std::string &name, std::vector<int64_t> global,
                     TestSplits splits) {
      std::vector<int64_t> local = global;
      for (size_t i = 0; i < splits.size(); ++i)
        for (uint32_t a : splits[i])
          local[i] /= mesh[a].second;
      uint32_t id = b.param(name, F32, local);
      b.exe.params.back()->view_shape = b.exe.params.back()->hf_shape = global;
      if (!mesh.empty())
        b.exe.params.back()->splits = makeSplits(splits);
      return id;
    };
    param("w1", {8, 16}, {{}, split(tp)});
    param("b1", {16}, {split(tp)});
    param("w2", {16, 8}, {split(tp), {}});
    param("b2", {8}, {{}});
    uint32_t x = b.buffer(F32, {4 / d, 3, 8});
    b.exe.inputs.push_back(makeBinding("x", x));
    if (!mesh.empty())
      b.exe.inputs.back()->splits = makeSplits({split(dp), {}, {}});
    uint32_t h = b.buffer(F32, {4 / d, 3, 16 / t});
    b.kernel(Op::Linear, {x, 0, 1}, {h});
    uint32_t a = b.buffer(F32, {4 / d, 3, 16 / t});
    b.kernel(Op::Gelu, {h}, {a}, {}, {}, 1);
    uint32_t y = b.buffer(F32, {4 / d, 3, 8});
    b.kernel(Op::Linear, {a, 2}, {y});
    if (tp >= 0)
      b.kernel(Op::AllReduce, {y}, {y}, {tp});
    uint32_t z = b.buffer(F32, {4 / d, 3, 8});
    b.kernel(Op::Add, {y, 3}, {z});
    if (dp >= 0) {
      uint32_t whole = b.buffer(F32, {4, 3, 8});
      b.kernel(Op::AllGather, {z}, {whole}, {0, dp});
      z = whole;
    }
    b.output("z", z);
    return b.finish();
  }
};

/// Writes the params (each rank's block of the same random tensors) and x.
Status loadMlp(Run &run, const TestMesh &mesh, int64_t rank) {
  const Program &program = run.interpreter.program();
  Place place(mesh, rank);
  unsigned seed = 10;
  for (const ParamRef &param : program.params) {
    std::vector<float> whole =
        randomFloats(elementsOf(param.viewShape), seed++);
    TestSplits splits(param.splits.begin(), param.splits.end());
    if (Status s = run.write(
            param.buffer, blockOfWhole(whole, param.viewShape, splits, place));
        !s)
      return s;
  }
  const BindingRef &x = program.inputs[0];
  std::vector<int64_t> global = {4, 3, 8};
  std::vector<float> whole = randomFloats(elementsOf(global), 99);
  TestSplits splits(x.splits.begin(), x.splits.end());
  return run.write(x.buffer, blockOfWhole(whole, global, splits, place));
}

void checkMlp(Communicator &world, const TestMesh &mesh, Mlp mlp,
              Checker &check) {
  std::string where = "mlp on " + std::to_string(mesh.size()) + "-axis mesh";
  if (mlp.dp >= 0)
    where += " with dp";
  Run single, dist;
  Mlp one;
  if (!check.ok(where + ": one rank", single.create(one.build({}), nullptr)) ||
      !check.ok(where + ": one rank", loadMlp(single, {}, 0)) ||
      !check.ok(where + ": one rank", single.interpreter.runStep()))
    return;
  if (!check.ok(where + ": create", dist.create(mlp.build(mesh), &world)) ||
      !check.ok(where + ": load", loadMlp(dist, mesh, world.rank())) ||
      !check.ok(where + ": step", dist.interpreter.runStep()))
    return;
  // The row-parallel sum adds in another order: equal to rounding (a sum of
  // k <= 16 terms regrouped in t parts: at worst gamma_16 = 9.5e-7 apart per
  // element; docs/testing/tolerances.md).
  check.equal(where, dist.read<float>(dist.output("z")),
              single.read<float>(single.output("z")), 1e-5);
}

//===----------------------------------------------------------------------===//
// Dropout at global indices
//===----------------------------------------------------------------------===//

/// Appends all_gathers that make `local` (split by `splits`) whole: one per
/// split dimension, over its axes. Returns the whole buffer.
uint32_t gatherWhole(ExecutableBuilder &b, uint32_t local,
                     std::vector<int64_t> shape, const TestSplits &splits,
                     const TestMesh &mesh) {
  for (size_t d = 0; d < splits.size(); ++d) {
    if (splits[d].empty())
      continue;
    for (uint32_t a : splits[d])
      shape[d] *= mesh[a].second;
    uint32_t whole = b.buffer(F32, shape);
    std::vector<int64_t> ints = {int64_t(d)};
    ints.insert(ints.end(), splits[d].begin(), splits[d].end());
    b.kernel(Op::AllGather, {local}, {whole}, ints);
    local = whole;
  }
  return local;
}

std::vector<int64_t> localShape(std::vector<int64_t> shape,
                                const TestSplits &splits,
                                const TestMesh &mesh) {
  for (size_t d = 0; d < splits.size(); ++d)
    for (uint32_t a : splits[d])
      shape[d] /= mesh[a].second;
  return shape;
}

/// x [4, 6, 8] -> dropout, and a dropout_mask of the same shape; with
/// splits, x arrives split, the dropout result is gathered, the mask stays
/// local.
fb::ExecutableT dropoutExecutable(const TestMesh &mesh,
                                  const TestSplits &splits) {
  const std::vector<int64_t> shape = {4, 6, 8};
  std::vector<int64_t> local = localShape(shape, splits, mesh);
  ExecutableBuilder b;
  setMesh(b.exe, mesh);
  b.exe.seed = 77;
  uint32_t x = b.buffer(F32, local);
  b.exe.inputs.push_back(makeBinding("x", x));
  b.exe.inputs.back()->splits = makeSplits(splits);
  uint32_t y = b.buffer(F32, local);
  b.kernel(Op::Dropout, {x}, {y}, {5, 100}, {0.3});
  b.exe.kernels.back()->splits = makeSplits(splits);
  b.output("y", gatherWhole(b, y, local, splits, mesh));
  uint32_t mask = b.buffer(fb::DType::U8, local);
  b.kernel(Op::DropoutMask, {}, {mask}, {6}, {0.5});
  b.exe.kernels.back()->splits = makeSplits(splits);
  b.output("mask", mask);
  return b.finish();
}

void checkDropout(Communicator &world, const TestMesh &mesh,
                  const TestSplits &splits, Checker &check) {
  std::string where = "dropout split";
  for (const auto &axes : splits)
    where += " " + axesText(mesh, axes);
  const std::vector<int64_t> shape = {4, 6, 8};
  std::vector<float> x = randomFloats(elementsOf(shape), 5);
  Place place(mesh, world.rank());
  Run single, dist;
  if (!check.ok(where + ": one rank",
                single.create(dropoutExecutable({}, {}), nullptr)) ||
      !check.ok(where + ": one rank", single.write(0, x)) ||
      !check.ok(where + ": create",
                dist.create(dropoutExecutable(mesh, splits), &world)) ||
      !check.ok(where + ": input",
                dist.write(0, blockOfWhole(x, shape, splits, place))))
    return;
  // Two steps: the second draws another mask, alike on both.
  for (int step = 0; step < 2; ++step) {
    std::string at = where + " step " + std::to_string(step);
    if (!check.ok(at, single.interpreter.runStep()) ||
        !check.ok(at, dist.interpreter.runStep()))
      return;
    check.equal(at + ": gathered result", dist.read<float>(dist.output("y")),
                single.read<float>(single.output("y")));
    check.equal(at + ": local mask", dist.read<uint8_t>(dist.output("mask")),
                blockOfWhole(single.read<uint8_t>(single.output("mask")), shape,
                             splits, place));
  }
}

/// Attention with dropout (forward and gradient) on q [2, 4, 8, 4] and
/// k, v [2, 2, 8, 4]; `qSplits` split q, the output, dO and dq, `kvSplits`
/// split k, v, dk and dv; results gathered whole.
fb::ExecutableT attentionExecutable(const TestMesh &mesh,
                                    const TestSplits &qSplits,
                                    const TestSplits &kvSplits, bool causal,
                                    bool grad) {
  const std::vector<int64_t> qShape = {2, 4, 8, 4}, kvShape = {2, 2, 8, 4};
  std::vector<int64_t> ql = localShape(qShape, qSplits, mesh),
                       kvl = localShape(kvShape, kvSplits, mesh);
  ExecutableBuilder b;
  setMesh(b.exe, mesh);
  b.exe.seed = 31;
  auto input = [&](const std::string &name, const std::vector<int64_t> &shape,
                   const TestSplits &splits) {
    uint32_t id = b.buffer(F32, shape);
    b.exe.inputs.push_back(makeBinding(name, id));
    b.exe.inputs.back()->splits = makeSplits(splits);
    return id;
  };
  uint32_t q = input("q", ql, qSplits), k = input("k", kvl, kvSplits),
           v = input("v", kvl, kvSplits);
  uint32_t flags = causal ? 1 : 0;
  if (!grad) {
    uint32_t o = b.buffer(F32, ql);
    b.kernel(Op::Attention, {q, k, v}, {o}, {9, 4096}, {0.5, 0.3}, flags);
    b.exe.kernels.back()->splits = makeSplits(qSplits);
    b.output("o", gatherWhole(b, o, ql, qSplits, mesh));
    return b.finish();
  }
  uint32_t dO = input("dO", ql, qSplits);
  uint32_t dq = b.buffer(F32, ql), dk = b.buffer(F32, kvl),
           dv = b.buffer(F32, kvl);
  b.kernel(Op::AttentionGrad, {dO, q, k, v}, {dq, dk, dv}, {9}, {0.5, 0.3},
           flags);
  b.exe.kernels.back()->splits = makeSplits(qSplits);
  b.output("dq", gatherWhole(b, dq, ql, qSplits, mesh));
  b.output("dk", gatherWhole(b, dk, kvl, kvSplits, mesh));
  b.output("dv", gatherWhole(b, dv, kvl, kvSplits, mesh));
  return b.finish();
}

void checkAttention(Communicator &world, const TestMesh &mesh,
                    const TestSplits &qSplits, const TestSplits &kvSplits,
                    bool causal, bool grad, Checker &check) {
  std::string where = std::string(grad ? "attention_grad" : "attention") +
                      (causal ? " causal" : "") + " split";
  for (const auto &axes : qSplits)
    where += " " + axesText(mesh, axes);
  const std::vector<int64_t> qShape = {2, 4, 8, 4}, kvShape = {2, 2, 8, 4};
  Place place(mesh, world.rank());
  std::vector<std::pair<std::string, std::vector<float>>> inputs = {
      {"q", randomFloats(elementsOf(qShape), 1)},
      {"k", randomFloats(elementsOf(kvShape), 2)},
      {"v", randomFloats(elementsOf(kvShape), 3)},
      {"dO", randomFloats(elementsOf(qShape), 4)}};
  Run single, dist;
  if (!check.ok(where + ": one rank",
                single.create(attentionExecutable({}, {}, {}, causal, grad),
                              nullptr)) ||
      !check.ok(where + ": create",
                dist.create(
                    attentionExecutable(mesh, qSplits, kvSplits, causal, grad),
                    &world)))
    return;
  for (const auto &[name, whole] : inputs) {
    const BindingRef *one = single.interpreter.program().findInput(name);
    const BindingRef *mine = dist.interpreter.program().findInput(name);
    if (!one)
      continue;
    bool isQ = name == "q" || name == "dO";
    const TestSplits &splits = isQ ? qSplits : kvSplits;
    const std::vector<int64_t> &shape = isQ ? qShape : kvShape;
    if (!check.ok(where + ": inputs", single.write(one->buffer, whole)) ||
        !check.ok(where + ": inputs",
                  dist.write(mine->buffer,
                             blockOfWhole(whole, shape, splits, place))))
      return;
  }
  if (!check.ok(where + ": one rank", single.interpreter.runStep()) ||
      !check.ok(where + ": step", dist.interpreter.runStep()))
    return;
  for (const BindingRef &out : single.interpreter.program().outputs)
    check.equal(where + ": " + out.name,
                dist.read<float>(dist.output(out.name)),
                single.read<float>(out.buffer));
}

//===----------------------------------------------------------------------===//
// Vocabulary-parallel embedding and cross-entropy
//===----------------------------------------------------------------------===//

/// The vocabulary kernels with the table's 12 rows and the logits' `columns`
/// split over `axes`, `vocab` of them real classes (VocabCase), against the
/// one-rank executable of plain kernels on the whole table and on the real
/// columns alone: the embedding (each rank's block, all-reduced) and the
/// gathered table gradient equal the whole table's bit for bit; the loss
/// sum, the count and the gathered logits gradient equal the one-rank
/// cross-entropy (1e-6 relative; 0 in the padding columns), the loss the
/// same on every rank. Two steps, allocating nothing.
void checkVocab(Communicator &world, const TestMesh &mesh,
                const std::vector<uint32_t> &axes, int64_t vocab,
                int64_t columns, Checker &check) {
  std::string where = "vocabulary " + std::to_string(vocab) + " of " +
                      std::to_string(columns) + " split " +
                      axesText(mesh, axes) + ": ";
  VocabCase dist;
  dist.axes = axes;
  dist.vocab = vocab;
  dist.columns = columns;
  VocabCase one = dist;
  one.axes.clear();
  one.columns = vocab;
  VocabInputs in(dist, 23);
  VocabInputs oneIn = in;
  oneIn.logits = in.realLogits(columns, vocab);
  Run single, run;
  if (!check.ok(where + "one rank", single.create(one.build({}), nullptr)) ||
      !check.ok(where + "one rank",
                writeVocabInputs(single.interpreter, one, oneIn, {}, 0)) ||
      !check.ok(where + "one rank", single.interpreter.runStep()) ||
      !check.ok(where + "create", run.create(dist.build(mesh), &world)) ||
      !check.ok(where + "inputs", writeVocabInputs(run.interpreter, dist, in,
                                                   mesh, world.rank())))
    return;
  for (int step = 0; step < 2; ++step) {
    long before = allocationCount();
    Status s = run.interpreter.runStep();
    long allocations = allocationCount() - before;
    if (!check.ok(where + "step", s))
      return;
    check.equal(where + "allocations in step " + std::to_string(step),
                std::vector<long>{allocations}, std::vector<long>{0});
  }
  check.equal(where + "embedding", run.read<float>(run.output("embedding")),
              single.read<float>(single.output("embedding")));
  check.equal(where + "table_grad", run.read<float>(run.output("table_grad")),
              single.read<float>(single.output("table_grad")));
  check.equal(where + "count", run.read<int64_t>(run.output("count")),
              single.read<int64_t>(single.output("count")));
  std::vector<float> loss = run.read<float>(run.output("loss_sum"));
  check.equal(where + "loss_sum", loss,
              single.read<float>(single.output("loss_sum")), 1e-6);
  std::vector<float> oneGrad = single.read<float>(single.output("logits_grad"));
  std::vector<float> want;
  for (size_t p = 0; p < oneGrad.size() / vocab; ++p) {
    want.insert(want.end(), oneGrad.begin() + p * vocab,
                oneGrad.begin() + (p + 1) * vocab);
    want.insert(want.end(), columns - vocab, 0.0f);
  }
  check.equal(where + "logits_grad", run.read<float>(run.output("logits_grad")),
              want, 1e-6);
  // Not a partial sum: every rank holds the same loss.
  std::vector<float> losses(world.size());
  if (loss.size() == 1 &&
      check.ok(where + "gathering the losses",
               world.allGather(loss.data(), losses.data(), sizeof(float))))
    check.equal(where + "loss_sum on every rank", losses,
                std::vector<float>(world.size(), loss[0]));
}

//===----------------------------------------------------------------------===//

/// Everything a mesh of `mesh` on `world` (its exact size) checks. `tp` and
/// `dp` are the axis indices (-1: absent).
void checkMesh(Communicator &world, const TestMesh &mesh, int64_t dp,
               int64_t tp, Checker &check) {
  std::vector<std::vector<uint32_t>> groups;
  for (size_t a = 0; a < mesh.size(); ++a)
    groups.push_back({uint32_t(a)});
  if (mesh.size() == 2) {
    groups.push_back({0, 1});
    groups.push_back({1, 0});
  }
  for (const auto &axes : groups)
    checkCollectives(world, mesh, axes, check);

  Mlp mlp;
  mlp.tp = tp;
  checkMlp(world, mesh, mlp, check);
  if (dp >= 0) {
    mlp.dp = dp;
    checkMlp(world, mesh, mlp, check);
  }

  auto t = std::vector<uint32_t>{uint32_t(tp)};
  std::vector<TestSplits> dropoutSplits = {
      {{}, t, {}}, {{}, {}, t}, {t, {}, {}}};
  if (dp >= 0) {
    auto d = std::vector<uint32_t>{uint32_t(dp)};
    std::vector<uint32_t> both = {uint32_t(dp), uint32_t(tp)},
                          reversed = {uint32_t(tp), uint32_t(dp)};
    dropoutSplits = {
        {d, t, {}}, {{}, {}, both}, {t, {}, d}, {reversed, {}, {}}, {d, {}, t}};
  }
  for (const TestSplits &splits : dropoutSplits)
    checkDropout(world, mesh, splits, check);

  // Heads over tp (k and v too), with dp the batch as well; then queries
  // over tp (keys whole; not causal).
  TestSplits heads = {{}, t, {}, {}};
  if (dp >= 0)
    heads[0] = {uint32_t(dp)};
  for (bool causal : {false, true})
    for (bool grad : {false, true})
      checkAttention(world, mesh, heads, heads, causal, grad, check);
  checkAttention(world, mesh, {{}, {}, t, {}}, {}, false, false, check);

  // Vocabulary-parallel kernels over tp (with 5 of 12 classes the second
  // block is all padding) and, with dp, over both axes (10 real classes
  // padded to 12 over 4 ranks; in the order tp, dp too).
  for (int64_t vocab : {12, 10, 5})
    checkVocab(world, mesh, t, vocab, 12, check);
  if (dp >= 0) {
    std::vector<uint32_t> both = {uint32_t(dp), uint32_t(tp)},
                          reversed = {uint32_t(tp), uint32_t(dp)};
    checkVocab(world, mesh, both, 12, 12, check);
    checkVocab(world, mesh, both, 10, 12, check);
    checkVocab(world, mesh, reversed, 7, 12, check);
  }
}

int run(Communicator &world) {
  Checker check;
  check.rank = world.rank();
  int size = world.size();
  if (size != 2 && size != 4) {
    std::fprintf(stderr, "tpcrt-dist-check runs on 2 or 4 ranks, not %d\n",
                 size);
    return 1;
  }
  // A mesh the world does not fit is refused on every rank alike.
  {
    TestMesh wrong =
        size == 2 ? TestMesh{{"dp", 2}, {"tp", 2}} : TestMesh{{"tp", 2}};
    Run run;
    Status s = run.create(dropoutExecutable(wrong, {}), &world);
    std::string expected =
        size == 2 ? "the executable's mesh dp=2,tp=2 needs 4 ranks, the run "
                    "has 2"
                  : "the executable's mesh tp=2 needs 2 ranks, the run has 4";
    ++check.checks;
    if (s.message() != expected) {
      std::fprintf(stderr, "rank %d: wrong world: got '%s', expected '%s'\n",
                   check.rank, s.message().c_str(), expected.c_str());
      ++check.failures;
    }
  }
  if (size == 2) {
    checkMesh(world, {{"tp", 2}}, -1, 0, check);
  } else {
    checkMesh(world, {{"dp", 2}, {"tp", 2}}, 0, 1, check);
    // Each half of the world runs a tp=2 mesh of its own.
    std::unique_ptr<Communicator> half;
    if (check.ok("split into halves",
                 world.split(world.rank() / 2, world.rank(), half)))
      checkMesh(*half, {{"tp", 2}}, -1, 0, check);
  }
  return finishOnEveryRank(world, check);
}

} // namespace

int main(int argc, char **) {
  return mpiCheckMain(argc != 1, "mpiexec -n 2|4 tpcrt-dist-check", run);
}
