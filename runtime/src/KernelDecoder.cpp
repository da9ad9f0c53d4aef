//===- KernelDecoder.cpp - checking one kernel, deriving its sizes --------===//
//
// One function per opcode checks the attribute counts, dtypes and shapes the
// kernel's implementation relies on, and fills in its sizes; decode()
// dispatches on the opcode as its Kernels.def row names it.
//
//===----------------------------------------------------------------------===//

#include "ProgramChecks.h"
#include "tpcrt/KernelTable.h"
#include "tpcrt/Shape.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

using namespace tpcrt;

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string describe(const std::string &role, const TensorRef &t) {
  return role + " " + formatShape(t.shape);
}

/// Whether `op`'s kernel may write a result over the very bytes of an
/// operand (Kernels.def: Aliasing::SameBytes).
bool allowsInPlace(fb::OpCode op) {
  const KernelInfo *info = kernelInfo(op);
  return info && info->aliasing == Aliasing::SameBytes;
}

bool overlaps(const TensorRef &a, const TensorRef &b) {
  return a.bytes && b.bytes && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

} // namespace

Status KernelDecoder::attrs(size_t ints, size_t floats, uint32_t flagMask) {
  if (call.intAttrs.size() != ints)
    return Status::error("has " + std::to_string(call.intAttrs.size()) +
                         " int_attrs, expected " + std::to_string(ints));
  if (call.floatAttrs.size() != floats)
    return Status::error("has " + std::to_string(call.floatAttrs.size()) +
                         " float_attrs, expected " + std::to_string(floats));
  if (call.flags & ~flagMask)
    return Status::error("flags " + std::to_string(call.flags) +
                         " set bits this opcode does not define (allowed " +
                         std::to_string(flagMask) + ")");
  return Status::ok();
}

Status KernelDecoder::floatDType(const TensorRef &t, const std::string &role) {
  if (isFloatDType(t.dtype))
    return Status::ok();
  return Status::error(role + " is " + executableDTypeName(t.dtype) +
                       ", expected f32, bf16 or f16");
}

/// Every operand and result is F32, BF16 or F16 (kernels with integer
/// operands check theirs one by one).
Status KernelDecoder::floatOperands() {
  for (size_t j = 0; j < call.operands.size(); ++j)
    if (Status s = floatDType(in(j), inRole(j)); !s)
      return s;
  for (size_t j = 0; j < call.results.size(); ++j)
    if (Status s = floatDType(out(j), outRole(j)); !s)
      return s;
  return Status::ok();
}

Status KernelDecoder::dtype(const TensorRef &t, const std::string &role,
                            fb::DType expected) {
  if (t.dtype == expected)
    return Status::ok();
  return Status::error(role + " is " + executableDTypeName(t.dtype) +
                       ", expected " + executableDTypeName(expected));
}

Status KernelDecoder::rankAtLeast(const TensorRef &t, const std::string &role,
                                  size_t rank) {
  if (t.shape.size() >= rank)
    return Status::ok();
  return Status::error(describe(role, t) + " has rank " +
                       std::to_string(t.shape.size()) + ", expected at least " +
                       std::to_string(rank));
}

Status KernelDecoder::rankAtMost(const TensorRef &t, const std::string &role,
                                 size_t rank) {
  if (t.shape.size() <= rank)
    return Status::ok();
  return Status::error(describe(role, t) + " has rank " +
                       std::to_string(t.shape.size()) + ", at most " +
                       std::to_string(rank) + " is supported");
}

Status KernelDecoder::shape(const TensorRef &t, const std::string &role,
                            const std::vector<int64_t> &expected) {
  if (t.shape == expected)
    return Status::ok();
  return Status::error(describe(role, t) + " should be " +
                       formatShape(expected));
}

/// The product of dimensions [begin, end) of t; only a shape with a zero
/// elsewhere can make it overflow.
Status KernelDecoder::product(const TensorRef &t, const std::string &role,
                              size_t begin, size_t end, int64_t &value) {
  std::vector<int64_t> part(t.shape.begin() + begin, t.shape.begin() + end);
  if (numElementsOf(part, value))
    return Status::ok();
  return Status::error(describe(role, t) + ": dimensions " + formatShape(part) +
                       " have too many elements");
}

Status KernelDecoder::finite(size_t index, const char *name, double lowest,
                             bool lowestIncluded) {
  double v = call.floatAttrs[index];
  bool ok = std::isfinite(v) && (lowestIncluded ? v >= lowest : v > lowest);
  if (ok)
    return Status::ok();
  return Status::error(std::string(name) + " (float_attrs[" +
                       std::to_string(index) + "]) is " + number(v) +
                       ", expected a finite value " +
                       (lowestIncluded ? ">= " : "> ") + number(lowest));
}

Status KernelDecoder::dropoutRate(size_t index) {
  double rate = call.floatAttrs[index];
  if (rate >= 0.0 && rate < 1.0) {
    call.dropoutRate = rate;
    return Status::ok();
  }
  return Status::error("dropout rate (float_attrs[" + std::to_string(index) +
                       "]) is " + number(rate) + ", expected [0, 1)");
}

/// The attributes of a kernel drawing a dropout stream: int_attrs [stream]
/// or [stream, first_index] (where this piece, e.g. a microbatch, starts in
/// the op's full tensor; 0 when absent).
Status KernelDecoder::streamAttrs(size_t floats, uint32_t flagMask) {
  if (Status s = attrs(call.intAttrs.size() == 2 ? 2 : 1, floats, flagMask); !s)
    return s;
  if (call.intAttrs.size() == 2 && call.intAttrs[1] < 0)
    return Status::error("first index (int_attrs[1]) is " +
                         std::to_string(call.intAttrs[1]) + ", expected >= 0");
  return Status::ok();
}

/// int_attrs [] or [axes...]: the table is then block `position` of the
/// vocabulary rows over those axes.
Status KernelDecoder::embedding() {
  return embeddingSizes(in(0), inRole(0), out(0), outRole(0));
}

/// Embedding and its gradient: int_attrs [] or a group's axes, a float
/// operand 0, i64 ids (operand 1) and a float result; the [vocab, hidden]
/// `table` (embedding's operand, the gradient's result) and the `rows` of
/// the ids (embedding's result, the gradient's dY), ids.shape + [hidden].
Status KernelDecoder::embeddingSizes(const TensorRef &table,
                                     const std::string &tableRole,
                                     const TensorRef &rows,
                                     const std::string &rowsRole) {
  if (Status s = call.intAttrs.empty() ? attrs(0, 0, 0) : groupAxes(0); !s)
    return s;
  if (Status s = floatDType(in(0), inRole(0)); !s)
    return s;
  if (Status s = dtype(in(1), "ids", fb::DType::I64); !s)
    return s;
  if (Status s = floatDType(out(0), outRole(0)); !s)
    return s;
  if (table.shape.size() != 2)
    return Status::error(describe(tableRole, table) +
                         " should be [vocab, hidden]");
  call.k = table.shape[0];
  call.n = table.shape[1];
  call.m = in(1).elements;
  if (Status s = vocabRows(table, tableRole); !s)
    return s;
  std::vector<int64_t> expected = in(1).shape;
  expected.push_back(call.n);
  return shape(rows, rowsRole, expected);
}

/// The whole vocabulary of a table block of k rows over the group (ids are
/// checked against it when the kernel runs) must be countable.
Status KernelDecoder::vocabRows(const TensorRef &table,
                                const std::string &role) {
  int64_t vocab;
  if (__builtin_mul_overflow(call.k, call.groupSize, &vocab))
    return Status::error(describe(role, table) + " times the group size " +
                         std::to_string(call.groupSize) + " overflows");
  return Status::ok();
}

/// linear's sizes from its input x, weight w and result y (and the same
/// three tensors in its gradients): k = x's last dim, m = x's other
/// elements, n = the weight's out elements, y has m * n elements.
Status KernelDecoder::linearSizes(const TensorRef &x, const std::string &xRole,
                                  const TensorRef &w, const std::string &wRole,
                                  const TensorRef &y,
                                  const std::string &yRole) {
  if (Status s = rankAtLeast(x, xRole, 1); !s)
    return s;
  if (Status s = rankAtLeast(w, wRole, 1); !s)
    return s;
  bool outIn = call.flags & 1;
  call.k = x.shape.back();
  int64_t contracted = outIn ? w.shape.back() : w.shape.front();
  if (contracted != call.k)
    return Status::error(describe(wRole, w) + " (" +
                         (outIn ? "out_in" : "in_out") + ") contracts " +
                         std::to_string(contracted) + " but " +
                         describe(xRole, x) + " has " + std::to_string(call.k));
  if (Status s = product(x, xRole, 0, x.shape.size() - 1, call.m); !s)
    return s;
  if (Status s = outIn ? product(w, wRole, 0, w.shape.size() - 1, call.n)
                       : product(w, wRole, 1, w.shape.size(), call.n);
      !s)
    return s;
  int64_t expected;
  if (__builtin_mul_overflow(call.m, call.n, &expected) ||
      y.elements != expected)
    return Status::error(describe(yRole, y) + " has " +
                         std::to_string(y.elements) + " elements, " +
                         "expected m " + std::to_string(call.m) + " x n " +
                         std::to_string(call.n));
  return Status::ok();
}

Status KernelDecoder::linear() {
  if (Status s = attrs(0, 0, 1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = linearSizes(in(0), "input", in(1), "weight", out(0), "result");
      !s)
    return s;
  if (call.operands.size() == 3 && in(2).elements != call.n)
    return Status::error(describe("bias", in(2)) + " has " +
                         std::to_string(in(2).elements) + " elements, " +
                         "expected n " + std::to_string(call.n));
  return Status::ok();
}

Status KernelDecoder::batchMatmul() {
  if (Status s = attrs(0, 1, 3); !s)
    return s;
  if (Status s = finite(0, "scale", -INFINITY, false); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  const TensorRef &lhs = in(0), &rhs = in(1), &result = out(0);
  if (Status s = rankAtLeast(lhs, "lhs", 2); !s)
    return s;
  size_t rank = lhs.shape.size();
  if (rhs.shape.size() != rank || result.shape.size() != rank)
    return Status::error(describe("lhs", lhs) + ", " + describe("rhs", rhs) +
                         " and " + describe("result", result) +
                         " should have the same rank");
  bool tl = call.flags & 1, tr = call.flags & 2;
  int64_t a = lhs.shape[rank - 2], b = lhs.shape[rank - 1];
  int64_t c = rhs.shape[rank - 2], d = rhs.shape[rank - 1];
  call.m = tl ? b : a;
  call.k = tl ? a : b;
  int64_t rhsK = tr ? d : c;
  call.n = tr ? c : d;
  if (rhsK != call.k)
    return Status::error(describe("lhs", lhs) + " contracts " +
                         std::to_string(call.k) + " but " +
                         describe("rhs", rhs) + " has " + std::to_string(rhsK) +
                         (tl || tr ? " (with its transpose flags)" : ""));
  std::vector<int64_t> expected(result.shape.begin(), result.shape.end() - 2);
  for (const TensorRef *t : {&lhs, &rhs})
    if (!std::equal(expected.begin(), expected.end(), t->shape.begin()))
      return Status::error(describe(t == &lhs ? "lhs" : "rhs", *t) +
                           " should have the batch dimensions of " +
                           describe("result", result));
  if (Status s = product(result, "result", 0, rank - 2, call.batch); !s)
    return s;
  expected.push_back(call.m);
  expected.push_back(call.n);
  return shape(result, "result", expected);
}

/// rows and cols of a normalization over x's last dim.
Status KernelDecoder::normSizes(const TensorRef &x, const std::string &role) {
  if (Status s = rankAtLeast(x, role, 1); !s)
    return s;
  call.cols = x.shape.back();
  return product(x, role, 0, x.shape.size() - 1, call.rows);
}

Status KernelDecoder::norm() {
  if (Status s = attrs(0, 1, 0); !s)
    return s;
  if (Status s = finite(0, "epsilon", 0.0, true); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = normSizes(in(0), "input"); !s)
    return s;
  for (size_t j = 1; j < call.operands.size(); ++j)
    if (Status s = shape(in(j), inRole(j), {call.cols}); !s)
      return s;
  return shape(out(0), "result", in(0).shape);
}

Status KernelDecoder::elementwise() {
  bool isDropout = call.op == fb::OpCode::Dropout;
  if (Status s = isDropout ? streamAttrs(1, 0) : attrs(0, 0, rowFlagMask());
      !s)
    return s;
  if (isDropout)
    if (Status s = dropoutRate(0); !s)
      return s;
  if (Status s = floatOperands(); !s)
    return s;
  call.count = in(0).elements;
  return shape(out(0), "result", in(0).shape);
}

Status KernelDecoder::broadcast() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  // add also sums i64 counts (all three i64).
  bool counts = call.op == fb::OpCode::Add && in(0).dtype == fb::DType::I64;
  if (counts) {
    if (Status s = dtype(in(1), inRole(1), fb::DType::I64); !s)
      return s;
    if (Status s = dtype(out(0), outRole(0), fb::DType::I64); !s)
      return s;
  } else if (Status s = floatOperands(); !s) {
    return s;
  }
  if (Status s = suffixCounts(in(0), "lhs", in(1), "rhs"); !s)
    return s;
  return shape(out(0), "result", in(0).shape);
}

/// `part`'s shape is a trailing part of `whole`'s (a broadcast operand, a
/// sum_to result): call.count and call.rhsCount are their element counts.
Status KernelDecoder::suffixCounts(const TensorRef &whole,
                                   const char *wholeRole,
                                   const TensorRef &part,
                                   const char *partRole) {
  const std::vector<int64_t> &w = whole.shape, &p = part.shape;
  if (p.size() > w.size() ||
      !std::equal(p.begin(), p.end(), w.end() - p.size()))
    return Status::error(describe(partRole, part) + " is not a suffix of " +
                         describe(wholeRole, whole));
  call.count = whole.elements;
  call.rhsCount = part.elements;
  if (call.rhsCount == 0 && call.count != 0)
    return Status::error(describe(partRole, part) + " is empty but " +
                         describe(wholeRole, whole) + " is not");
  return Status::ok();
}

/// outer, seqQ and seqK of a softmax over x's last dim.
Status KernelDecoder::softmaxSizes(const TensorRef &x,
                                   const std::string &role) {
  bool causal = call.flags & 1;
  if (Status s = rankAtLeast(x, role, causal ? 2 : 1); !s)
    return s;
  size_t rank = x.shape.size();
  call.seqK = x.shape[rank - 1];
  call.seqQ = rank >= 2 ? x.shape[rank - 2] : 1;
  if (Status s = product(x, role, 0, rank >= 2 ? rank - 2 : 0, call.outer); !s)
    return s;
  if (causal && call.seqK < call.seqQ)
    return Status::error("causal " + describe(role, x) + " has " +
                         std::to_string(call.seqQ) + " queries but only " +
                         std::to_string(call.seqK) + " keys");
  return Status::ok();
}

Status KernelDecoder::softmax() {
  if (Status s = attrs(0, 0, 1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = softmaxSizes(in(0), "input"); !s)
    return s;
  return shape(out(0), "result", in(0).shape);
}

/// The attention kernels' attributes (as attention's) and float operands.
Status KernelDecoder::attentionAttrs() {
  if (Status s = streamAttrs(2, rowFlagMask()); !s)
    return s;
  if (Status s = finite(0, "scale", -INFINITY, false); !s)
    return s;
  if (Status s = dropoutRate(1); !s)
    return s;
  return floatOperands();
}

/// Attention's attributes and sizes from query, key and value, operands
/// first .. first + 2.
Status KernelDecoder::attentionSizes(size_t first) {
  if (Status s = attentionAttrs(); !s)
    return s;
  for (size_t j = first; j < first + 3; ++j)
    if (in(j).shape.size() != 4)
      return Status::error(describe(inRole(j), in(j)) + " should have rank 4");
  const std::vector<int64_t> &q = in(first).shape, &k = in(first + 1).shape,
                             &v = in(first + 2).shape;
  int headsDim = call.attentionHeadsDim(), seqDim = call.attentionQueryDim();
  call.batch = q[0];
  call.heads = q[headsDim];
  call.seqQ = q[seqDim];
  call.headDim = q[3];
  call.kvHeads = k[headsDim];
  call.seqK = k[seqDim];
  call.valueDim = v[3];
  if (Status s = shape(in(first + 1), "key",
                       attentionShape(call.kvHeads, call.seqK, call.headDim));
      !s)
    return s;
  if (Status s = shape(in(first + 2), "value",
                       attentionShape(call.kvHeads, call.seqK, call.valueDim));
      !s)
    return s;
  if (call.kvHeads == 0 || call.heads % call.kvHeads != 0)
    return Status::error(std::to_string(call.heads) +
                         " query heads are not a multiple of " +
                         std::to_string(call.kvHeads) + " kv heads");
  bool causal = call.flags & 1;
  if (causal && call.seqK < call.seqQ)
    return Status::error("causal attention has " + std::to_string(call.seqQ) +
                         " queries but only " + std::to_string(call.seqK) +
                         " keys");
  if (call.seqK == 0 && call.seqQ > 0)
    return Status::error("attention has queries but no keys");
  return Status::ok();
}

Status KernelDecoder::attention() {
  if (Status s = attentionSizes(0); !s)
    return s;
  return shape(out(0), "result",
               attentionShape(call.heads, call.seqQ, call.valueDim));
}

/// attention_qkv's and attention_qkv_grad's attributes and sizes from qkv,
/// operand `index`: [b, s, 3, heads, d], q, k and v its parts.
Status KernelDecoder::attentionQkvSizes(size_t index) {
  if (Status s = attentionAttrs(); !s)
    return s;
  const TensorRef &qkv = in(index);
  if (qkv.shape.size() != 5 || qkv.shape[2] != kQkvParts)
    return Status::error(describe(inRole(index), qkv) +
                         " should be [b, s, 3, heads, d]");
  call.batch = qkv.shape[0];
  call.seqQ = call.seqK = qkv.shape[1];
  call.heads = call.kvHeads = qkv.shape[3];
  call.headDim = call.valueDim = qkv.shape[4];
  return Status::ok();
}

Status KernelDecoder::attentionQkv() {
  if (Status s = attentionQkvSizes(0); !s)
    return s;
  return shape(out(0), "result",
               attentionShape(call.heads, call.seqQ, call.valueDim));
}

Status KernelDecoder::attentionLseResult() {
  if (Status s = dtype(out(1), outRole(1), fb::DType::F32); !s)
    return s;
  return shape(out(1), outRole(1), {call.batch, call.heads, call.seqQ});
}

Status KernelDecoder::attentionLse() {
  if (Status s = attention(); !s)
    return s;
  return attentionLseResult();
}

Status KernelDecoder::attentionQkvLse() {
  if (Status s = attentionQkv(); !s)
    return s;
  return attentionLseResult();
}

Status KernelDecoder::attentionSavedOperands(size_t first) {
  size_t n = call.operands.size();
  if (n == first)
    return Status::ok();
  if (n != first + 2)
    return Status::error("takes the forward's output and lse both or neither, "
                         "got " +
                         std::to_string(n) + " operands");
  if (Status s = shape(in(first), inRole(first), in(0).shape); !s)
    return s;
  if (Status s = dtype(in(first + 1), inRole(first + 1), fb::DType::F32); !s)
    return s;
  return shape(in(first + 1), inRole(first + 1),
               {call.batch, call.heads, call.seqQ});
}

Status KernelDecoder::attentionQkvGrad() {
  if (Status s = attentionQkvSizes(1); !s)
    return s;
  if (Status s = shape(in(0), "dO",
                       attentionShape(call.heads, call.seqQ, call.valueDim));
      !s)
    return s;
  if (Status s = attentionSavedOperands(2); !s)
    return s;
  return shape(out(0), outRole(0), in(1).shape);
}

std::vector<int64_t> KernelDecoder::attentionShape(int64_t heads, int64_t seq,
                                                   int64_t dim) const {
  if (call.attentionSeqMajor())
    return {call.batch, seq, heads, dim};
  return {call.batch, heads, seq, dim};
}

Status KernelDecoder::rotaryScaled() {
  if (Status s = attrs(1, 5, rowFlagMask()); !s)
    return s;
  if (Status s = finite(1, "factor", 0.0, false); !s)
    return s;
  const std::vector<double> &f = call.floatAttrs;
  bool linear = f[2] == 0.0 && f[3] == 0.0 && f[4] == 0.0;
  bool llama3 = std::isfinite(f[2]) && std::isfinite(f[3]) &&
                std::isfinite(f[4]) && f[2] > 0.0 && f[3] > f[2] &&
                f[4] > 0.0;
  if (!linear && !llama3)
    return Status::error(
        "float_attrs [2..4] (low_freq_factor, high_freq_factor, "
        "original_max_positions) are " +
        std::to_string(f[2]) + ", " + std::to_string(f[3]) + ", " +
        std::to_string(f[4]) +
        ": expected all 0 (linear) or high > low > 0 and original > 0 "
        "(llama3)");
  return rotaryShape(5);
}

Status KernelDecoder::rotary() { return rotaryShape(1); }

Status KernelDecoder::rotaryShape(size_t floats) {
  if (Status s = attrs(1, floats, rowFlagMask()); !s)
    return s;
  if (call.intAttrs[0] < 0)
    return Status::error("position offset (int_attrs[0]) is " +
                         std::to_string(call.intAttrs[0]) + ", expected >= 0");
  if (Status s = finite(0, "theta", 0.0, false); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  const TensorRef &x = in(0);
  // Sequence-major: [..., s, heads, d], each position's heads in a row.
  bool seqMajor = call.flags & 2;
  if (Status s = rankAtLeast(x, "input", seqMajor ? 3 : 2); !s)
    return s;
  size_t rank = x.shape.size(), seqDim = rank - (seqMajor ? 3 : 2);
  call.headDim = x.shape[rank - 1];
  call.seqQ = x.shape[seqDim];
  call.heads = seqMajor ? x.shape[rank - 2] : 1;
  if (call.headDim % 2 != 0)
    return Status::error(describe("input", x) + " has an odd head dimension " +
                         std::to_string(call.headDim));
  if (Status s = product(x, "input", 0, seqDim, call.outer); !s)
    return s;
  return shape(out(0), "result", x.shape);
}

/// rows and cols of cross-entropy's logits (operand 0) and labels
/// (operand 1, i64 logits.shape[:-1]), and k, the classes. int_attrs
/// [ignore index], [ignore index, vocab] (global columns from vocab on are
/// padding) or [ignore index, vocab, axes...] (the logits' columns are block
/// `position` of the padded vocabulary over the axes).
Status KernelDecoder::crossEntropySizes() {
  size_t ints = call.intAttrs.size();
  if (Status s = ints > 2 ? groupAxes(2) : attrs(ints == 2 ? 2 : 1, 0, 0); !s)
    return s;
  const TensorRef &logits = in(0);
  if (Status s = floatDType(logits, "logits"); !s)
    return s;
  if (Status s = dtype(in(1), "labels", fb::DType::I64); !s)
    return s;
  if (Status s = rankAtLeast(logits, "logits", 1); !s)
    return s;
  call.cols = logits.shape.back();
  call.rows = in(1).elements;
  std::vector<int64_t> positions(logits.shape.begin(), logits.shape.end() - 1);
  if (Status s = shape(in(1), "labels", positions); !s)
    return s;
  call.k = call.cols;
  if (ints < 2)
    return Status::ok();
  int64_t vocab = call.intAttrs[1], columns;
  std::string g = std::to_string(call.groupSize);
  if (__builtin_mul_overflow(call.cols, call.groupSize, &columns))
    return Status::error(describe("logits", logits) + " times the group size " +
                         g + " overflows");
  if (vocab < 1 || vocab > columns)
    return Status::error("vocab (int_attrs[1]) is " + std::to_string(vocab) +
                         ", expected [1, " + std::to_string(columns) + "] (" +
                         describe("logits", logits) +
                         (call.groupSize > 1 ? ", group size " + g : "") + ")");
  call.k = vocab;
  return Status::ok();
}

Status KernelDecoder::scalar(const TensorRef &t, const std::string &role,
                             fb::DType dt) {
  if (Status s = dtype(t, role, dt); !s)
    return s;
  return shape(t, role, {});
}

Status KernelDecoder::crossEntropy() {
  if (Status s = crossEntropySizes(); !s)
    return s;
  if (Status s = scalar(out(0), "loss_sum", fb::DType::F32); !s)
    return s;
  return scalar(out(1), "count", fb::DType::I64);
}

Status KernelDecoder::lossMean() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  if (Status s = scalar(in(0), "sum", fb::DType::F32); !s)
    return s;
  if (Status s = scalar(in(1), "count", fb::DType::I64); !s)
    return s;
  return scalar(out(0), "result", fb::DType::F32);
}

Status KernelDecoder::copy() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  if (in(0).dtype != out(0).dtype)
    return Status::error(std::string("input is ") +
                         executableDTypeName(in(0).dtype) + " but result is " +
                         executableDTypeName(out(0).dtype) +
                         " (a conversion is a cast)");
  if (in(0).elements != out(0).elements)
    return Status::error(describe("input", in(0)) + " and " +
                         describe("result", out(0)) +
                         " have different element counts");
  call.count = in(0).elements;
  return Status::ok();
}

Status KernelDecoder::transpose() {
  const TensorRef &x = in(0);
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = rankAtMost(x, "input", kMaxRank); !s)
    return s;
  size_t rank = x.shape.size();
  if (Status s = attrs(rank, 0, 0); !s)
    return s.withContext("permutation of " + describe("input", x));
  std::vector<bool> seen(rank);
  std::vector<int64_t> expected;
  for (int64_t p : call.intAttrs) {
    if (p < 0 || static_cast<size_t>(p) >= rank || seen[p])
      return Status::error("int_attrs " + formatShape(call.intAttrs) +
                           " is not a permutation of " + std::to_string(rank) +
                           " dimensions");
    seen[p] = true;
    expected.push_back(x.shape[p]);
  }
  return shape(out(0), "result", expected);
}

Status KernelDecoder::sliceOrRepeat() {
  bool isSlice = call.op == fb::OpCode::Slice;
  if (Status s = attrs(isSlice ? 3 : 2, 0, 0); !s)
    return s;
  const TensorRef &x = in(0);
  // A slice copies elements of any type (microbatches of token ids).
  if (!isSlice)
    if (Status s = floatOperands(); !s)
      return s;
  if (isSlice && x.dtype != out(0).dtype)
    return Status::error(std::string("input is ") +
                         executableDTypeName(x.dtype) + " but result is " +
                         executableDTypeName(out(0).dtype));
  int64_t dim;
  if (Status s = dimAttr(x, "input", dim); !s)
    return s;
  std::vector<int64_t> expected = x.shape;
  int64_t extent = x.shape[dim];
  if (isSlice) {
    int64_t offset = call.intAttrs[1], size = call.intAttrs[2];
    if (offset < 0 || size < 0 || offset > extent || size > extent - offset)
      return Status::error("slice [" + std::to_string(offset) + ", +" +
                           std::to_string(size) + ") of dimension " +
                           std::to_string(dim) + " is outside " +
                           describe("input", x));
    expected[dim] = size;
  } else {
    int64_t repeats = call.intAttrs[1];
    if (repeats < 1)
      return Status::error("repeats (int_attrs[1]) is " +
                           std::to_string(repeats) + ", expected >= 1");
    if (__builtin_mul_overflow(extent, repeats, &expected[dim]))
      return Status::error("repeating " + describe("input", x) + " " +
                           std::to_string(repeats) + " times overflows");
  }
  return shape(out(0), "result", expected);
}

Status KernelDecoder::cast() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  call.count = in(0).elements;
  return shape(out(0), "result", in(0).shape);
}

/// int_attrs[0] as a dimension of t, whose rank is 1..kMaxRank.
Status KernelDecoder::dimAttr(const TensorRef &t, const std::string &role,
                              int64_t &dim) {
  if (Status s = rankAtLeast(t, role, 1); !s)
    return s;
  if (Status s = rankAtMost(t, role, kMaxRank); !s)
    return s;
  dim = call.intAttrs[0];
  if (dim < 0 || dim >= static_cast<int64_t>(t.shape.size()))
    return Status::error("dimension " + std::to_string(dim) +
                         " (int_attrs[0]) is outside " + describe(role, t));
  return Status::ok();
}

/// int_attrs as embedding's: the result is then the gradient of a block of
/// the vocabulary rows.
Status KernelDecoder::embeddingGrad() {
  if (call.op == fb::OpCode::EmbeddingGradAccumulate) {
    // The sum it adds into: f32, the result's very buffer (in place).
    if (Status s = dtype(out(0), outRole(0), fb::DType::F32); !s)
      return s;
    if (Status s = shape(in(2), "table grad", out(0).shape); !s)
      return s;
  }
  return embeddingSizes(out(0), outRole(0), in(0), inRole(0));
}

Status KernelDecoder::linearGrad() {
  if (Status s = attrs(0, 0, 1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (call.op == fb::OpCode::LinearInputGrad)
    return linearSizes(out(0), outRole(0), in(1), "weight", in(0), "dY");
  if (call.op == fb::OpCode::LinearWeightGradAccumulate) {
    // The sum it adds into: f32, the result's very buffer (in place).
    if (Status s = dtype(out(0), outRole(0), fb::DType::F32); !s)
      return s;
    if (Status s = shape(in(2), "weight grad", out(0).shape); !s)
      return s;
  }
  return linearSizes(in(0), "input", out(0), outRole(0), in(1), "dY");
}

Status KernelDecoder::sumTo() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  return suffixCounts(in(0), "input", out(0), "result");
}

Status KernelDecoder::normGradOperands() {
  if (Status s = attrs(0, 1, 0); !s)
    return s;
  if (Status s = finite(0, "epsilon", 0.0, true); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = normSizes(in(1), "input"); !s)
    return s;
  return shape(in(0), "dY", in(1).shape);
}

Status KernelDecoder::normInputGrad() {
  if (Status s = normGradOperands(); !s)
    return s;
  if (Status s = shape(in(2), "weight", {call.cols}); !s)
    return s;
  return shape(out(0), outRole(0), in(1).shape);
}

Status KernelDecoder::normParamGrad() {
  if (Status s = normGradOperands(); !s)
    return s;
  for (size_t j = 0; j < call.results.size(); ++j)
    if (Status s = shape(out(j), outRole(j), {call.cols}); !s)
      return s;
  return Status::ok();
}

Status KernelDecoder::elementwiseGrad() {
  if (Status s = attrs(0, 0, rowFlagMask()); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = shape(in(0), "dY", in(1).shape); !s)
    return s;
  call.count = in(1).elements;
  return shape(out(0), outRole(0), in(1).shape);
}

Status KernelDecoder::dropoutMask() {
  if (Status s = streamAttrs(1, 0); !s)
    return s;
  if (Status s = dropoutRate(0); !s)
    return s;
  call.count = out(0).elements;
  return dtype(out(0), "mask", fb::DType::U8);
}

Status KernelDecoder::applyMask() {
  if (Status s = attrs(0, 1, 0); !s)
    return s;
  if (Status s = dropoutRate(0); !s)
    return s;
  if (Status s = floatDType(in(0), "input"); !s)
    return s;
  if (Status s = dtype(in(1), "mask", fb::DType::U8); !s)
    return s;
  if (Status s = floatDType(out(0), "result"); !s)
    return s;
  if (Status s = shape(in(1), "mask", in(0).shape); !s)
    return s;
  call.count = in(0).elements;
  return shape(out(0), "result", in(0).shape);
}

Status KernelDecoder::softmaxGrad() {
  if (Status s = attrs(0, 0, 1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = softmaxSizes(in(1), inRole(1)); !s)
    return s;
  if (Status s = shape(in(0), "dY", in(1).shape); !s)
    return s;
  return shape(out(0), outRole(0), in(1).shape);
}

Status KernelDecoder::attentionGrad() {
  if (Status s = attentionSizes(1); !s)
    return s;
  if (Status s = shape(in(0), "dO",
                       attentionShape(call.heads, call.seqQ, call.valueDim));
      !s)
    return s;
  for (size_t j = 0; j < 3; ++j)
    if (Status s = shape(out(j), outRole(j), in(j + 1).shape); !s)
      return s;
  return attentionSavedOperands(4);
}

Status KernelDecoder::crossEntropyGrad() {
  if (Status s = crossEntropySizes(); !s)
    return s;
  if (Status s = scalar(in(2), inRole(2), fb::DType::F32); !s)
    return s;
  if (Status s = floatDType(out(0), outRole(0)); !s)
    return s;
  return shape(out(0), outRole(0), in(0).shape);
}

Status KernelDecoder::pad() {
  if (Status s = attrs(2, 0, 0); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  int64_t dim;
  if (Status s = dimAttr(out(0), "result", dim); !s)
    return s;
  const TensorRef &x = in(0);
  std::vector<int64_t> expected = out(0).shape;
  if (x.shape.size() != expected.size())
    return Status::error(describe("input", x) + " and " +
                         describe("result", out(0)) +
                         " should have the same rank");
  int64_t offset = call.intAttrs[1], extent = expected[dim];
  int64_t size = x.shape[dim];
  if (offset < 0 || offset > extent || size > extent - offset)
    return Status::error("input's " + std::to_string(size) + " at offset " +
                         std::to_string(offset) +
                         " (int_attrs[1]) of dimension " + std::to_string(dim) +
                         " lie outside " + describe("result", out(0)));
  expected[dim] = size;
  return shape(x, "input", expected);
}

Status KernelDecoder::concat() {
  if (Status s = attrs(1, 0, 0); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  int64_t dim;
  if (Status s = dimAttr(out(0), "result", dim); !s)
    return s;
  std::vector<int64_t> expected = out(0).shape;
  int64_t total = 0;
  for (size_t j = 0; j < call.operands.size(); ++j) {
    const TensorRef &x = in(j);
    if (Status s = dtype(x, inRole(j), out(0).dtype); !s)
      return s;
    if (x.shape.size() != expected.size())
      return Status::error(describe(inRole(j), x) + " and " +
                           describe("result", out(0)) +
                           " should have the same rank");
    expected[dim] = x.shape[dim];
    if (Status s = shape(x, inRole(j), expected); !s)
      return s;
    total += x.shape[dim];
  }
  if (total != out(0).shape[dim])
    return Status::error("the inputs' dimension " + std::to_string(dim) +
                         " sums to " + std::to_string(total) + ", but " +
                         describe("result", out(0)) + " has " +
                         std::to_string(out(0).shape[dim]));
  return Status::ok();
}

Status KernelDecoder::sumGroups() {
  if (Status s = attrs(2, 0, 0); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  int64_t dim;
  if (Status s = dimAttr(in(0), "input", dim); !s)
    return s;
  int64_t repeats = call.intAttrs[1];
  int64_t extent = in(0).shape[dim];
  if (repeats < 1 || extent % repeats != 0)
    return Status::error(
        "repeats (int_attrs[1]) is " + std::to_string(repeats) +
        ", expected a positive divisor of " + describe("input", in(0)) +
        "'s dimension " + std::to_string(dim));
  std::vector<int64_t> expected = in(0).shape;
  expected[dim] = extent / repeats;
  return shape(out(0), "result", expected);
}

Status KernelDecoder::zeros() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  call.count = out(0).elements;
  return Status::ok();
}

Status KernelDecoder::countTargets() {
  if (Status s = attrs(1, 0, 0); !s)
    return s;
  if (Status s = dtype(in(0), "labels", fb::DType::I64); !s)
    return s;
  call.count = in(0).elements;
  return scalar(out(0), "count", fb::DType::I64);
}

Status KernelDecoder::inverseCount() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  if (Status s = scalar(in(0), "count", fb::DType::I64); !s)
    return s;
  return scalar(out(0), "result", fb::DType::F32);
}

/// adamw_update and sgd_update: every tensor operand f32 of the param's
/// shape, lr (and grad_scale) f32 scalars, step an i64 scalar; the results
/// are the param and state operands themselves (checkAliasing).
Status KernelDecoder::optimizerUpdate() {
  bool adamw = call.op == fb::OpCode::AdamWUpdate;
  bool plain = call.op == fb::OpCode::SgdUpdatePlain;
  if (Status s = attrs(0, adamw ? 4 : plain ? 1 : 2, 0); !s)
    return s;
  if (adamw) {
    for (size_t j = 0; j < 2; ++j)
      if (!(call.floatAttrs[j] >= 0.0 && call.floatAttrs[j] < 1.0))
        return Status::error(std::string(j ? "beta2" : "beta1") +
                             " (float_attrs[" + std::to_string(j) + "]) is " +
                             number(call.floatAttrs[j]) + ", expected [0, 1)");
    if (Status s = finite(2, "eps", 0.0, true); !s)
      return s;
    if (Status s = finite(3, "weight_decay", 0.0, true); !s)
      return s;
  } else if (plain) {
    if (Status s = finite(0, "weight_decay", 0.0, true); !s)
      return s;
  } else {
    if (Status s = finite(0, "momentum", 0.0, true); !s)
      return s;
    if (Status s = finite(1, "weight_decay", 0.0, true); !s)
      return s;
  }
  size_t tensors = adamw ? 4 : plain ? 2 : 3;
  const TensorRef &param = in(0);
  for (size_t j = 0; j < tensors; ++j) {
    if (Status s = dtype(in(j), inRole(j), fb::DType::F32); !s)
      return s;
    if (Status s = shape(in(j), inRole(j), param.shape); !s)
      return s;
  }
  if (Status s = scalar(in(tensors), "lr", fb::DType::F32); !s)
    return s;
  size_t next = tensors + 1;
  if (adamw)
    if (Status s = scalar(in(next++), "step", fb::DType::I64); !s)
      return s;
  if (call.operands.size() > next)
    if (Status s = scalar(in(next), "grad_scale", fb::DType::F32); !s)
      return s;
  call.count = param.elements;
  return Status::ok();
}

Status KernelDecoder::sumSquares() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  for (size_t j = 0; j < call.operands.size(); ++j)
    if (Status s = floatDType(in(j), inRole(j)); !s)
      return s;
  return scalar(out(0), "result", fb::DType::F32);
}

Status KernelDecoder::clipCoefficient() {
  if (Status s = attrs(0, 1, 0); !s)
    return s;
  if (Status s = finite(0, "max_norm", 0.0, true); !s)
    return s;
  if (Status s = scalar(in(0), inRole(0), fb::DType::F32); !s)
    return s;
  if (Status s = scalar(out(0), "norm", fb::DType::F32); !s)
    return s;
  return scalar(out(1), "coefficient", fb::DType::F32);
}

Status KernelDecoder::lrSchedule() {
  if (Status s = attrs(2, 2, 1); !s)
    return s;
  if (Status s = finite(0, "lr", 0.0, true); !s)
    return s;
  if (Status s = finite(1, "min_lr", 0.0, true); !s)
    return s;
  int64_t warmup = call.intAttrs[0], decay = call.intAttrs[1];
  if (warmup < 0 || decay < 0)
    return Status::error("warm-up and decay steps (int_attrs) " +
                         formatShape(call.intAttrs) + " are negative");
  if ((call.flags & 1) && decay <= warmup)
    return Status::error("cosine decay steps " + std::to_string(decay) +
                         " (int_attrs[1]) do not exceed the warm-up steps " +
                         std::to_string(warmup));
  if (Status s = scalar(in(0), "step", fb::DType::I64); !s)
    return s;
  return scalar(out(0), "lr", fb::DType::F32);
}

/// int_attrs[first..] are the group's mesh axes: at least one, each a mesh
/// axis, none twice.
Status KernelDecoder::groupAxes(size_t first) {
  if (call.intAttrs.size() <= first)
    return Status::error("has " + std::to_string(call.intAttrs.size()) +
                         " int_attrs, expected " + std::to_string(first) +
                         " and at least one mesh axis");
  if (!call.floatAttrs.empty())
    return Status::error("has " + std::to_string(call.floatAttrs.size()) +
                         " float_attrs, expected 0");
  uint32_t flagMask = rowFlagMask();
  if (call.flags & ~flagMask)
    return Status::error("flags " + std::to_string(call.flags) +
                         " set bits this opcode does not define (allowed " +
                         std::to_string(flagMask) + ")");
  for (size_t j = first; j < call.intAttrs.size(); ++j) {
    int64_t axis = call.intAttrs[j];
    if (axis < 0 || axis >= static_cast<int64_t>(mesh.sizes.size()))
      return Status::error("int_attrs[" + std::to_string(j) + "] is " +
                           std::to_string(axis) + ", not a mesh axis (the " +
                           "mesh has " + std::to_string(mesh.sizes.size()) +
                           (mesh.sizes.size() == 1 ? " axis)" : " axes)"));
    axes.push_back(static_cast<uint32_t>(axis));
  }
  if (Status s = mesh.checkAxes(axes); !s)
    return s.withContext("group axes");
  call.groupSize = mesh.groupSize(axes);
  return Status::ok();
}

/// A collective's operand and result: the same dtype. The reductions take
/// f32, bf16 or f16 (all_reduce also sums i64: the target count); those
/// that only move data (all_gather, shard_slice, all_to_all) take any dtype
/// (token ids and labels split over data-parallel ranks are i64).
Status KernelDecoder::collectiveDType() {
  fb::DType dt = in(0).dtype;
  bool reduces =
      call.op == fb::OpCode::AllReduce || call.op == fb::OpCode::ReduceScatter;
  bool sumI64 = call.op == fb::OpCode::AllReduce && !(call.flags & 1) &&
                dt == fb::DType::I64;
  if (reduces && !isFloatDType(dt) && !sumI64)
    return Status::error(
        std::string("input is ") + executableDTypeName(dt) + ", expected " +
        (call.op == fb::OpCode::AllReduce
             ? (call.flags & 1 ? "f32, bf16 or f16 (a max)"
                               : "f32, bf16, f16 or i64 (a sum)")
             : "f32, bf16 or f16"));
  return dtype(out(0), "result", dt);
}

Status KernelDecoder::allReduce() {
  if (Status s = groupAxes(0); !s)
    return s;
  if (Status s = collectiveDType(); !s)
    return s;
  call.count = in(0).elements;
  return shape(out(0), "result", in(0).shape);
}

/// all_gather, reduce_scatter, shard_slice and shard_pad: [dim, axes...];
/// the result is the input with dimension dim multiplied (all_gather,
/// shard_pad) or divided by the group size.
Status KernelDecoder::alongDim() {
  if (Status s = groupAxes(1); !s)
    return s;
  if (Status s = collectiveDType(); !s)
    return s;
  int64_t dim;
  if (Status s = dimAttr(in(0), "input", dim); !s)
    return s;
  int64_t g = call.groupSize, extent = in(0).shape[dim];
  std::vector<int64_t> expected = in(0).shape;
  std::string g_ = std::to_string(g), d_ = std::to_string(dim);
  bool grows =
      call.op == fb::OpCode::AllGather || call.op == fb::OpCode::ShardPad;
  if (grows) {
    if (__builtin_mul_overflow(extent, g, &expected[dim]))
      return Status::error("gathering " + describe("input", in(0)) + " " + g_ +
                           " times overflows");
  } else {
    if (extent % g != 0)
      return Status::error("input dim " + d_ + " is " + std::to_string(extent) +
                           ", not divisible by the group size " + g_);
    expected[dim] = extent / g;
  }
  if (out(0).shape.size() != expected.size())
    return Status::error(describe("result", out(0)) + " should be " +
                         formatShape(expected));
  for (size_t d = 0; d < expected.size(); ++d)
    if (out(0).shape[d] != expected[d])
      return Status::error(
          "result dim " + std::to_string(d) + " is " +
          std::to_string(out(0).shape[d]) + ", expected " +
          (static_cast<int64_t>(d) != dim
               ? std::to_string(expected[d]) + " (the input's)"
               : std::to_string(extent) + (grows ? " x " : " / ") + g_ + " = " +
                     std::to_string(expected[d])) +
          " (" + describe("input", in(0)) + ", group size " + g_ + ")");
  return Status::ok();
}

/// all_to_all: [split_dim, concat_dim, axes...]; split_dim is divided by the
/// group size, then concat_dim multiplied by it.
Status KernelDecoder::allToAll() {
  if (Status s = groupAxes(2); !s)
    return s;
  if (Status s = collectiveDType(); !s)
    return s;
  int64_t splitDim, concatDim;
  if (Status s = dimAttr(in(0), "input", splitDim); !s)
    return s;
  concatDim = call.intAttrs[1];
  if (concatDim < 0 || concatDim >= static_cast<int64_t>(in(0).shape.size()))
    return Status::error("concat dimension " + std::to_string(concatDim) +
                         " (int_attrs[1]) is outside " +
                         describe("input", in(0)));
  int64_t g = call.groupSize;
  std::vector<int64_t> expected = in(0).shape;
  if (expected[splitDim] % g != 0)
    return Status::error("input dim " + std::to_string(splitDim) + " is " +
                         std::to_string(expected[splitDim]) +
                         ", not divisible by the group size " +
                         std::to_string(g));
  expected[splitDim] /= g;
  if (__builtin_mul_overflow(expected[concatDim], g, &expected[concatDim]))
    return Status::error("concatenating " + describe("input", in(0)) +
                         " overflows");
  if (out(0).shape != expected)
    return Status::error(
        describe("result", out(0)) + " should be " + formatShape(expected) +
        " (" + describe("input", in(0)) + " split along dim " +
        std::to_string(splitDim) + ", concatenated along " +
        std::to_string(concatDim) + ", group size " + std::to_string(g) + ")");
  return Status::ok();
}

/// send and recv: [peer, axes...], the peer a position in the group over
/// the axes; any dtype and shape (they move bytes). That the axes are the
/// "pp" axis alone and the peer another stage is the program's check
/// (checkTransfers), which knows the kernel's stage.
Status KernelDecoder::transfer() {
  if (Status s = groupAxes(1); !s)
    return s;
  int64_t peer = call.intAttrs[0];
  if (peer < 0 || peer >= call.groupSize)
    return Status::error("peer " + std::to_string(peer) +
                         " (int_attrs[0]) is outside the group of " +
                         std::to_string(call.groupSize) + " ranks, [0, " +
                         std::to_string(call.groupSize) + ")");
  // send and send_start move their operand, recv and recv_start fill their
  // result.
  const TensorRef &t = call.operands.empty() ? out(0) : in(0);
  call.count = t.elements;
  return Status::ok();
}

Status KernelDecoder::transferWait() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  call.count = in(0).elements;
  return Status::ok();
}

/// The kernel's splits: only on the kernels drawing a dropout stream, one
/// per dimension of the first result. Fills globalShape.
Status KernelDecoder::dropoutSplits() {
  if (call.splits.empty())
    return Status::ok();
  if (kernelInfo(call.op)->kind != KernelKind::Draws)
    return Status::error("has splits, which only dropout, dropout_mask "
                         "and the attention kernels take");
  const TensorRef &first = out(0);
  if (Status s = rankAtMost(first, outRole(0), kMaxRank); !s)
    return s;
  if (Status s = checkSplits(mesh, call.splits, first.shape.size()); !s)
    return s.withContext("splits of " + describe(outRole(0), first));
  // The causal mask compares local query and key positions.
  bool attention = call.attentionForward() || call.attentionBackward();
  if (attention && (call.flags & 1) &&
      !call.splits[call.attentionQueryDim()].empty())
    return Status::error("causal attention with its query dimension split "
                         "is not supported (splits of " +
                         describe(outRole(0), first) + ")");
  if (Status s = checkGlobalShape(mesh, first.shape, call.splits); !s)
    return s.withContext("splits of " + describe(outRole(0), first));
  call.globalShape = globalShape(mesh, first.shape, call.splits);
  call.globalOffset.assign(first.shape.size(), 0);
  return Status::ok();
}

Status KernelDecoder::decode() {
  // Each opcode's check and size rule, as its Kernels.def row names it.
  switch (call.op) {
#define TPCX_KERNEL(Name, Value, Mnemonic, MinOperands, MaxOperands, Results,   \
                    MinInts, MaxInts, Floats, FlagMask, Aliasing, OperandRoles, \
                    ResultRoles, Decoder, ...)                                       \
  case fb::OpCode::Name:                                                       \
    return Decoder();
#include "tpcrt/Kernels.def"
  }
  return Status::error("unknown opcode");
}

/// A result may not share bytes with an operand or another result, except
/// the very same bytes as an operand of an in-place elementwise kernel; the
/// results of an in-place update are exactly its param and state operands.
Status tpcrt::checkAliasing(const KernelCall &call, uint32_t microbatch,
                            uint32_t slot) {
  // Pooled buffers at the run's slots.
  auto at = [&](const TensorRef &t) {
    if (t.pool < 0)
      return t;
    TensorRef moved;
    moved.buffer = t.buffer;
    moved.offset = t.offsetAt(microbatch, slot);
    moved.bytes = t.bytes;
    return moved;
  };
  for (size_t r = 0; r < call.results.size(); ++r) {
    const TensorRef result = at(call.results[r]);
    int updated = inPlaceOperand(call.op, r);
    if (updated >= 0 && result.buffer != call.operands[updated].buffer)
      return Status::error(resultRole(call.op, r) + " is buffer " +
                           std::to_string(result.buffer) + " but " +
                           operandRole(call.op, updated) + " is buffer " +
                           std::to_string(call.operands[updated].buffer) +
                           ": this kernel updates it in place");
    for (size_t j = 0; j < call.operands.size(); ++j) {
      const TensorRef operand = at(call.operands[j]);
      if (static_cast<int>(j) == updated || !overlaps(result, operand))
        continue;
      bool same =
          result.offset == operand.offset && result.bytes == operand.bytes;
      if (same && allowsInPlace(call.op))
        continue;
      return Status::error(
          resultRole(call.op, r) + " (buffer " +
          std::to_string(result.buffer) + ", bytes " + rangeText(result) +
          ") overlaps " + operandRole(call.op, j) + " (buffer " +
          std::to_string(operand.buffer) + ", bytes " + rangeText(operand) +
          ")" + (same ? ": this kernel does not run in place" : ""));
    }
    for (size_t q = 0; q < r; ++q)
      if (overlaps(result, at(call.results[q])))
        return Status::error(resultRole(call.op, r) + " overlaps " +
                             resultRole(call.op, q));
  }
  return Status::ok();
}

/// "kernel 3 (linear)"; checkKernels has refused unknown opcodes.
std::string tpcrt::kernelText(const KernelCall &call) {
  return "kernel " + std::to_string(call.index) + " (" +
         kernelInfo(call.op)->name + ")";
}

std::string tpcrt::rangeText(const TensorRef &t) {
  return "[" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) + ")";
}

Status tpcrt::decodeKernel(KernelCall &call, const Mesh &mesh,
                           std::vector<uint32_t> *axes) {
  KernelDecoder decoder(call, mesh);
  Status s = decoder.decode();
  if (s)
    s = decoder.dropoutSplits();
  if (s)
    decoder.streamElements();
  if (s && axes)
    *axes = std::move(decoder.axes);
  return s;
}

/// N of a kernel drawing a dropout stream: the global elements it draws
/// (the attention kernels: b, heads, s_q of their first result, global,
/// times s_k), INT64_MAX where that does not fit.
void KernelDecoder::streamElements() {
  call.streamElements = 0;
  if (kernelInfo(call.op)->kind != KernelKind::Draws)
    return;
  const std::vector<int64_t> &global =
      call.splits.empty() ? out(0).shape : call.globalShape;
  std::vector<int64_t> drawn = global;
  // The probabilities [b, heads, s_q, s_k].
  if (call.attentionForward() || call.attentionBackward())
    drawn = {global[0], global[call.attentionHeadsDim()],
             global[call.attentionQueryDim()], call.seqK};
  int64_t n = 1;
  for (int64_t d : drawn)
    if (__builtin_mul_overflow(n, d, &n)) {
      n = INT64_MAX;
      break;
    }
  call.streamElements = n;
}
