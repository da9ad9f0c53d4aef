//===- Program.cpp - decoding and checking kernel calls -------------------===//
//
// One function per opcode checks the attribute counts, dtypes and shapes the
// kernel's implementation relies on, and fills in its sizes. The buffer
// lifetimes then follow from the kernel order; they give the measured peak
// and check the plan's offsets: two buffers live at the same time must not
// share a byte of the arena.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Program.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

using namespace tpcrt;

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string describe(const char *role, const TensorRef &t) {
  return std::string(role) + " " + formatShape(t.shape);
}

/// Roles of the operands and results of each opcode, for messages.
struct Roles {
  const char *operands[3];
  const char *results[2];
};

Roles rolesOf(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::Embedding:
    return {{"table", "ids", nullptr}, {"result", nullptr}};
  case fb::OpCode::Linear:
    return {{"input", "weight", "bias"}, {"result", nullptr}};
  case fb::OpCode::LayerNorm:
  case fb::OpCode::RmsNorm:
    return {{"input", "weight", "bias"}, {"result", nullptr}};
  case fb::OpCode::BatchMatmul:
  case fb::OpCode::Add:
  case fb::OpCode::Mul:
    return {{"lhs", "rhs", nullptr}, {"result", nullptr}};
  case fb::OpCode::Attention:
    return {{"query", "key", "value"}, {"result", nullptr}};
  case fb::OpCode::CrossEntropy:
    return {{"logits", "labels", nullptr}, {"loss_sum", "count"}};
  case fb::OpCode::LossMean:
    return {{"sum", "count", nullptr}, {"result", nullptr}};
  default:
    return {{"input", nullptr, nullptr}, {"result", nullptr}};
  }
}

/// Opcodes whose kernels may write their result over an operand (the very
/// same bytes): elementwise ones that read element i before writing it.
bool allowsInPlace(fb::OpCode op) {
  switch (op) {
  case fb::OpCode::Gelu:
  case fb::OpCode::Silu:
  case fb::OpCode::Add:
  case fb::OpCode::Mul:
  case fb::OpCode::Dropout:
  case fb::OpCode::Softmax:
  case fb::OpCode::Rotary:
  case fb::OpCode::Copy:
    return true;
  default:
    return false;
  }
}

bool overlaps(const TensorRef &a, const TensorRef &b) {
  return a.bytes && b.bytes && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

std::string rangeText(const TensorRef &t) {
  return "[" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
         ")";
}

class KernelDecoder {
public:
  KernelDecoder(KernelCall &call) : call(call), roles(rolesOf(call.op)) {}

  Status decode();

private:
  const TensorRef &in(size_t j) const { return call.operands[j]; }
  const TensorRef &out(size_t j) const { return call.results[j]; }
  const char *inRole(size_t j) const { return roles.operands[j]; }
  const char *outRole(size_t j) const { return roles.results[j]; }

  Status attrs(size_t ints, size_t floats, uint32_t flagMask);
  Status floatDType(const TensorRef &t, const char *role);
  Status floatOperands();
  Status dtype(const TensorRef &t, const char *role, fb::DType expected);
  Status rankAtLeast(const TensorRef &t, const char *role, size_t rank);
  Status rankAtMost(const TensorRef &t, const char *role, size_t rank);
  Status shape(const TensorRef &t, const char *role,
               const std::vector<int64_t> &expected);
  Status product(const TensorRef &t, const char *role, size_t begin,
                 size_t end, int64_t &value);
  Status finite(size_t index, const char *name, double lowest,
                bool lowestIncluded);
  Status dropoutRate(size_t index);

  Status embedding();
  Status linear();
  Status batchMatmul();
  Status norm();
  Status elementwise();
  Status broadcast();
  Status softmax();
  Status attention();
  Status rotary();
  Status crossEntropy();
  Status lossMean();
  Status copy();
  Status transpose();
  Status sliceOrRepeat();
  Status cast();

  KernelCall &call;
  Roles roles;
};

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

Status KernelDecoder::floatDType(const TensorRef &t, const char *role) {
  if (isFloatDType(t.dtype))
    return Status::ok();
  return Status::error(std::string(role) + " is " +
                       executableDTypeName(t.dtype) +
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

Status KernelDecoder::dtype(const TensorRef &t, const char *role,
                            fb::DType expected) {
  if (t.dtype == expected)
    return Status::ok();
  return Status::error(std::string(role) + " is " +
                       executableDTypeName(t.dtype) + ", expected " +
                       executableDTypeName(expected));
}

Status KernelDecoder::rankAtLeast(const TensorRef &t, const char *role,
                                  size_t rank) {
  if (t.shape.size() >= rank)
    return Status::ok();
  return Status::error(describe(role, t) + " has rank " +
                       std::to_string(t.shape.size()) + ", expected at least " +
                       std::to_string(rank));
}

Status KernelDecoder::rankAtMost(const TensorRef &t, const char *role,
                                 size_t rank) {
  if (t.shape.size() <= rank)
    return Status::ok();
  return Status::error(describe(role, t) + " has rank " +
                       std::to_string(t.shape.size()) + ", at most " +
                       std::to_string(rank) + " is supported");
}

Status KernelDecoder::shape(const TensorRef &t, const char *role,
                            const std::vector<int64_t> &expected) {
  if (t.shape == expected)
    return Status::ok();
  return Status::error(describe(role, t) + " should be " +
                       formatShape(expected));
}

/// The product of dimensions [begin, end) of t; only a shape with a zero
/// elsewhere can make it overflow.
Status KernelDecoder::product(const TensorRef &t, const char *role,
                              size_t begin, size_t end, int64_t &value) {
  std::vector<int64_t> part(t.shape.begin() + begin, t.shape.begin() + end);
  if (numElementsOf(part, value))
    return Status::ok();
  return Status::error(describe(role, t) + ": dimensions " +
                       formatShape(part) + " have too many elements");
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
  if (rate >= 0.0 && rate < 1.0)
    return Status::ok();
  return Status::error("dropout rate (float_attrs[" + std::to_string(index) +
                       "]) is " + number(rate) + ", expected [0, 1)");
}

Status KernelDecoder::embedding() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  if (Status s = floatDType(in(0), "table"); !s)
    return s;
  if (Status s = dtype(in(1), "ids", fb::DType::I64); !s)
    return s;
  if (Status s = floatDType(out(0), "result"); !s)
    return s;
  if (in(0).shape.size() != 2)
    return Status::error(describe(inRole(0), in(0)) +
                         " should be [vocab, hidden]");
  call.k = in(0).shape[0];
  call.n = in(0).shape[1];
  call.m = in(1).elements;
  std::vector<int64_t> expected = in(1).shape;
  expected.push_back(call.n);
  return shape(out(0), outRole(0), expected);
}

Status KernelDecoder::linear() {
  if (Status s = attrs(0, 0, 1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  const TensorRef &x = in(0), &w = in(1);
  if (Status s = rankAtLeast(x, "input", 1); !s)
    return s;
  if (Status s = rankAtLeast(w, "weight", 1); !s)
    return s;
  bool outIn = call.flags & 1;
  call.k = x.shape.back();
  int64_t contracted = outIn ? w.shape.back() : w.shape.front();
  if (contracted != call.k)
    return Status::error(
        describe("weight", w) + " (" + (outIn ? "out_in" : "in_out") +
        ") contracts " + std::to_string(contracted) + " but " +
        describe("input", x) + " has " + std::to_string(call.k));
  if (Status s = product(x, "input", 0, x.shape.size() - 1, call.m); !s)
    return s;
  if (Status s = outIn ? product(w, "weight", 0, w.shape.size() - 1, call.n)
                       : product(w, "weight", 1, w.shape.size(), call.n);
      !s)
    return s;
  int64_t expected;
  if (__builtin_mul_overflow(call.m, call.n, &expected) ||
      out(0).elements != expected)
    return Status::error(describe("result", out(0)) + " has " +
                         std::to_string(out(0).elements) + " elements, " +
                         "expected m " + std::to_string(call.m) + " x n " +
                         std::to_string(call.n));
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

Status KernelDecoder::norm() {
  if (Status s = attrs(0, 1, 0); !s)
    return s;
  if (Status s = finite(0, "epsilon", 0.0, true); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  if (Status s = rankAtLeast(in(0), "input", 1); !s)
    return s;
  call.cols = in(0).shape.back();
  if (Status s = product(in(0), "input", 0, in(0).shape.size() - 1, call.rows);
      !s)
    return s;
  for (size_t j = 1; j < call.operands.size(); ++j)
    if (Status s = shape(in(j), inRole(j), {call.cols}); !s)
      return s;
  return shape(out(0), "result", in(0).shape);
}

Status KernelDecoder::elementwise() {
  bool isDropout = call.op == fb::OpCode::Dropout;
  uint32_t flags = call.op == fb::OpCode::Gelu ? 1 : 0;
  if (Status s = attrs(isDropout, isDropout, flags); !s)
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
  if (Status s = floatOperands(); !s)
    return s;
  const std::vector<int64_t> &lhs = in(0).shape, &rhs = in(1).shape;
  if (rhs.size() > lhs.size() ||
      !std::equal(rhs.begin(), rhs.end(), lhs.end() - rhs.size()))
    return Status::error(describe("rhs", in(1)) + " is not a suffix of " +
                         describe("lhs", in(0)));
  call.count = in(0).elements;
  call.rhsCount = in(1).elements;
  if (call.rhsCount == 0 && call.count != 0)
    return Status::error(describe("rhs", in(1)) + " is empty but " +
                         describe("lhs", in(0)) + " is not");
  return shape(out(0), "result", lhs);
}

Status KernelDecoder::softmax() {
  if (Status s = attrs(0, 0, 1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  const TensorRef &x = in(0);
  bool causal = call.flags & 1;
  if (Status s = rankAtLeast(x, "input", causal ? 2 : 1); !s)
    return s;
  size_t rank = x.shape.size();
  call.seqK = x.shape[rank - 1];
  call.seqQ = rank >= 2 ? x.shape[rank - 2] : 1;
  if (Status s = product(x, "input", 0, rank >= 2 ? rank - 2 : 0, call.outer);
      !s)
    return s;
  if (causal && call.seqK < call.seqQ)
    return Status::error("causal " + describe("input", x) + " has " +
                         std::to_string(call.seqQ) + " queries but only " +
                         std::to_string(call.seqK) + " keys");
  return shape(out(0), "result", x.shape);
}

Status KernelDecoder::attention() {
  if (Status s = attrs(1, 2, 1); !s)
    return s;
  if (Status s = finite(0, "scale", -INFINITY, false); !s)
    return s;
  if (Status s = dropoutRate(1); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  for (size_t j = 0; j < 3; ++j)
    if (in(j).shape.size() != 4)
      return Status::error(describe(inRole(j), in(j)) + " should have rank 4");
  const std::vector<int64_t> &q = in(0).shape, &k = in(1).shape,
                             &v = in(2).shape;
  call.batch = q[0];
  call.heads = q[1];
  call.seqQ = q[2];
  call.headDim = q[3];
  call.kvHeads = k[1];
  call.seqK = k[2];
  call.valueDim = v[3];
  if (Status s = shape(in(1), "key",
                       {call.batch, call.kvHeads, call.seqK, call.headDim});
      !s)
    return s;
  if (Status s = shape(in(2), "value",
                       {call.batch, call.kvHeads, call.seqK, call.valueDim});
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
  return shape(out(0), "result",
               {call.batch, call.heads, call.seqQ, call.valueDim});
}

Status KernelDecoder::rotary() {
  if (Status s = attrs(1, 1, 0); !s)
    return s;
  if (call.intAttrs[0] < 0)
    return Status::error("position offset (int_attrs[0]) is " +
                         std::to_string(call.intAttrs[0]) +
                         ", expected >= 0");
  if (Status s = finite(0, "theta", 0.0, false); !s)
    return s;
  if (Status s = floatOperands(); !s)
    return s;
  const TensorRef &x = in(0);
  if (Status s = rankAtLeast(x, "input", 2); !s)
    return s;
  size_t rank = x.shape.size();
  call.headDim = x.shape[rank - 1];
  call.seqQ = x.shape[rank - 2];
  if (call.headDim % 2 != 0)
    return Status::error(describe("input", x) + " has an odd head dimension " +
                         std::to_string(call.headDim));
  if (Status s = product(x, "input", 0, rank - 2, call.outer); !s)
    return s;
  return shape(out(0), "result", x.shape);
}

Status KernelDecoder::crossEntropy() {
  if (Status s = attrs(1, 0, 0); !s)
    return s;
  const TensorRef &logits = in(0);
  if (Status s = floatDType(logits, "logits"); !s)
    return s;
  if (Status s = dtype(in(1), "labels", fb::DType::I64); !s)
    return s;
  if (Status s = dtype(out(0), "loss_sum", fb::DType::F32); !s)
    return s;
  if (Status s = dtype(out(1), "count", fb::DType::I64); !s)
    return s;
  if (Status s = rankAtLeast(logits, "logits", 1); !s)
    return s;
  call.cols = logits.shape.back();
  call.rows = in(1).elements;
  std::vector<int64_t> positions(logits.shape.begin(), logits.shape.end() - 1);
  if (Status s = shape(in(1), "labels", positions); !s)
    return s;
  if (Status s = shape(out(0), "loss_sum", {}); !s)
    return s;
  return shape(out(1), "count", {});
}

Status KernelDecoder::lossMean() {
  if (Status s = attrs(0, 0, 0); !s)
    return s;
  const TensorRef *tensors[] = {&in(0), &in(1), &out(0)};
  const char *names[] = {"sum", "count", "result"};
  fb::DType dtypes[] = {fb::DType::F32, fb::DType::I64, fb::DType::F32};
  for (size_t j = 0; j < 3; ++j) {
    if (Status s = dtype(*tensors[j], names[j], dtypes[j]); !s)
      return s;
    if (Status s = shape(*tensors[j], names[j], {}); !s)
      return s;
  }
  return Status::ok();
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
  if (Status s = rankAtMost(x, "input", cpu::kMaxRank); !s)
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
  if (Status s = floatOperands(); !s)
    return s;
  const TensorRef &x = in(0);
  if (Status s = rankAtLeast(x, "input", 1); !s)
    return s;
  if (Status s = rankAtMost(x, "input", cpu::kMaxRank); !s)
    return s;
  int64_t dim = call.intAttrs[0];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (dim < 0 || dim >= rank)
    return Status::error("dimension " + std::to_string(dim) +
                         " (int_attrs[0]) is outside " + describe("input", x));
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

Status KernelDecoder::decode() {
  switch (call.op) {
  case fb::OpCode::Embedding:
    return embedding();
  case fb::OpCode::Linear:
    return linear();
  case fb::OpCode::BatchMatmul:
    return batchMatmul();
  case fb::OpCode::LayerNorm:
  case fb::OpCode::RmsNorm:
    return norm();
  case fb::OpCode::Gelu:
  case fb::OpCode::Silu:
  case fb::OpCode::Dropout:
    return elementwise();
  case fb::OpCode::Add:
  case fb::OpCode::Mul:
    return broadcast();
  case fb::OpCode::Softmax:
    return softmax();
  case fb::OpCode::Attention:
    return attention();
  case fb::OpCode::Rotary:
    return rotary();
  case fb::OpCode::CrossEntropy:
    return crossEntropy();
  case fb::OpCode::LossMean:
    return lossMean();
  case fb::OpCode::Copy:
    return copy();
  case fb::OpCode::Transpose:
    return transpose();
  case fb::OpCode::Slice:
  case fb::OpCode::Repeat:
    return sliceOrRepeat();
  case fb::OpCode::Cast:
    return cast();
  }
  return Status::error("unknown opcode");
}

/// A result may not share bytes with an operand or another result, except
/// the very same bytes as an operand of an in-place elementwise kernel.
Status checkAliasing(const KernelCall &call) {
  Roles roles = rolesOf(call.op);
  for (size_t r = 0; r < call.results.size(); ++r) {
    const TensorRef &result = call.results[r];
    for (size_t j = 0; j < call.operands.size(); ++j) {
      const TensorRef &operand = call.operands[j];
      if (!overlaps(result, operand))
        continue;
      bool same = result.offset == operand.offset &&
                  result.bytes == operand.bytes;
      if (same && allowsInPlace(call.op))
        continue;
      return Status::error(
          std::string(roles.results[r]) + " (buffer " +
          std::to_string(result.buffer) + ", bytes " + rangeText(result) +
          ") overlaps " + roles.operands[j] + " (buffer " +
          std::to_string(operand.buffer) + ", bytes " + rangeText(operand) +
          ")" + (same ? ": this kernel does not run in place" : ""));
    }
    for (size_t q = 0; q < r; ++q)
      if (overlaps(result, call.results[q]))
        return Status::error(std::string(roles.results[r]) + " overlaps " +
                             roles.results[q]);
  }
  return Status::ok();
}

std::string kernelText(const KernelCall &call) {
  return "kernel " + std::to_string(call.index) + " (" +
         opCodeName(call.op) + ")";
}

/// Derives the lifetimes from the kernel order and checks that nothing is
/// read before it is written and that params and inputs are only read.
Status computeLifetimes(Program &program) {
  size_t numBuffers = program.buffers.size();
  auto numKernels = static_cast<int64_t>(program.calls.size());
  enum class Role { None, Param, Input };
  std::vector<Role> roles(numBuffers, Role::None);
  std::vector<std::string> owners(numBuffers);
  program.lifetimes.assign(numBuffers, Lifetime{INT64_MAX, -1});

  auto claim = [&](uint32_t buffer, Role role, const std::string &owner) {
    if (roles[buffer] != Role::None)
      return Status::error(owner + " uses buffer " + std::to_string(buffer) +
                           ", which is already " + owners[buffer]);
    roles[buffer] = role;
    owners[buffer] = owner;
    return Status::ok();
  };
  for (size_t i = 0; i < program.params.size(); ++i) {
    const ParamRef &param = program.params[i];
    if (Status s = claim(param.buffer, Role::Param,
                         "param " + std::to_string(i) + " ('" + param.hfName +
                             "')");
        !s)
      return s;
    program.lifetimes[param.buffer] = {Lifetime::kLoad, numKernels};
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const BindingRef &input = program.inputs[i];
    if (Status s = claim(input.buffer, Role::Input,
                         "input " + std::to_string(i) + " ('" + input.name +
                             "')");
        !s)
      return s;
    program.lifetimes[input.buffer] = {Lifetime::kLoad, numKernels};
  }

  for (const KernelCall &call : program.calls) {
    auto t = static_cast<int64_t>(call.index);
    for (size_t j = 0; j < call.operands.size(); ++j) {
      Lifetime &life = program.lifetimes[call.operands[j].buffer];
      if (life.first >= t)
        return Status::error(
            kernelText(call) + ": " + rolesOf(call.op).operands[j] +
            " (buffer " + std::to_string(call.operands[j].buffer) +
            ") is read before any kernel writes it");
      life.last = std::max(life.last, t);
    }
    for (size_t j = 0; j < call.results.size(); ++j) {
      uint32_t buffer = call.results[j].buffer;
      if (roles[buffer] != Role::None)
        return Status::error(kernelText(call) + ": " +
                             rolesOf(call.op).results[j] + " is buffer " +
                             std::to_string(buffer) + ", " + owners[buffer] +
                             ", which kernels only read");
      Lifetime &life = program.lifetimes[buffer];
      life.first = std::min(life.first, t);
      life.last = std::max(life.last, t);
    }
  }
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    Lifetime &life = program.lifetimes[program.outputs[i].buffer];
    if (life.first == INT64_MAX)
      return Status::error("output " + std::to_string(i) + " ('" +
                           program.outputs[i].name +
                           "') is never written by a kernel");
    life.last = numKernels;
  }
  for (Lifetime &life : program.lifetimes)
    if (life.first == INT64_MAX)
      life = Lifetime{0, -1};
  return Status::ok();
}

/// Sweeps the kernels in order with the set of live buffers sorted by
/// offset: a buffer becoming live must not overlap its neighbours there. A
/// buffer read for the last time by kernel t leaves the set before kernel
/// t's results enter it (checkAliasing already decided which results may
/// reuse an operand's bytes). The same sweep measures the peak.
Status checkPlanAndMeasurePeak(Program &program) {
  std::vector<std::vector<uint32_t>> starts(program.calls.size() + 2),
      ends(program.calls.size() + 2);
  for (uint32_t b = 0; b < program.buffers.size(); ++b) {
    const Lifetime &life = program.lifetimes[b];
    if (!life.live())
      continue;
    starts[life.first + 1].push_back(b);
    ends[life.last + 1].push_back(b);
  }
  std::map<uint64_t, uint32_t> live; // offset -> buffer, non-empty only
  auto release = [&](uint32_t b) {
    auto it = live.find(program.buffers[b].offset);
    if (it != live.end() && it->second == b)
      live.erase(it);
  };
  uint64_t liveBytes = 0, peak = 0;
  auto when = [&](size_t slot) {
    return slot == 0 ? std::string("at load")
                     : "at " + kernelText(program.calls[slot - 1]);
  };
  for (size_t slot = 0; slot < starts.size(); ++slot) {
    for (uint32_t b : ends[slot])
      if (program.lifetimes[b].first + 1 < static_cast<int64_t>(slot))
        release(b);
    for (uint32_t b : starts[slot]) {
      const TensorRef &t = program.buffers[b];
      liveBytes += t.bytes;
      if (t.bytes == 0)
        continue;
      auto next = live.lower_bound(t.offset);
      const TensorRef *clash = nullptr;
      if (next != live.end() && next->first < t.offset + t.bytes)
        clash = &program.buffers[next->second];
      else if (next != live.begin()) {
        const TensorRef &prev = program.buffers[std::prev(next)->second];
        if (prev.offset + prev.bytes > t.offset)
          clash = &prev;
      }
      if (clash)
        return Status::error(
            "buffers " + std::to_string(clash->buffer) + " (bytes " +
            rangeText(*clash) + ") and " + std::to_string(b) + " (bytes " +
            rangeText(t) + ") share arena bytes while both are live " +
            when(slot));
      live.emplace(t.offset, b);
    }
    peak = std::max(peak, liveBytes);
    for (uint32_t b : ends[slot]) {
      liveBytes -= program.buffers[b].bytes;
      if (program.lifetimes[b].first + 1 == static_cast<int64_t>(slot))
        release(b);
    }
  }
  program.peakBytes = peak;
  return Status::ok();
}

} // namespace

bool tpcrt::isFloatDType(fb::DType dtype) {
  return dtype == fb::DType::F32 || dtype == fb::DType::BF16 ||
         dtype == fb::DType::F16;
}

Status tpcrt::decodeProgram(const fb::Executable &exe, Program &out) {
  Program program;
  program.arenaBytes = exe.arena_bytes();
  program.seed = exe.seed();
  program.plannedPeakBytes = exe.planned_peak_bytes();
  uint32_t numBuffers = exe.buffers() ? exe.buffers()->size() : 0;
  program.buffers.reserve(numBuffers);
  for (uint32_t b = 0; b < numBuffers; ++b) {
    const fb::Buffer *buffer = exe.buffers()->Get(b);
    TensorRef t;
    t.buffer = b;
    t.offset = buffer->offset();
    t.bytes = buffer->size();
    t.dtype = buffer->dtype();
    if (buffer->shape())
      t.shape.assign(buffer->shape()->begin(), buffer->shape()->end());
    if (!numElementsOf(t.shape, t.elements))
      return Status::error("buffer " + std::to_string(b) +
                           ": shape has too many elements");
    program.buffers.push_back(std::move(t));
  }

  if (exe.params())
    for (const fb::Param *param : *exe.params()) {
      ParamRef ref;
      ref.hfName = param->hf_name()->str();
      if (param->hf_shape())
        ref.hfShape.assign(param->hf_shape()->begin(),
                           param->hf_shape()->end());
      if (param->view_shape())
        ref.viewShape.assign(param->view_shape()->begin(),
                             param->view_shape()->end());
      ref.buffer = param->buffer();
      ref.init = param->init();
      ref.initStd = param->init_std();
      program.params.push_back(std::move(ref));
    }
  auto bindings = [](const flatbuffers::Vector<
                         flatbuffers::Offset<fb::Binding>> *list,
                     std::vector<BindingRef> &out) {
    if (list)
      for (const fb::Binding *binding : *list)
        out.push_back(
            {binding->name()->str(), binding->buffer(), binding->value_bound()});
  };
  bindings(exe.inputs(), program.inputs);
  bindings(exe.outputs(), program.outputs);

  uint32_t numKernels = exe.kernels() ? exe.kernels()->size() : 0;
  program.calls.reserve(numKernels);
  for (uint32_t i = 0; i < numKernels; ++i) {
    const fb::Kernel *kernel = exe.kernels()->Get(i);
    KernelCall call;
    call.index = i;
    call.op = kernel->op();
    if (kernel->operands())
      for (uint32_t id : *kernel->operands())
        call.operands.push_back(program.buffers[id]);
    if (kernel->results())
      for (uint32_t id : *kernel->results())
        call.results.push_back(program.buffers[id]);
    if (kernel->int_attrs())
      call.intAttrs.assign(kernel->int_attrs()->begin(),
                           kernel->int_attrs()->end());
    if (kernel->float_attrs())
      call.floatAttrs.assign(kernel->float_attrs()->begin(),
                             kernel->float_attrs()->end());
    call.flags = kernel->flags();
    Status s = KernelDecoder(call).decode();
    if (s)
      s = checkAliasing(call);
    if (!s)
      return s.withContext(kernelText(call));
    program.calls.push_back(std::move(call));
  }
  if (Status s = computeLifetimes(program); !s)
    return s;
  if (Status s = checkPlanAndMeasurePeak(program); !s)
    return s;
  out = std::move(program);
  return Status::ok();
}

namespace {
const BindingRef *findBinding(const std::vector<BindingRef> &list,
                              const std::string &name) {
  for (const BindingRef &binding : list)
    if (binding.name == name)
      return &binding;
  return nullptr;
}
} // namespace

const BindingRef *Program::findInput(const std::string &name) const {
  return findBinding(inputs, name);
}

const BindingRef *Program::findOutput(const std::string &name) const {
  return findBinding(outputs, name);
}
