//===- DeviceCheckCases.h - one-kernel executables per opcode ---*- C++ -*-===//
//
// The cases of tpcrt-device-check (DeviceCheck.cpp): per opcode that runs on
// one rank, small executables of one kernel (or a few independent ones)
// whose operands are inputs, params or state and whose results are outputs,
// built with TestExecutables.h and checked by the loader like any file.
// Sizes are chosen so that no two coincide and rows are no multiple of 32
// (batch 2, heads 6, kv heads 2 or 3, head dim 40, value dim 24, seq_q 37,
// seq_k 45, hidden 96, vocab 203); each heavy opcode has one larger case so
// that tiled paths run. Every case whose operands may be floats exists once
// per float storage (f32, bf16); params and optimizer state stay f32, as
// Kernels.def requires.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_TEST_DEVICECHECKCASES_H
#define TPCRT_TEST_DEVICECHECKCASES_H

#include "TestExecutables.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tpcrt {
namespace devicecheck {

using test::ExecutableBuilder;
using test::makeBinding;
using Op = fb::OpCode;
using DT = fb::DType;
using Shape = std::vector<int64_t>;

/// How an input or param is filled before the run (the same values on
/// every device).
struct Fill {
  enum class Kind {
    /// Normal(0, scale).
    Normal,
    /// Normal(0, 1) times 10^u, u uniform in [-6, 4): f16 subnormals and
    /// large values (casts).
    Wide,
    /// Uniform in [0.5, 1.5) times scale.
    Positive,
    /// i64 uniform in [0, bound).
    Ids,
    /// i64 uniform in [0, bound), a fraction `ignored` of them -100.
    Labels,
    /// u8 0 or 1, 1 with probability 0.9.
    Mask,
    /// i64: every element `value`.
    Int,
    /// float: every element `real`.
    Real,
  };
  Kind kind = Kind::Normal;
  double scale = 1.0;
  int64_t bound = 0;
  double ignored = 0.0;
  int64_t value = 0;
  double real = 0.0;
};

inline Fill normal(double scale = 1.0) {
  Fill f;
  f.scale = scale;
  return f;
}
inline Fill wide() {
  Fill f;
  f.kind = Fill::Kind::Wide;
  return f;
}
inline Fill positive(double scale = 1.0) {
  Fill f;
  f.kind = Fill::Kind::Positive;
  f.scale = scale;
  return f;
}
inline Fill idsBelow(int64_t bound) {
  Fill f;
  f.kind = Fill::Kind::Ids;
  f.bound = bound;
  return f;
}
inline Fill labelsBelow(int64_t bound, double ignored = 0.2) {
  Fill f;
  f.kind = Fill::Kind::Labels;
  f.bound = bound;
  f.ignored = ignored;
  return f;
}
inline Fill maskBits() {
  Fill f;
  f.kind = Fill::Kind::Mask;
  return f;
}
inline Fill intValue(int64_t value) {
  Fill f;
  f.kind = Fill::Kind::Int;
  f.value = value;
  return f;
}
inline Fill realValue(double value) {
  Fill f;
  f.kind = Fill::Kind::Real;
  f.real = value;
  return f;
}

/// A saved forward's log-sum-exps for `keys` keys: about log(keys) + 1
/// (scores of about unit spread), so e^(score - lse) stays near a
/// probability's size.
inline Fill savedLse(int64_t keys) {
  return positive(std::log(static_cast<double>(keys)) + 1.0);
}

/// One executable to run on both devices, and what to compare.
struct Case {
  Op op = Op::Copy;
  /// The float storage it was made for (--dtype selects by it).
  DT storage = DT::F32;
  /// What the line says: "f32", "bf16", "bf16>f32", "i64", "mixed", ...
  std::string dtype;
  std::string sizes;
  fb::ExecutableT exe;
  /// Inputs and params, filled alike on every device.
  std::vector<std::pair<uint32_t, Fill>> sources;
  /// Buffers read back and compared, in order; a result of a kernel is
  /// poisoned first, a param or state updated in place is not.
  std::vector<uint32_t> compared;
  std::vector<bool> poisoned;
  /// Every compared buffer bit for bit (copies, casts, layout changes).
  bool exact = false;
  /// A GEMM-based kernel (--tf32 loosens its f32 tolerance).
  bool gemm = false;
  /// Steps run (optimizers: several, compared after the last).
  int steps = 1;

  std::string opName() const;
  std::string title() const { return opName() + " " + dtype + " " + sizes; }
};

inline std::string Case::opName() const {
  const char *name = opCodeName(op);
  return name ? name : "?";
}

inline const char *dtypeName(DT dt) {
  return dt == DT::F32 ? "f32" : dt == DT::BF16 ? "bf16" : "f16";
}

inline std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

/// ExecutableBuilder with the case's bookkeeping: inputs are filled,
/// results poisoned and compared.
class CaseBuilder {
public:
  CaseBuilder(Op op, DT storage, std::string dtype, std::string sizes) {
    c.op = op;
    c.storage = storage;
    c.dtype = std::move(dtype);
    c.sizes = std::move(sizes);
  }

  /// An input (value_bound = the ids' bound for ids).
  uint32_t in(DT dt, Shape shape, Fill fill = normal()) {
    uint32_t id = b.buffer(dt, std::move(shape));
    int64_t bound = fill.kind == Fill::Kind::Ids ? fill.bound : 0;
    b.exe.inputs.push_back(makeBinding("in" + std::to_string(id), id, bound));
    c.sources.push_back({id, fill});
    return id;
  }
  /// The `step` input, which runStep writes (1-based).
  uint32_t step() { return b.input("step", {}, 0); }
  /// A kernel's result: an output, poisoned, compared.
  uint32_t out(DT dt, Shape shape) {
    uint32_t id = b.buffer(dt, std::move(shape));
    b.output("out" + std::to_string(id), id);
    c.compared.push_back(id);
    c.poisoned.push_back(true);
    return id;
  }
  /// An f32 param updated in place: filled, compared, not poisoned.
  uint32_t param(Shape shape, Fill fill = normal(0.5)) {
    uint32_t id = b.param("p" + std::to_string(b.exe.params.size()), DT::F32,
                          std::move(shape));
    c.sources.push_back({id, fill});
    c.compared.push_back(id);
    c.poisoned.push_back(false);
    return id;
  }
  /// Optimizer state of the last param (zero at create), compared.
  uint32_t state(const std::string &name) {
    uint32_t id = b.state(name, static_cast<uint32_t>(b.exe.params.size() - 1));
    c.compared.push_back(id);
    c.poisoned.push_back(false);
    return id;
  }
  /// A buffer between kernels: neither filled, poisoned nor compared.
  uint32_t temp(DT dt, Shape shape) { return b.buffer(dt, std::move(shape)); }
  /// A buffer over `of`'s bytes, for a kernel to write after `of`'s last
  /// read (as the memory planner reuses dead bytes): neither poisoned nor
  /// compared.
  uint32_t alias(uint32_t of, DT dt, Shape shape) {
    b.exe.buffers.push_back(
        test::makeBuffer(b.exe.buffers[of]->offset, dt, std::move(shape)));
    return static_cast<uint32_t>(b.exe.buffers.size() - 1);
  }
  void kernel(Op op, std::vector<uint32_t> operands,
              std::vector<uint32_t> results, std::vector<int64_t> ints = {},
              std::vector<double> floats = {}, uint32_t flags = 0) {
    b.kernel(op, std::move(operands), std::move(results), std::move(ints),
             std::move(floats), flags);
  }
  CaseBuilder &exact() {
    c.exact = true;
    return *this;
  }
  CaseBuilder &gemm() {
    c.gemm = true;
    return *this;
  }
  CaseBuilder &steps(int n) {
    c.steps = n;
    return *this;
  }
  Case finish() {
    c.exe = b.finish();
    c.exe.seed = 20240611;
    return std::move(c);
  }

private:
  ExecutableBuilder b;
  Case c;
};

// The sizes (no two equal; 74 rows).
constexpr int64_t kBatch = 2, kHeads = 6, kSeqQ = 37, kSeqK = 45;
constexpr int64_t kHeadDim = 40, kValueDim = 24, kHidden = 96, kVocab = 203;
constexpr int64_t kRows = kBatch * kSeqQ;
constexpr int64_t kIgnore = -100;

/// An attention case's sizes and attributes.
struct AttentionSpec {
  int64_t b, h, kv, sq, sk, d, dv;
  bool causal;
  double rate;
  /// -1: int_attrs [stream] alone; else [stream, firstIndex].
  int64_t firstIndex;
  /// Flag bit 1: every tensor [b, s, heads, d].
  bool seqMajor = false;

  std::string text() const {
    std::string t = "b" + std::to_string(b) + " h" + std::to_string(h) + " kv" +
                    std::to_string(kv) + " sq" + std::to_string(sq) + " sk" +
                    std::to_string(sk) + " d" + std::to_string(d) + " dv" +
                    std::to_string(dv) + (causal ? " causal" : " full");
    if (rate > 0) {
      char r[32];
      std::snprintf(r, sizeof(r), " p%g", rate);
      t += r;
    }
    if (firstIndex >= 0)
      t += " first" + std::to_string(firstIndex);
    if (seqMajor)
      t += " seq-major";
    return t;
  }
  uint32_t flags() const { return (causal ? 1u : 0u) | (seqMajor ? 2u : 0u); }
  /// A tensor of `heads` heads, `seq` rows and `dim` columns.
  std::vector<int64_t> shape(int64_t heads, int64_t seq, int64_t dim) const {
    return seqMajor ? std::vector<int64_t>{b, seq, heads, dim}
                    : std::vector<int64_t>{b, heads, seq, dim};
  }
  std::vector<int64_t> ints() const {
    return firstIndex >= 0 ? std::vector<int64_t>{11, firstIndex}
                           : std::vector<int64_t>{11};
  }
  std::vector<double> floats() const {
    return {1.0 / std::sqrt(static_cast<double>(d)), rate};
  }
};

inline std::vector<AttentionSpec> attentionSpecs() {
  return {
      {kBatch, kHeads, 2, kSeqQ, kSeqK, kHeadDim, kValueDim, false, 0.0, -1},
      {kBatch, kHeads, 3, kSeqQ, kSeqK, kHeadDim, kValueDim, true, 0.0, -1},
      {kBatch, kHeads, 2, kSeqQ, kSeqK, kHeadDim, kValueDim, true, 0.1, 777},
      {kBatch, kHeads, kHeads, kSeqQ, kSeqK, kHeadDim, kValueDim, false, 0.1,
       -1},
      {kBatch, kHeads, 2, kSeqQ, kSeqQ, kHeadDim, kValueDim, true, 0.0, 0},
      // Large: the tiled paths at a real head dim.
      {1, 4, 2, 300, 300, 128, 128, true, 0.0, -1},
      // Sequence-major (strided heads): the generic and the tensor-core
      // paths, with dropout and grouped kv heads.
      {kBatch, kHeads, 3, kSeqQ, kSeqK, kHeadDim, kValueDim, true, 0.1, -1,
       true},
      {2, 4, 2, 300, 300, 128, 128, true, 0.1, -1, true},
      {1, 6, 3, 200, 260, 64, 64, false, 0.0, -1, true},
      // What TPCRT_CUDA_ATTENTION=cudnn also runs (bf16, no dropout,
      // d = dv a multiple of 8): causal multi-head sequence-major, and an
      // odd length with grouped heads.
      {2, 4, 4, 256, 256, 64, 64, true, 0.0, -1, true},
      {2, 6, 2, 77, 77, 128, 128, true, 0.0, -1},
  };
}

/// The cases of every single-rank opcode for float storage F (f32 or bf16);
/// cases without float operands (masks, counts, the optimizer) come with F
/// = f32 only.
inline void addCases(DT F, std::vector<Case> &out) {
  const bool f32 = F == DT::F32;
  const std::string dt = dtypeName(F);
  const Shape act = {kBatch, kSeqQ, kHidden};
  const std::string actText = "x" + shapeText(act);
  auto add = [&](CaseBuilder &b) { out.push_back(b.finish()); };

  // embedding: a row copy, bit for bit (a bf16 table into f32 rows too).
  {
    CaseBuilder b(Op::Embedding, F, dt, "table[203,96] ids[2,37]");
    uint32_t table = b.in(F, {kVocab, kHidden});
    uint32_t ids = b.in(DT::I64, {kBatch, kSeqQ}, idsBelow(kVocab));
    b.kernel(Op::Embedding, {table, ids}, {b.out(F, act)});
    add(b.exact());
  }
  if (f32) {
    // Ids in a temporary (as a slice or a received tensor is) whose bytes
    // the next kernel of the step reuses: a device that learns of a bad id
    // only after the step must still name the id it refused (the refusal
    // check), not what the bytes hold by then.
    CaseBuilder b(Op::Embedding, F, dt,
                  "table[203,96] ids[2,37] copied, then their bytes reused");
    uint32_t table = b.in(F, {kVocab, kHidden});
    Shape idsShape = {kBatch, kSeqQ};
    uint32_t ids = b.in(DT::I64, idsShape, idsBelow(kVocab));
    uint32_t copied = b.temp(DT::I64, idsShape);
    b.kernel(Op::Copy, {ids}, {copied});
    b.kernel(Op::Embedding, {table, copied}, {b.out(F, act)});
    uint32_t other = b.in(DT::I64, idsShape, idsBelow(kVocab));
    b.kernel(Op::Copy, {other}, {b.alias(copied, DT::I64, idsShape)});
    add(b.exact());
  }
  if (!f32) {
    CaseBuilder b(Op::Embedding, F, "bf16>f32", "table[203,96] ids[2,37]");
    uint32_t table = b.in(DT::BF16, {kVocab, kHidden});
    uint32_t ids = b.in(DT::I64, {kBatch, kSeqQ}, idsBelow(kVocab));
    b.kernel(Op::Embedding, {table, ids}, {b.out(DT::F32, act)});
    add(b.exact());
  }

  // linear: both layouts, with and without bias; the weight has two out
  // dims (n = 4 x 30); a tied head (out_in [203, 96]); one large case each.
  for (int layout = 0; layout < 2; ++layout)
    for (int bias = 0; bias < 2; ++bias) {
      Shape w = layout ? Shape{4, 30, kHidden} : Shape{kHidden, 4, 30};
      CaseBuilder b(Op::Linear, F, dt,
                    actText + " w" + shapeText(w) +
                        (layout ? " out_in" : " in_out") +
                        (bias ? " bias" : ""));
      std::vector<uint32_t> ops = {b.in(F, act), b.in(F, w, normal(0.1))};
      if (bias)
        ops.push_back(b.in(F, {120}));
      b.kernel(Op::Linear, ops, {b.out(F, {kBatch, kSeqQ, 120})}, {}, {},
               layout);
      add(b.gemm());
    }
  {
    CaseBuilder b(Op::Linear, F, dt, actText + " w[203,96] out_in (head)");
    b.kernel(Op::Linear,
             {b.in(F, act), b.in(F, {kVocab, kHidden}, normal(0.1))},
             {b.out(F, {kBatch, kSeqQ, kVocab})}, {}, {}, 1);
    add(b.gemm());
  }
  {
    CaseBuilder b(Op::Linear, F, dt, "x[300,512] w[700,512] out_in bias");
    b.kernel(Op::Linear,
             {b.in(F, {300, 512}), b.in(F, {700, 512}, normal(0.05)),
              b.in(F, {700})},
             {b.out(F, {300, 700})}, {}, {}, 1);
    add(b.gemm());
  }
  {
    CaseBuilder b(Op::Linear, F, dt, "x[300,512] w[512,700] in_out");
    b.kernel(Op::Linear,
             {b.in(F, {300, 512}), b.in(F, {512, 700}, normal(0.05))},
             {b.out(F, {300, 700})}, {}, {}, 0);
    add(b.gemm());
  }

  // linear + tanh gelu of its result: the CUDA device runs the pair as one
  // matmul with a bias + GeLU epilogue writing both (FusionPlan.h); h and g
  // are both compared.
  for (int bias = 0; bias < 2; ++bias) {
    CaseBuilder b(Op::Linear, F, dt,
                  actText + " w[120,96] out_in" + (bias ? " bias" : "") +
                      ", then gelu tanh (fused)");
    std::vector<uint32_t> ops = {b.in(F, act), b.in(F, {120, kHidden},
                                                    normal(0.1))};
    if (bias)
      ops.push_back(b.in(F, {120}));
    uint32_t h = b.out(F, {kBatch, kSeqQ, 120});
    b.kernel(Op::Linear, ops, {h}, {}, {}, 1);
    b.kernel(Op::Gelu, {h}, {b.out(F, {kBatch, kSeqQ, 120})}, {}, {}, 1);
    add(b.gemm());
  }

  // batch_matmul: all four transposes with a scale; one large case.
  for (uint32_t flags = 0; flags < 4; ++flags) {
    bool tl = flags & 1, tr = flags & 2;
    Shape lhs = tl ? Shape{kBatch, kHeads, kHeadDim, kSeqQ}
                   : Shape{kBatch, kHeads, kSeqQ, kHeadDim};
    Shape rhs = tr ? Shape{kBatch, kHeads, kSeqK, kHeadDim}
                   : Shape{kBatch, kHeads, kHeadDim, kSeqK};
    CaseBuilder b(Op::BatchMatmul, F, dt,
                  "lhs" + shapeText(lhs) + " rhs" + shapeText(rhs) +
                      (tl ? " tl" : "") + (tr ? " tr" : "") + " scale 0.37");
    b.kernel(Op::BatchMatmul, {b.in(F, lhs), b.in(F, rhs)},
             {b.out(F, {kBatch, kHeads, kSeqQ, kSeqK})}, {}, {0.37}, flags);
    add(b.gemm());
  }
  {
    CaseBuilder b(Op::BatchMatmul, F, dt,
                  "lhs[4,300,128] rhs[4,300,128] tr scale 0.088");
    b.kernel(Op::BatchMatmul, {b.in(F, {4, 300, 128}), b.in(F, {4, 300, 128})},
             {b.out(F, {4, 300, 300})}, {}, {0.088}, 2);
    add(b.gemm());
  }

  // Norms, forward and backward; a wide row (1531 columns) too.
  for (Shape x : {act, Shape{kSeqQ, 1531}}) {
    int64_t cols = x.back();
    std::string xt = "x" + shapeText(x);
    {
      CaseBuilder b(Op::LayerNorm, F, dt, xt + " eps 1e-5");
      b.kernel(Op::LayerNorm,
               {b.in(F, x, normal(2.0)), b.in(F, {cols}), b.in(F, {cols})},
               {b.out(F, x)}, {}, {1e-5});
      add(b);
    }
    {
      CaseBuilder b(Op::RmsNorm, F, dt, xt + " eps 1e-6");
      b.kernel(Op::RmsNorm, {b.in(F, x, normal(2.0)), b.in(F, {cols})},
               {b.out(F, x)}, {}, {1e-6});
      add(b);
    }
    {
      CaseBuilder b(Op::LayerNormInputGrad, F, dt, xt + " eps 1e-5");
      b.kernel(Op::LayerNormInputGrad,
               {b.in(F, x), b.in(F, x, normal(2.0)), b.in(F, {cols})},
               {b.out(F, x)}, {}, {1e-5});
      add(b);
    }
    {
      CaseBuilder b(Op::LayerNormParamGrad, F, dt, xt + " eps 1e-5");
      b.kernel(Op::LayerNormParamGrad, {b.in(F, x), b.in(F, x, normal(2.0))},
               {b.out(F, {cols}), b.out(F, {cols})}, {}, {1e-5});
      add(b);
    }
    {
      CaseBuilder b(Op::RmsNormInputGrad, F, dt, xt + " eps 1e-6");
      b.kernel(Op::RmsNormInputGrad,
               {b.in(F, x), b.in(F, x, normal(2.0)), b.in(F, {cols})},
               {b.out(F, x)}, {}, {1e-6});
      add(b);
    }
    {
      CaseBuilder b(Op::RmsNormParamGrad, F, dt, xt + " eps 1e-6");
      b.kernel(Op::RmsNormParamGrad, {b.in(F, x), b.in(F, x, normal(2.0))},
               {b.out(F, {cols})}, {}, {1e-6});
      add(b);
    }
  }

  // Elementwise, forward and backward (an odd element count for tanh).
  {
    CaseBuilder b(Op::Gelu, F, dt, actText + " erf");
    b.kernel(Op::Gelu, {b.in(F, act, normal(2.0))}, {b.out(F, act)}, {}, {}, 0);
    add(b);
  }
  {
    CaseBuilder b(Op::Gelu, F, dt, "x[5,203] tanh");
    b.kernel(Op::Gelu, {b.in(F, {5, kVocab}, normal(2.0))},
             {b.out(F, {5, kVocab})}, {}, {}, 1);
    add(b);
  }
  {
    CaseBuilder b(Op::Silu, F, dt, actText);
    b.kernel(Op::Silu, {b.in(F, act, normal(2.0))}, {b.out(F, act)});
    add(b);
  }
  {
    CaseBuilder b(Op::GeluGrad, F, dt, actText + " erf");
    b.kernel(Op::GeluGrad, {b.in(F, act), b.in(F, act, normal(2.0))},
             {b.out(F, act)}, {}, {}, 0);
    add(b);
  }
  {
    CaseBuilder b(Op::GeluGrad, F, dt, "x[5,203] tanh");
    b.kernel(Op::GeluGrad,
             {b.in(F, {5, kVocab}), b.in(F, {5, kVocab}, normal(2.0))},
             {b.out(F, {5, kVocab})}, {}, {}, 1);
    add(b);
  }
  {
    CaseBuilder b(Op::SiluGrad, F, dt, actText);
    b.kernel(Op::SiluGrad, {b.in(F, act), b.in(F, act, normal(2.0))},
             {b.out(F, act)});
    add(b);
  }

  // add and mul: broadcast over the leading dims; mixed storage; i64 add.
  {
    CaseBuilder b(Op::Add, F, dt, actText + " + [96]");
    b.kernel(Op::Add, {b.in(F, act), b.in(F, {kHidden})}, {b.out(F, act)});
    add(b);
  }
  {
    CaseBuilder b(Op::Mul, F, dt, actText + " * [37,96]");
    b.kernel(Op::Mul, {b.in(F, act), b.in(F, {kSeqQ, kHidden})},
             {b.out(F, act)});
    add(b);
  }
  if (!f32) {
    {
      CaseBuilder b(Op::Add, F, "mixed",
                    "bf16" + actText + " + f32[37,96] -> f16");
      b.kernel(Op::Add, {b.in(DT::BF16, act), b.in(DT::F32, {kSeqQ, kHidden})},
               {b.out(DT::F16, act)});
      add(b);
    }
    {
      CaseBuilder b(Op::Mul, F, "mixed",
                    "f32" + actText + " * bf16[96] -> bf16");
      b.kernel(Op::Mul, {b.in(DT::F32, act), b.in(DT::BF16, {kHidden})},
               {b.out(DT::BF16, act)});
      add(b);
    }
  } else {
    CaseBuilder b(Op::Add, F, "i64", "[2,37] + [37]");
    b.kernel(Op::Add,
             {b.in(DT::I64, {kBatch, kSeqQ}, idsBelow(1000)),
              b.in(DT::I64, {kSeqQ}, idsBelow(1000))},
             {b.out(DT::I64, {kBatch, kSeqQ})});
    add(b);
  }

  // Dropout and its mask, drawn from the stream (with a first index too,
  // even and odd).
  {
    CaseBuilder b(Op::Dropout, F, dt, actText + " p0.1 stream 3");
    b.kernel(Op::Dropout, {b.in(F, act)}, {b.out(F, act)}, {3}, {0.1});
    add(b);
  }
  {
    CaseBuilder b(Op::Dropout, F, dt, actText + " p0.3 stream 5 first1000");
    b.kernel(Op::Dropout, {b.in(F, act)}, {b.out(F, act)}, {5, 1000}, {0.3});
    add(b);
  }
  {
    // An odd first index: no two elements of a vector share a hash.
    CaseBuilder b(Op::Dropout, F, dt, actText + " p0.3 stream 6 first1001");
    b.kernel(Op::Dropout, {b.in(F, act)}, {b.out(F, act)}, {6, 1001}, {0.3});
    add(b);
  }
  if (f32) {
    {
      CaseBuilder b(Op::DropoutMask, F, "u8",
                    "[2,37,96] p0.1 stream 7 first12345");
      b.kernel(Op::DropoutMask, {}, {b.out(DT::U8, act)}, {7, 12345}, {0.1});
      add(b.exact());
    }
    {
      // A first index on a block of 16: a thread's 16 elements, four hashes
      // (DropoutDraw::keptBlock); [5,203] below ends in 7 more.
      CaseBuilder b(Op::DropoutMask, F, "u8",
                    "[2,37,96] p0.1 stream 9 first4096");
      b.kernel(Op::DropoutMask, {}, {b.out(DT::U8, act)}, {9, 4096}, {0.1});
      add(b.exact());
    }
    {
      CaseBuilder b(Op::DropoutMask, F, "u8", "[5,203] p0.3 stream 8");
      b.kernel(Op::DropoutMask, {}, {b.out(DT::U8, {5, kVocab})}, {8}, {0.3});
      add(b.exact());
    }
  }
  {
    CaseBuilder b(Op::ApplyMask, F, dt, actText + " p0.1");
    b.kernel(Op::ApplyMask, {b.in(F, act), b.in(DT::U8, act, maskBits())},
             {b.out(F, act)}, {}, {0.1});
    add(b);
  }

  // A row-parallel bias, the branch's dropout and the residual add (GPT-2
  // with tp > 1): the CUDA device runs the three as one kernel, or without
  // dropout the two adds (FusionPlan.h); only z is compared. At the hidden
  // size (the bias a multiple of 8: the vectorized path) and at [5, 203]
  // (the scalar path), the residual on either side.
  for (int dropout = 0; dropout < 2; ++dropout)
    for (int wide = 0; wide < 2; ++wide) {
      Shape shape = wide ? Shape{5, kVocab} : act;
      int64_t width = shape.back();
      CaseBuilder b(Op::Add, F, dt,
                    "x" + shapeText(shape) + " + [" + std::to_string(width) +
                        "]" + (dropout ? ", then apply_mask p0.1" : "") +
                        ", then + r (fused)");
      uint32_t x = b.in(F, shape), bias = b.in(F, {width});
      uint32_t m = dropout ? b.in(DT::U8, shape, maskBits()) : 0;
      uint32_t r = b.in(F, shape), y = b.temp(F, shape);
      b.kernel(Op::Add, {x, bias}, {y});
      if (dropout) {
        uint32_t d = b.temp(F, shape);
        b.kernel(Op::ApplyMask, {y, m}, {d}, {}, {0.1});
        y = d;
      }
      uint32_t z = b.out(F, shape);
      if (wide)
        b.kernel(Op::Add, {r, y}, {z});
      else
        b.kernel(Op::Add, {y, r}, {z});
      add(b);
    }

  // The residual add and the next norm (FusionPlan.h: the CUDA device runs
  // the group that ends in the add, or the add alone, with the norm of its
  // result as one row kernel): z and the norm's result compared. Each group
  // form once, layer_norm and rms_norm in turn, at the hidden size and at
  // [5, 203].
  for (int form = 0; form < 4; ++form) {
    bool bias = form == 1 || form == 2, dropout = form < 2, rms = form % 2;
    Shape shape = form == 3 ? Shape{5, kVocab} : act;
    int64_t width = shape.back();
    Op norm = rms ? Op::RmsNorm : Op::LayerNorm;
    CaseBuilder b(norm, F, dt,
                  "of x" + shapeText(shape) +
                      (bias ? " + [" + std::to_string(width) + "]" : "") +
                      (dropout ? ", apply_mask p0.1" : "") + ", + r (fused)");
    uint32_t x = b.in(F, shape);
    uint32_t biasIn = bias ? b.in(F, {width}) : 0;
    uint32_t m = dropout ? b.in(DT::U8, shape, maskBits()) : 0;
    uint32_t r = b.in(F, shape);
    uint32_t w = b.in(F, {width}), nb = rms ? 0 : b.in(F, {width});
    if (bias) {
      uint32_t y = b.temp(F, shape);
      b.kernel(Op::Add, {x, biasIn}, {y});
      x = y;
    }
    if (dropout) {
      uint32_t d = b.temp(F, shape);
      b.kernel(Op::ApplyMask, {x, m}, {d}, {}, {0.1});
      x = d;
    }
    uint32_t z = b.out(F, shape);
    b.kernel(Op::Add, {x, r}, {z});
    std::vector<uint32_t> normIn = {z, w};
    if (!rms)
      normIn.push_back(nb);
    b.kernel(norm, normIn, {b.out(F, shape)}, {}, {1e-5});
    add(b);
  }

  // SwiGLU's pairs (FusionPlan.h: the CUDA device runs each as one
  // kernel): up * silu(g), the silu's output compared too (the backward
  // reads it); and the silu's output gradient d * up through silu_grad with
  // the gate, only the gate's gradient compared (the product is never
  // written). At the hidden size and at [5, 203] (the scalar path).
  for (int wide = 0; wide < 2; ++wide) {
    Shape shape = wide ? Shape{5, kVocab} : act;
    {
      CaseBuilder b(Op::Mul, F, dt,
                    "up" + shapeText(shape) + " * silu(g) (fused)");
      uint32_t g = b.in(F, shape), up = b.in(F, shape);
      uint32_t silu = b.out(F, shape);
      b.kernel(Op::Silu, {g}, {silu});
      b.kernel(Op::Mul, {up, silu}, {b.out(F, shape)});
      add(b);
    }
    {
      CaseBuilder b(Op::SiluGrad, F, dt,
                    "of d" + shapeText(shape) + " * up, g (fused)");
      uint32_t d = b.in(F, shape), up = b.in(F, shape), g = b.in(F, shape);
      uint32_t dSilu = b.temp(F, shape);
      b.kernel(Op::Mul, {d, up}, {dSilu});
      b.kernel(Op::SiluGrad, {dSilu, g}, {b.out(F, shape)});
      add(b);
    }
  }

  // softmax and its gradient, causal ([q, k] with k >= q) and not.
  Shape scores = {kBatch, kHeads, kSeqQ, kSeqK};
  for (uint32_t causal = 0; causal < 2; ++causal) {
    std::string text = "x" + shapeText(scores) + (causal ? " causal" : "");
    {
      CaseBuilder b(Op::Softmax, F, dt, text);
      b.kernel(Op::Softmax, {b.in(F, scores, normal(3.0))}, {b.out(F, scores)},
               {}, {}, causal);
      add(b);
    }
    {
      CaseBuilder b(Op::SoftmaxGrad, F, dt, text);
      b.kernel(Op::SoftmaxGrad,
               {b.in(F, scores), b.in(F, scores, positive(1.0 / kSeqK))},
               {b.out(F, scores)}, {}, {}, causal);
      add(b);
    }
  }

  // Attention and its gradient: GQA, causal or not, dropout, d != dv.
  // attention_lse, and the attention_grad given its output and lse, at the
  // specs `withLse` names (the generic and tensor-core paths, dropout,
  // sequence-major).
  const std::vector<AttentionSpec> specs = attentionSpecs();
  const std::set<size_t> withLse = {1, 2, 5, 7, 8};
  for (size_t i = 0; i < specs.size(); ++i) {
    const AttentionSpec &s = specs[i];
    Shape q = s.shape(s.h, s.sq, s.d), k = s.shape(s.kv, s.sk, s.d),
          v = s.shape(s.kv, s.sk, s.dv), o = s.shape(s.h, s.sq, s.dv);
    {
      CaseBuilder b(Op::Attention, F, dt, s.text());
      b.kernel(Op::Attention, {b.in(F, q), b.in(F, k), b.in(F, v)},
               {b.out(F, o)}, s.ints(), s.floats(), s.flags());
      add(b.gemm());
    }
    {
      CaseBuilder b(Op::AttentionGrad, F, dt, s.text());
      b.kernel(Op::AttentionGrad,
               {b.in(F, o), b.in(F, q), b.in(F, k), b.in(F, v)},
               {b.out(F, q), b.out(F, k), b.out(F, v)}, s.ints(), s.floats(),
               s.flags());
      add(b.gemm());
    }
    if (!withLse.count(i))
      continue;
    const Shape rows = {s.b, s.h, s.sq};
    {
      CaseBuilder b(Op::AttentionLse, F, dt, s.text());
      b.kernel(Op::AttentionLse, {b.in(F, q), b.in(F, k), b.in(F, v)},
               {b.out(F, o), b.out(DT::F32, rows)}, s.ints(), s.floats(),
               s.flags());
      add(b.gemm());
    }
    {
      CaseBuilder b(Op::AttentionGrad, F, dt, s.text() + " saved");
      b.kernel(Op::AttentionGrad,
               {b.in(F, o), b.in(F, q), b.in(F, k), b.in(F, v), b.in(F, o),
                b.in(DT::F32, rows, savedLse(s.sk))},
               {b.out(F, q), b.out(F, k), b.out(F, v)}, s.ints(), s.floats(),
               s.flags());
      add(b.gemm());
    }
  }

  // attention_qkv(_grad): q, k, v the parts of one [b, s, 3, heads, d]
  // tensor (the generic path with dropout; the tensor-core path; what cuDNN
  // also runs: bf16, no dropout).
  for (const AttentionSpec &s : std::vector<AttentionSpec>{
           {kBatch, 4, 4, kSeqQ, kSeqQ, kHeadDim, kHeadDim, true, 0.1, 5},
           {2, 4, 4, 300, 300, 128, 128, true, 0.1, -1},
           {2, 4, 4, 256, 256, 64, 64, true, 0.0, -1},
           {1, 6, 6, 77, 77, 128, 128, false, 0.0, -1}}) {
    Shape qkv = {s.b, s.sq, 3, s.h, s.d}, o = {s.b, s.sq, s.h, s.d};
    const std::string text = s.text() + " qkv";
    const uint32_t causal = s.causal ? 1 : 0;
    {
      CaseBuilder b(Op::AttentionQkv, F, dt, text);
      b.kernel(Op::AttentionQkv, {b.in(F, qkv)}, {b.out(F, o)}, s.ints(),
               s.floats(), causal);
      add(b.gemm());
    }
    {
      CaseBuilder b(Op::AttentionQkvGrad, F, dt, text);
      b.kernel(Op::AttentionQkvGrad, {b.in(F, o), b.in(F, qkv)},
               {b.out(F, qkv)}, s.ints(), s.floats(), causal);
      add(b.gemm());
    }
    if (s.h != 4 || s.d == 64)
      continue; // the _lse forms: the generic and the tensor-core path
    const Shape rows = {s.b, s.h, s.sq};
    {
      CaseBuilder b(Op::AttentionQkvLse, F, dt, text);
      b.kernel(Op::AttentionQkvLse, {b.in(F, qkv)},
               {b.out(F, o), b.out(DT::F32, rows)}, s.ints(), s.floats(),
               causal);
      add(b.gemm());
    }
    {
      CaseBuilder b(Op::AttentionQkvGrad, F, dt, text + " saved");
      b.kernel(Op::AttentionQkvGrad,
               {b.in(F, o), b.in(F, qkv), b.in(F, o),
                b.in(DT::F32, rows, savedLse(s.sk))},
               {b.out(F, qkv)}, s.ints(), s.floats(), causal);
      add(b.gemm());
    }
  }

  // Rotary: offsets (a large one: the angle's precision), inverse;
  // rotary_scaled with llama3's and linear scaling.
  Shape heads = {kBatch, kHeads, kSeqQ, kHeadDim};
  std::string headsText = "x" + shapeText(heads);
  {
    CaseBuilder b(Op::Rotary, F, dt, headsText + " theta 1e4 offset 0");
    b.kernel(Op::Rotary, {b.in(F, heads)}, {b.out(F, heads)}, {0}, {10000.0});
    add(b);
  }
  {
    CaseBuilder b(Op::Rotary, F, dt,
                  headsText + " theta 1e4 offset 4000 inverse");
    b.kernel(Op::Rotary, {b.in(F, heads)}, {b.out(F, heads)}, {4000}, {10000.0},
             1);
    add(b);
  }
  // Sequence-major (flag bit 1): positions along dim 1 of [b, s, heads, d].
  Shape seqHeads = {kBatch, kSeqQ, kHeads, kHeadDim};
  std::string seqHeadsText = "x" + shapeText(seqHeads);
  {
    CaseBuilder b(Op::Rotary, F, dt,
                  seqHeadsText + " theta 1e4 offset 5 inverse seq-major");
    b.kernel(Op::Rotary, {b.in(F, seqHeads)}, {b.out(F, seqHeads)}, {5},
             {10000.0}, 3);
    add(b);
  }
  const std::vector<double> llama3 = {500000.0, 8.0, 1.0, 4.0, 8192.0};
  {
    CaseBuilder b(Op::RotaryScaled, F, dt,
                  seqHeadsText + " llama3 offset 9 seq-major");
    b.kernel(Op::RotaryScaled, {b.in(F, seqHeads)}, {b.out(F, seqHeads)}, {9},
             llama3, 2);
    add(b);
  }
  {
    CaseBuilder b(Op::RotaryScaled, F, dt, headsText + " llama3 offset 7");
    b.kernel(Op::RotaryScaled, {b.in(F, heads)}, {b.out(F, heads)}, {7},
             llama3);
    add(b);
  }
  {
    CaseBuilder b(Op::RotaryScaled, F, dt,
                  "x[1,8,64,128] llama3 offset 3000 inverse");
    b.kernel(Op::RotaryScaled, {b.in(F, {1, 8, 64, 128})},
             {b.out(F, {1, 8, 64, 128})}, {3000}, llama3, 1);
    add(b);
  }
  {
    CaseBuilder b(Op::RotaryScaled, F, dt, headsText + " linear x4 offset 11");
    b.kernel(Op::RotaryScaled, {b.in(F, heads)}, {b.out(F, heads)}, {11},
             {10000.0, 4.0, 0.0, 0.0, 0.0});
    add(b);
  }

  // Cross-entropy with ignored labels, plain and over a padded vocabulary
  // (203 classes in 256 columns); its gradient likewise.
  {
    Shape logits = {kBatch, kSeqQ, kVocab};
    {
      CaseBuilder b(Op::CrossEntropy, F, dt, "logits[2,37,203] ignore -100");
      b.kernel(Op::CrossEntropy,
               {b.in(F, logits, normal(2.0)),
                b.in(DT::I64, {kBatch, kSeqQ}, labelsBelow(kVocab))},
               {b.out(DT::F32, {}), b.out(DT::I64, {})}, {kIgnore});
      add(b);
    }
    {
      CaseBuilder b(Op::CrossEntropy, F, dt,
                    "logits[74,256] vocab 203 ignore -100");
      b.kernel(Op::CrossEntropy,
               {b.in(F, {kRows, 256}, normal(2.0)),
                b.in(DT::I64, {kRows}, labelsBelow(kVocab))},
               {b.out(DT::F32, {}), b.out(DT::I64, {})}, {kIgnore, kVocab});
      add(b);
    }
    {
      CaseBuilder b(Op::CrossEntropyGrad, F, dt,
                    "logits[2,37,203] ignore -100");
      b.kernel(Op::CrossEntropyGrad,
               {b.in(F, logits, normal(2.0)),
                b.in(DT::I64, {kBatch, kSeqQ}, labelsBelow(kVocab)),
                b.in(DT::F32, {}, realValue(1.0 / 57))},
               {b.out(F, logits)}, {kIgnore});
      add(b);
    }
    {
      CaseBuilder b(Op::CrossEntropyGrad, F, dt,
                    "logits[74,256] vocab 203 ignore -100");
      b.kernel(Op::CrossEntropyGrad,
               {b.in(F, {kRows, 256}, normal(2.0)),
                b.in(DT::I64, {kRows}, labelsBelow(kVocab)),
                b.in(DT::F32, {}, realValue(0.25))},
               {b.out(F, {kRows, 256})}, {kIgnore, kVocab});
      add(b);
    }
  }

  // Copies and layout changes: bit for bit.
  {
    CaseBuilder b(Op::Copy, F, dt, actText + " -> [74,96]");
    b.kernel(Op::Copy, {b.in(F, act)}, {b.out(F, {kRows, kHidden})});
    add(b.exact());
  }
  {
    CaseBuilder b(Op::TestCopy, F, dt, actText);
    b.kernel(Op::TestCopy, {b.in(F, act)}, {b.out(F, act)});
    add(b.exact());
  }
  if (f32) {
    CaseBuilder b(Op::Copy, F, "i64", "[2,37] -> [74]");
    b.kernel(Op::Copy, {b.in(DT::I64, {kBatch, kSeqQ}, idsBelow(kVocab))},
             {b.out(DT::I64, {kRows})});
    add(b.exact());
  }
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 2, 1, 3}, std::vector<int64_t>{3, 1, 0, 2}}) {
    Shape result;
    for (int64_t p : perm)
      result.push_back(heads[p]);
    CaseBuilder b(Op::Transpose, F, dt, headsText + " perm" + shapeText(perm));
    b.kernel(Op::Transpose, {b.in(F, heads)}, {b.out(F, result)}, perm);
    add(b.exact());
  }
  {
    CaseBuilder b(Op::Slice, F, dt, actText + " dim 1 [5,+20)");
    b.kernel(Op::Slice, {b.in(F, act)}, {b.out(F, {kBatch, 20, kHidden})},
             {1, 5, 20});
    add(b.exact());
  }
  if (f32) {
    CaseBuilder b(Op::Slice, F, "i64", "[4,37] dim 0 [1,+2)");
    b.kernel(Op::Slice, {b.in(DT::I64, {4, kSeqQ}, idsBelow(kVocab))},
             {b.out(DT::I64, {2, kSeqQ})}, {0, 1, 2});
    add(b.exact());
  }
  {
    Shape kv = {kBatch, 2, kSeqQ, kHeadDim};
    CaseBuilder b(Op::Repeat, F, dt, "x" + shapeText(kv) + " dim 1 x3");
    b.kernel(Op::Repeat, {b.in(F, kv)}, {b.out(F, heads)}, {1, 3});
    add(b.exact());
  }
  {
    CaseBuilder b(Op::Pad, F, dt, "x[2,20,96] -> [2,37,96] dim 1 at 5");
    b.kernel(Op::Pad, {b.in(F, {kBatch, 20, kHidden})}, {b.out(F, act)},
             {1, 5});
    add(b.exact());
  }
  // concat: pieces of unequal sizes along a middle dim (GPT-2's q, k, v
  // gradient as rt-fold-pad-sums makes it), the first and the last dim.
  {
    CaseBuilder b(Op::Concat, F, dt, "[2,37,3,5] [2,37,1,5] [2,37,2,5] dim 2");
    uint32_t x = b.in(F, {kBatch, kSeqQ, 3, 5});
    uint32_t y = b.in(F, {kBatch, kSeqQ, 1, 5});
    uint32_t z = b.in(F, {kBatch, kSeqQ, 2, 5});
    b.kernel(Op::Concat, {x, y, z}, {b.out(F, {kBatch, kSeqQ, 6, 5})}, {2});
    add(b.exact());
  }
  {
    CaseBuilder b(Op::Concat, F, dt, "[3,96] [20,96] dim 0");
    b.kernel(Op::Concat, {b.in(F, {3, kHidden}), b.in(F, {20, kHidden})},
             {b.out(F, {23, kHidden})}, {0});
    add(b.exact());
  }
  {
    CaseBuilder b(Op::Concat, F, dt, "[74,7] [74,96] [74,1] dim 1");
    b.kernel(Op::Concat,
             {b.in(F, {kRows, 7}), b.in(F, {kRows, kHidden}),
              b.in(F, {kRows, 1})},
             {b.out(F, {kRows, 104})}, {1});
    add(b.exact());
  }
  {
    CaseBuilder b(Op::SumGroups, F, dt, headsText + " dim 1 groups of 3");
    b.kernel(Op::SumGroups, {b.in(F, heads)},
             {b.out(F, {kBatch, 2, kSeqQ, kHeadDim})}, {1, 3});
    add(b);
  }
  for (Shape to : {Shape{kHidden}, Shape{kSeqQ, kHidden}}) {
    CaseBuilder b(Op::SumTo, F, dt, actText + " -> " + shapeText(to));
    b.kernel(Op::SumTo, {b.in(F, act)}, {b.out(F, to)});
    add(b);
  }

  // Casts from this storage to the other two (and from f16, with f32).
  std::vector<std::pair<DT, DT>> casts;
  for (DT to : {DT::F32, DT::BF16, DT::F16})
    if (to != F)
      casts.push_back({F, to});
  if (f32) {
    casts.push_back({DT::F16, DT::F32});
    casts.push_back({DT::F16, DT::BF16});
  }
  for (auto [from, to] : casts) {
    CaseBuilder b(Op::Cast, F,
                  std::string(dtypeName(from)) + ">" + dtypeName(to),
                  "x[7,1001] wide range");
    b.kernel(Op::Cast, {b.in(from, {7, 1001}, wide())}, {b.out(to, {7, 1001})});
    add(b.exact());
  }

  // embedding_grad: repeated ids (7 distinct among 74: the scatter-add
  // order must not change the sums), and ids over the whole vocabulary.
  for (int64_t distinct : {int64_t(7), kVocab}) {
    CaseBuilder b(Op::EmbeddingGrad, F, dt,
                  "dY[2,37,96] ids below " + std::to_string(distinct) +
                      " -> [203,96]");
    b.kernel(Op::EmbeddingGrad,
             {b.in(F, act), b.in(DT::I64, {kBatch, kSeqQ}, idsBelow(distinct))},
             {b.out(F, {kVocab, kHidden})});
    add(b);
    // Added into an f32 sum (filled, not zeros) in place, two steps: the
    // rows no id hits keep the sum's values.
    CaseBuilder a(Op::EmbeddingGradAccumulate, F, dt,
                  "dY[2,37,96] ids below " + std::to_string(distinct) +
                      " += f32[203,96] 2 steps");
    uint32_t sum = a.param({kVocab, kHidden});
    a.kernel(
        Op::EmbeddingGradAccumulate,
        {a.in(F, act), a.in(DT::I64, {kBatch, kSeqQ}, idsBelow(distinct)), sum},
        {sum});
    add(a.steps(2));
  }

  // The linear gradients: both layouts, one large case each.
  for (int layout = 0; layout < 2; ++layout) {
    Shape w = layout ? Shape{4, 30, kHidden} : Shape{kHidden, 4, 30};
    std::string lt = layout ? " out_in" : " in_out";
    {
      CaseBuilder b(Op::LinearInputGrad, F, dt,
                    "dY[2,37,120] w" + shapeText(w) + lt);
      b.kernel(Op::LinearInputGrad,
               {b.in(F, {kBatch, kSeqQ, 120}), b.in(F, w, normal(0.1))},
               {b.out(F, act)}, {}, {}, layout);
      add(b.gemm());
    }
    {
      CaseBuilder b(Op::LinearWeightGrad, F, dt,
                    actText + " dY[2,37,120] -> " + shapeText(w) + lt);
      b.kernel(Op::LinearWeightGrad,
               {b.in(F, act), b.in(F, {kBatch, kSeqQ, 120})}, {b.out(F, w)}, {},
               {}, layout);
      add(b.gemm());
    }
    {
      // An f32 sum (filled, not zeros) added to in place, two steps: the
      // second adds to the first's result.
      CaseBuilder b(Op::LinearWeightGradAccumulate, F, dt,
                    actText + " dY[2,37,120] += f32" + shapeText(w) + lt +
                        " 2 steps");
      uint32_t sum = b.param(w);
      b.kernel(Op::LinearWeightGradAccumulate,
               {b.in(F, act), b.in(F, {kBatch, kSeqQ, 120}), sum}, {sum}, {},
               {}, layout);
      add(b.gemm().steps(2));
    }
  }
  {
    CaseBuilder b(Op::LinearInputGrad, F, dt, "dY[300,700] w[700,512] out_in");
    b.kernel(Op::LinearInputGrad,
             {b.in(F, {300, 700}), b.in(F, {700, 512}, normal(0.05))},
             {b.out(F, {300, 512})}, {}, {}, 1);
    add(b.gemm());
  }
  {
    CaseBuilder b(Op::LinearWeightGrad, F, dt,
                  "x[300,512] dY[300,700] -> [512,700] in_out");
    b.kernel(Op::LinearWeightGrad, {b.in(F, {300, 512}), b.in(F, {300, 700})},
             {b.out(F, {512, 700})}, {}, {}, 0);
    add(b.gemm());
  }

  // sum_squares over three operands of different storage and sizes.
  {
    CaseBuilder b(Op::SumSquares, F, "mixed",
                  dt + actText + " " + dt + "[203] f16[7,11]");
    b.kernel(Op::SumSquares,
             {b.in(F, act), b.in(F, {kVocab}), b.in(DT::F16, {7, 11})},
             {b.out(DT::F32, {})});
    add(b);
  }

  // zeros: any dtype, every bit 0.
  {
    CaseBuilder b(Op::Zeros, F, dt, actText);
    b.kernel(Op::Zeros, {}, {b.out(F, act)});
    add(b.exact());
  }
  if (!f32)
    return;
  {
    CaseBuilder b(Op::Zeros, F, "i64,u8", "[7] [13]");
    b.kernel(Op::Zeros, {}, {b.out(DT::I64, {7})});
    b.kernel(Op::Zeros, {}, {b.out(DT::U8, {13})});
    add(b.exact());
  }
  // A run of casts and zeros, which the CUDA device launches as one batch
  // (KernelBatches.h): every storage pair, vector and tail elements.
  {
    CaseBuilder b(Op::Cast, F, "batch",
                  "f32>bf16[7,1001] f32>f16[13] bf16>f32[5,3] zeros f32[7,11] "
                  "f16>bf16[7,1001] wide range");
    b.kernel(Op::Cast, {b.in(DT::F32, {7, 1001}, wide())},
             {b.out(DT::BF16, {7, 1001})});
    b.kernel(Op::Cast, {b.in(DT::F32, {13}, wide())}, {b.out(DT::F16, {13})});
    b.kernel(Op::Cast, {b.in(DT::BF16, {5, 3}, wide())},
             {b.out(DT::F32, {5, 3})});
    b.kernel(Op::Zeros, {}, {b.out(DT::F32, {7, 11})});
    b.kernel(Op::Cast, {b.in(DT::F16, {7, 1001}, wide())},
             {b.out(DT::BF16, {7, 1001})});
    add(b.exact());
  }

  // The training driver: targets, counts, the mean loss.
  {
    CaseBuilder b(Op::CountTargets, F, "i64", "labels[2,37] ignore -100");
    b.kernel(Op::CountTargets,
             {b.in(DT::I64, {kBatch, kSeqQ}, labelsBelow(kVocab, 0.3))},
             {b.out(DT::I64, {})}, {kIgnore});
    add(b);
  }
  {
    CaseBuilder b(Op::InverseCount, F, "i64>f32", "count 57; count 0");
    b.kernel(Op::InverseCount, {b.in(DT::I64, {}, intValue(57))},
             {b.out(DT::F32, {})});
    b.kernel(Op::InverseCount, {b.in(DT::I64, {}, intValue(0))},
             {b.out(DT::F32, {})});
    add(b);
  }
  {
    CaseBuilder b(Op::LossMean, F, dt, "sum 123.4 / 57; sum 5 / 0");
    b.kernel(
        Op::LossMean,
        {b.in(DT::F32, {}, realValue(123.4)), b.in(DT::I64, {}, intValue(57))},
        {b.out(DT::F32, {})});
    b.kernel(
        Op::LossMean,
        {b.in(DT::F32, {}, realValue(5.0)), b.in(DT::I64, {}, intValue(0))},
        {b.out(DT::F32, {})});
    add(b);
  }

  // The optimizer: three steps (state carried), with and without the clip
  // coefficient; params and state f32.
  Shape p = {kHidden, kHeadDim};
  for (int scaled = 0; scaled < 2; ++scaled) {
    std::string st = std::string(" lr 1e-2") +
                     (scaled ? " grad_scale 0.7" : "") + " 3 steps";
    {
      CaseBuilder b(Op::AdamWUpdate, F, dt,
                    "p[96,40] b(0.9,0.95) eps 1e-8 wd 0.1" + st);
      uint32_t param = b.param(p);
      uint32_t m = b.state("exp_avg"), v = b.state("exp_avg_sq");
      std::vector<uint32_t> ops = {
          param, b.in(DT::F32, p, normal(0.1)),      m,
          v,     b.in(DT::F32, {}, realValue(1e-2)), b.step()};
      if (scaled)
        ops.push_back(b.in(DT::F32, {}, realValue(0.7)));
      b.kernel(Op::AdamWUpdate, ops, {param, m, v}, {}, {0.9, 0.95, 1e-8, 0.1});
      add(b.steps(3));
    }
    {
      CaseBuilder b(Op::SgdUpdate, F, dt, "p[96,40] momentum 0.9 wd 0.01" + st);
      uint32_t param = b.param(p);
      uint32_t m = b.state("momentum");
      std::vector<uint32_t> ops = {param, b.in(DT::F32, p, normal(0.1)), m,
                                   b.in(DT::F32, {}, realValue(1e-2))};
      if (scaled)
        ops.push_back(b.in(DT::F32, {}, realValue(0.7)));
      b.kernel(Op::SgdUpdate, ops, {param, m}, {}, {0.9, 0.01});
      add(b.steps(3));
    }
    {
      CaseBuilder b(Op::SgdUpdatePlain, F, dt, "p[96,40] wd 0.01" + st);
      uint32_t param = b.param(p);
      std::vector<uint32_t> ops = {param, b.in(DT::F32, p, normal(0.1)),
                                   b.in(DT::F32, {}, realValue(1e-2))};
      if (scaled)
        ops.push_back(b.in(DT::F32, {}, realValue(0.7)));
      b.kernel(Op::SgdUpdatePlain, ops, {param}, {}, {0.01});
      add(b.steps(3));
    }
  }
  {
    CaseBuilder b(Op::ClipCoefficient, F, dt,
                  "sum 37.5 max 1; sum 0.25 max 1; sum 37.5 max 0");
    for (auto [sum, max] :
         {std::pair<double, double>{37.5, 1.0}, {0.25, 1.0}, {37.5, 0.0}})
      b.kernel(Op::ClipCoefficient, {b.in(DT::F32, {}, realValue(sum))},
               {b.out(DT::F32, {}), b.out(DT::F32, {})}, {}, {max});
    add(b);
  }
  {
    CaseBuilder b(Op::LrSchedule, F, dt,
                  "cosine warmup 10 decay 100 at t 1,10,57,150; constant");
    for (int64_t t : {1, 10, 57, 150})
      b.kernel(Op::LrSchedule, {b.in(DT::I64, {}, intValue(t))},
               {b.out(DT::F32, {})}, {10, 100}, {3e-4, 3e-5}, 1);
    b.kernel(Op::LrSchedule, {b.in(DT::I64, {}, intValue(57))},
             {b.out(DT::F32, {})}, {0, 0}, {3e-4, 0.0}, 0);
    add(b);
  }
}

/// Every case, f32 storage first, then bf16.
inline std::vector<Case> makeCases() {
  std::vector<Case> cases;
  addCases(DT::F32, cases);
  addCases(DT::BF16, cases);
  return cases;
}

} // namespace devicecheck
} // namespace tpcrt

#endif // TPCRT_TEST_DEVICECHECKCASES_H
