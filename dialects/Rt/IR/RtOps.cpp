//===- RtOps.cpp - rt op verifiers ----------------------------------------===//
//
// The runtime trusts what the executable says about shapes, so the verifier
// checks per opcode everything a kernel relies on: operand and result counts,
// attribute lengths, flag bits, shapes and element types. Every message names
// the kernel and the bad operand or attribute.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::rt;

#define GET_OP_CLASSES
#include "dialects/Rt/IR/RtOps.cpp.inc"

/// The element count of a static shape, or nullopt on overflow.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (size < 0 || llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

int64_t mlir::rt::getBufferBytes(MemRefType type) {
  std::optional<int64_t> count = elementCount(type.getShape());
  int64_t bytes;
  if (!count || llvm::MulOverflow(
                    *count, int64_t(type.getElementTypeBitWidth() / 8), bytes))
    return std::numeric_limits<int64_t>::max();
  return bytes;
}

/// Offsets are read as signed (the executable's uint64 would wrap) and must
/// be a multiple of the element size: kernels read elements in place.
static LogicalResult verifyOffset(Operation *op, IntegerAttr offset) {
  if (!offset)
    return success();
  int64_t value = offset.getInt();
  if (value < 0)
    return op->emitOpError("offset must be non-negative but is ") << value;
  auto type = cast<MemRefType>(op->getResult(0).getType());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  if (value % elementBytes != 0)
    return op->emitOpError("offset ")
           << value << " is not a multiple of the " << elementBytes
           << "-byte element size of " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state,
                      StringRef name) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addRegion()->emplaceBlock();
}

LogicalResult ProgramOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 0)
    return emitOpError("body must have no arguments");
  llvm::StringSet<> params, inputs, outputs;
  // Allocs written so far, in execution order.
  llvm::DenseSet<Value> written;
  auto isUnwrittenAlloc = [&](Value v) {
    return v.getDefiningOp<AllocOp>() && !written.contains(v);
  };
  for (Operation &op : body) {
    if (op.getDialect() != (*this)->getDialect())
      return op.emitOpError("is not an rt op; an rt.program holds only rt "
                            "ops");
    if (auto param = dyn_cast<ParamOp>(op)) {
      if (!params.insert(param.getHfName()).second)
        return param.emitOpError("duplicate parameter '")
               << param.getHfName() << "'";
    } else if (auto input = dyn_cast<InputOp>(op)) {
      if (!inputs.insert(input.getName()).second)
        return input.emitOpError("duplicate input '") << input.getName() << "'";
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      if (!outputs.insert(output.getName()).second)
        return output.emitOpError("duplicate output '")
               << output.getName() << "'";
      if (isUnwrittenAlloc(output.getBuffer()))
        return output.emitOpError("binds output '")
               << output.getName() << "' to an rt.alloc no kernel writes";
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      for (auto [i, operand] : llvm::enumerate(kernel.getInputs()))
        if (isUnwrittenAlloc(operand))
          return kernel.emitOpError()
                 << stringifyOpCode(kernel.getOpcode()) << ": operand " << i
                 << " is an rt.alloc that no earlier kernel writes";
      for (auto [i, result] : llvm::enumerate(kernel.getOutputs())) {
        if (!result.getDefiningOp<AllocOp>())
          return kernel.emitOpError()
                 << stringifyOpCode(kernel.getOpcode()) << ": result " << i
                 << " is not an rt.alloc; kernels only read params and inputs";
        written.insert(result);
      }
    } else if (isa<ProgramOp>(op)) {
      return op.emitOpError("cannot be nested in another rt.program");
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Buffer ops
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getHfName().empty())
    return emitOpError("hf_name must not be empty");
  if (!isa<FloatType>(getBuffer().getType().getElementType()))
    return emitOpError("'")
           << getHfName() << "': a parameter buffer holds "
           << "f32, bf16 or f16, not " << getBuffer().getType();
  ArrayRef<int64_t> hfShape = getHfShape();
  std::optional<int64_t> hfElements = elementCount(hfShape);
  if (!hfElements)
    return emitOpError("hf_shape of '")
           << getHfName() << "' has a negative dimension or too many elements";
  int64_t elements = getBuffer().getType().getNumElements();
  if (*hfElements != elements)
    return emitOpError("'")
           << getHfName() << "': hf_shape [" << hfShape << "] has "
           << *hfElements << " elements but the buffer "
           << getBuffer().getType() << " has " << elements;
  double std = getInitStd().convertToDouble();
  if (!std::isfinite(std) || std < 0)
    return emitOpError("'") << getHfName()
                            << "': init std must be finite and non-negative "
                               "but is "
                            << std;
  return verifyOffset(*this, getOffsetAttr());
}

LogicalResult InputOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  int64_t bound = getValueBoundAttr().getInt();
  if (bound < 0)
    return emitOpError("input '")
           << getName() << "': bound must be non-negative but is " << bound;
  if (bound != 0 && !getBuffer().getType().getElementType().isSignlessInteger())
    return emitOpError("input '")
           << getName() << "': a value bound needs an integer buffer, not "
           << getBuffer().getType();
  return verifyOffset(*this, getOffsetAttr());
}

LogicalResult AllocOp::verify() { return verifyOffset(*this, getOffsetAttr()); }

LogicalResult OutputOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

namespace {

/// What every opcode takes; the same counts as the runtime's loader table.
struct KernelInfo {
  OpCode op;
  unsigned minOperands, maxOperands, numResults;
  /// Length of `ints`; kRankInts: the rank of operand 0 (a permutation).
  int numInts;
  unsigned numFloats;
  uint32_t flagMask;
};
constexpr int kRankInts = -1;

constexpr KernelInfo kKernels[] = {
    {OpCode::Embedding, 2, 2, 1, 0, 0, 0},
    {OpCode::Linear, 2, 3, 1, 0, 0, 1},
    {OpCode::BatchMatmul, 2, 2, 1, 0, 1, 3},
    {OpCode::LayerNorm, 3, 3, 1, 0, 1, 0},
    {OpCode::RmsNorm, 2, 2, 1, 0, 1, 0},
    {OpCode::Gelu, 1, 1, 1, 0, 0, 1},
    {OpCode::Silu, 1, 1, 1, 0, 0, 0},
    {OpCode::Add, 2, 2, 1, 0, 0, 0},
    {OpCode::Mul, 2, 2, 1, 0, 0, 0},
    {OpCode::Dropout, 1, 1, 1, 1, 1, 0},
    {OpCode::Softmax, 1, 1, 1, 0, 0, 1},
    {OpCode::Attention, 3, 3, 1, 1, 2, 1},
    {OpCode::Rotary, 1, 1, 1, 1, 1, 0},
    {OpCode::CrossEntropy, 2, 2, 2, 1, 0, 0},
    {OpCode::LossMean, 2, 2, 1, 0, 0, 0},
    {OpCode::Copy, 1, 1, 1, 0, 0, 0},
    {OpCode::Transpose, 1, 1, 1, kRankInts, 0, 0},
    {OpCode::Slice, 1, 1, 1, 3, 0, 0},
    {OpCode::Repeat, 1, 1, 1, 2, 0, 0},
    {OpCode::Cast, 1, 1, 1, 0, 0, 0},
};
static_assert(std::size(kKernels) ==
                  static_cast<size_t>(getMaxEnumValForOpCode()) + 1,
              "every opcode needs a row in kKernels");

constexpr bool kernelTableIsIndexedByOpcode() {
  for (size_t i = 0; i < std::size(kKernels); ++i)
    if (static_cast<size_t>(kKernels[i].op) != i)
      return false;
  return true;
}
static_assert(kernelTableIsIndexedByOpcode(),
              "kKernels rows must be in opcode order");

/// Prints a shape as `4x32x64` (a scalar as `scalar`).
std::string shapeStr(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string str;
  llvm::raw_string_ostream os(str);
  llvm::interleave(shape, os, "x");
  return str;
}

/// Shape and element checks of one kernel. Every message starts with the
/// opcode's name.
class KernelChecker {
public:
  explicit KernelChecker(KernelOp op) : op(op) {}

  InFlightDiagnostic error() {
    return op.emitOpError() << stringifyOpCode(op.getOpcode()) << ": ";
  }
  MemRefType in(unsigned i) {
    return cast<MemRefType>(op.getInputs()[i].getType());
  }
  MemRefType out(unsigned i) {
    return cast<MemRefType>(op.getOutputs()[i].getType());
  }

  LogicalResult isFloat(MemRefType type, StringRef name) {
    if (isa<Float32Type, BFloat16Type, Float16Type>(type.getElementType()))
      return success();
    return error() << name << " must hold f32, bf16 or f16 but is " << type;
  }
  LogicalResult isIndex(MemRefType type, StringRef name) {
    if (type.getElementType().isSignlessInteger(32) ||
        type.getElementType().isSignlessInteger(64))
      return success();
    return error() << name << " must hold i32 or i64 but is " << type;
  }
  LogicalResult sameElement(MemRefType ref, StringRef refName, MemRefType other,
                            StringRef otherName) {
    if (ref.getElementType() == other.getElementType())
      return success();
    return error() << otherName << " element type " << other.getElementType()
                   << " differs from the " << refName << " element type "
                   << ref.getElementType();
  }
  LogicalResult sameType(MemRefType ref, StringRef refName, MemRefType other,
                         StringRef otherName) {
    if (ref == other)
      return success();
    return error() << otherName << " " << other << " must have the type of the "
                   << refName << " " << ref;
  }
  LogicalResult hasShape(MemRefType type, StringRef name,
                         ArrayRef<int64_t> expected) {
    if (type.getShape() == expected)
      return success();
    return error() << name << " has shape " << shapeStr(type.getShape())
                   << " but must be " << shapeStr(expected);
  }
  LogicalResult hasRank(MemRefType type, StringRef name, int64_t rank) {
    if (type.getRank() == rank)
      return success();
    return error() << name << " must have rank " << rank << " but has shape "
                   << shapeStr(type.getShape());
  }
  LogicalResult isScalar(MemRefType type, StringRef name, Type element) {
    if (type.getRank() == 0 && type.getElementType() == element)
      return success();
    return error() << name << " must be a scalar of " << element << " but is "
                   << type;
  }

  LogicalResult check();

private:
  LogicalResult checkEmbedding();
  LogicalResult checkLinear();
  LogicalResult checkBatchMatmul();
  LogicalResult checkNorm();
  LogicalResult checkUnary();
  LogicalResult checkBinary();
  LogicalResult checkAttention();
  LogicalResult checkCrossEntropy();
  LogicalResult checkLossMean();
  LogicalResult checkCopy();
  LogicalResult checkTranspose();
  LogicalResult checkSliceOrRepeat();
  LogicalResult checkCast();

  KernelOp op;
};

} // namespace

LogicalResult KernelChecker::checkEmbedding() {
  MemRefType table = in(0), ids = in(1), result = out(0);
  if (failed(isFloat(table, "table")) || failed(isIndex(ids, "ids")) ||
      failed(hasRank(table, "table", 2)) ||
      failed(sameElement(table, "table", result, "result")))
    return failure();
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getDimSize(1));
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkLinear() {
  MemRefType input = in(0), weight = in(1), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameElement(input, "input", weight, "weight")) ||
      failed(sameElement(input, "input", result, "result")))
    return failure();
  if (input.getRank() < 1 || weight.getRank() < 2)
    return error() << "input must have rank >= 1 and weight rank >= 2, but "
                      "they have shapes "
                   << shapeStr(input.getShape()) << " and "
                   << shapeStr(weight.getShape());
  int64_t k = input.getShape().back();
  bool outIn = op.getFlags() & 1;
  ArrayRef<int64_t> w = weight.getShape();
  int64_t weightIn = outIn ? w.back() : w.front();
  if (weightIn != k)
    return error() << "weight " << shapeStr(w) << " ("
                   << (outIn ? "[out..., in]" : "[in, out...]")
                   << ") does not contract input dimension " << k;
  ArrayRef<int64_t> outDims = outIn ? w.drop_back() : w.drop_front();
  SmallVector<int64_t> expected(input.getShape().drop_back());
  expected.append(outDims.begin(), outDims.end());
  // The runtime only reads element counts (m, k, n), but a consistent shape
  // catches a mixed-up layout flag.
  if (failed(hasShape(result, "result", expected)))
    return failure();
  if (op.getInputs().size() == 3) {
    MemRefType bias = in(2);
    if (failed(sameElement(input, "input", bias, "bias")))
      return failure();
    int64_t n = *elementCount(outDims);
    if (bias.getNumElements() != n)
      return error() << "bias has " << bias.getNumElements()
                     << " elements but the output has " << n << " features";
  }
  return success();
}

LogicalResult KernelChecker::checkBatchMatmul() {
  MemRefType lhs = in(0), rhs = in(1), result = out(0);
  if (failed(isFloat(lhs, "lhs")) ||
      failed(sameElement(lhs, "lhs", rhs, "rhs")) ||
      failed(sameElement(lhs, "lhs", result, "result")))
    return failure();
  int64_t rank = lhs.getRank();
  if (rank < 2 || rhs.getRank() != rank)
    return error() << "lhs and rhs must have the same rank >= 2 but have "
                      "shapes "
                   << shapeStr(lhs.getShape()) << " and "
                   << shapeStr(rhs.getShape());
  bool tl = op.getFlags() & 1, tr = op.getFlags() & 2;
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t m = l[rank - (tl ? 1 : 2)], kl = l[rank - (tl ? 2 : 1)];
  int64_t kr = r[rank - (tr ? 1 : 2)], n = r[rank - (tr ? 2 : 1)];
  if (kl != kr || l.drop_back(2) != r.drop_back(2))
    return error() << "lhs " << shapeStr(l) << " and rhs " << shapeStr(r)
                   << " do not multiply (transpose_lhs " << tl
                   << ", transpose_rhs " << tr << ")";
  SmallVector<int64_t> expected(l.drop_back(2));
  expected.append({m, n});
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkNorm() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameType(input, "input", result, "result")))
    return failure();
  if (input.getRank() < 1)
    return error() << "input must have rank >= 1";
  int64_t hidden = input.getShape().back();
  StringRef names[] = {"input", "weight", "bias"};
  for (unsigned i = 1, e = op.getInputs().size(); i < e; ++i) {
    if (failed(sameElement(input, "input", in(i), names[i])) ||
        failed(hasShape(in(i), names[i], {hidden})))
      return failure();
  }
  return success();
}

LogicalResult KernelChecker::checkUnary() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) ||
      failed(sameType(input, "input", result, "result")))
    return failure();
  switch (op.getOpcode()) {
  case OpCode::Dropout: {
    double rate = op.getFloats()[0];
    if (!(rate >= 0.0 && rate < 1.0))
      return error() << "rate must be in [0, 1) but is " << rate;
    return success();
  }
  case OpCode::Softmax:
    if ((op.getFlags() & 1) &&
        (input.getRank() < 2 ||
         input.getShape().back() < input.getShape()[input.getRank() - 2]))
      return error() << "a causal softmax needs [..., q, k] with k >= q but "
                        "the input has shape "
                     << shapeStr(input.getShape());
    return success();
  case OpCode::Rotary:
    if (input.getRank() != 4 || input.getShape().back() % 2 != 0)
      return error() << "input must be [b, heads, s, d] with an even d but "
                        "has shape "
                     << shapeStr(input.getShape());
    return success();
  default:
    return success();
  }
}

LogicalResult KernelChecker::checkBinary() {
  MemRefType lhs = in(0), rhs = in(1), result = out(0);
  if (failed(isFloat(lhs, "lhs")) ||
      failed(sameElement(lhs, "lhs", rhs, "rhs")) ||
      failed(sameType(lhs, "lhs", result, "result")))
    return failure();
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  if (r.size() > l.size() || l.take_back(r.size()) != r)
    return error() << "rhs shape " << shapeStr(r)
                   << " is not a suffix of the lhs shape " << shapeStr(l);
  return success();
}

LogicalResult KernelChecker::checkAttention() {
  MemRefType q = in(0), k = in(1), v = in(2), result = out(0);
  if (failed(isFloat(q, "query")) ||
      failed(sameElement(q, "query", k, "key")) ||
      failed(sameElement(q, "query", v, "value")) ||
      failed(sameElement(q, "query", result, "result")) ||
      failed(hasRank(q, "query", 4)) || failed(hasRank(k, "key", 4)) ||
      failed(hasRank(v, "value", 4)))
    return failure();
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  if (ks[0] != qs[0] || ks[3] != qs[3] || vs[0] != ks[0] || vs[1] != ks[1] ||
      vs[2] != ks[2] || ks[1] <= 0 || qs[1] % ks[1] != 0)
    return error() << "query " << shapeStr(qs) << ", key " << shapeStr(ks)
                   << " and value " << shapeStr(vs)
                   << " are not [b, h, sq, d], [b, kv, sk, d], [b, kv, sk, dv] "
                      "with h a multiple of kv";
  if ((op.getFlags() & 1) && ks[2] < qs[2])
    return error() << "causal attention needs sk >= sq but sk is " << ks[2]
                   << " and sq " << qs[2];
  double rate = op.getFloats()[1];
  if (!(rate >= 0.0 && rate < 1.0))
    return error() << "dropout rate must be in [0, 1) but is " << rate;
  return hasShape(result, "result", {qs[0], qs[1], qs[2], vs[3]});
}

LogicalResult KernelChecker::checkCrossEntropy() {
  MemRefType logits = in(0), labels = in(1);
  if (failed(isFloat(logits, "logits")) || failed(isIndex(labels, "labels")))
    return failure();
  if (logits.getRank() < 1 ||
      labels.getShape() != logits.getShape().drop_back())
    return error() << "labels shape " << shapeStr(labels.getShape())
                   << " must be the logits shape "
                   << shapeStr(logits.getShape())
                   << " without its last dimension";
  Builder b(op.getContext());
  if (failed(isScalar(out(0), "result 0 (loss sum)", b.getF32Type())) ||
      failed(isScalar(out(1), "result 1 (count)", b.getIntegerType(64))))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkLossMean() {
  Builder b(op.getContext());
  if (failed(isScalar(in(0), "operand 0 (sum)", b.getF32Type())) ||
      failed(isScalar(in(1), "operand 1 (count)", b.getIntegerType(64))) ||
      failed(isScalar(out(0), "result", b.getF32Type())))
    return failure();
  return success();
}

LogicalResult KernelChecker::checkCopy() {
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  if (input.getNumElements() != result.getNumElements())
    return error() << "input " << shapeStr(input.getShape()) << " has "
                   << input.getNumElements() << " elements but result "
                   << shapeStr(result.getShape()) << " has "
                   << result.getNumElements();
  return success();
}

LogicalResult KernelChecker::checkTranspose() {
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  ArrayRef<int64_t> perm = op.getInts();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
      return error() << "ints [" << perm << "] is not a permutation of rank "
                     << perm.size();
    seen[p] = true;
    expected.push_back(input.getDimSize(p));
  }
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkSliceOrRepeat() {
  MemRefType input = in(0), result = out(0);
  if (failed(sameElement(input, "input", result, "result")))
    return failure();
  ArrayRef<int64_t> ints = op.getInts();
  int64_t dim = ints[0];
  if (dim < 0 || dim >= input.getRank())
    return error() << "dim " << dim << " is out of range for input shape "
                   << shapeStr(input.getShape());
  SmallVector<int64_t> expected(input.getShape());
  int64_t size = expected[dim];
  if (op.getOpcode() == OpCode::Slice) {
    int64_t offset = ints[1], length = ints[2];
    if (offset < 0 || length < 0 || offset > size || length > size - offset)
      return error() << "[" << offset << ", +" << length
                     << ") is out of range for dimension " << dim << " of size "
                     << size;
    expected[dim] = length;
  } else {
    int64_t repeats = ints[1];
    if (repeats < 1 || llvm::MulOverflow(size, repeats, expected[dim]))
      return error() << "repeats must be positive (and the result fit in "
                        "int64) but is "
                     << repeats;
  }
  return hasShape(result, "result", expected);
}

LogicalResult KernelChecker::checkCast() {
  MemRefType input = in(0), result = out(0);
  if (failed(isFloat(input, "input")) || failed(isFloat(result, "result")) ||
      failed(hasShape(result, "result", input.getShape())))
    return failure();
  return success();
}

LogicalResult KernelChecker::check() {
  const KernelInfo &info = kKernels[static_cast<size_t>(op.getOpcode())];
  unsigned numOperands = op.getInputs().size();
  if (numOperands < info.minOperands || numOperands > info.maxOperands) {
    InFlightDiagnostic diag = error()
                              << "has " << numOperands << " operands, expected "
                              << info.minOperands;
    if (info.maxOperands != info.minOperands)
      diag << " to " << info.maxOperands;
    return diag;
  }
  if (op.getOutputs().size() != info.numResults)
    return error() << "has " << op.getOutputs().size() << " results, expected "
                   << info.numResults;
  int64_t numInts = info.numInts == kRankInts ? in(0).getRank() : info.numInts;
  if (static_cast<int64_t>(op.getInts().size()) != numInts)
    return error() << "takes " << numInts << " ints but has "
                   << op.getInts().size();
  if (op.getFloats().size() != info.numFloats)
    return error() << "takes " << info.numFloats << " floats but has "
                   << op.getFloats().size();
  for (double value : op.getFloats())
    if (!std::isfinite(value))
      return error() << "floats must be finite but one is " << value;
  if (uint32_t unknown = op.getFlags() & ~info.flagMask)
    return error() << "flags " << op.getFlags() << " set bits " << unknown
                   << " this kernel does not define";
  for (auto [i, result] : llvm::enumerate(op.getOutputs())) {
    if (llvm::is_contained(op.getInputs(), result))
      return error() << "result " << i
                     << " is also an operand; kernels do not run in place";
    if (llvm::is_contained(op.getOutputs().take_front(i), result))
      return error() << "result " << i << " repeats an earlier result";
  }

  switch (op.getOpcode()) {
  case OpCode::Embedding:
    return checkEmbedding();
  case OpCode::Linear:
    return checkLinear();
  case OpCode::BatchMatmul:
    return checkBatchMatmul();
  case OpCode::LayerNorm:
  case OpCode::RmsNorm:
    return checkNorm();
  case OpCode::Gelu:
  case OpCode::Silu:
  case OpCode::Dropout:
  case OpCode::Softmax:
  case OpCode::Rotary:
    return checkUnary();
  case OpCode::Add:
  case OpCode::Mul:
    return checkBinary();
  case OpCode::Attention:
    return checkAttention();
  case OpCode::CrossEntropy:
    return checkCrossEntropy();
  case OpCode::LossMean:
    return checkLossMean();
  case OpCode::Copy:
    return checkCopy();
  case OpCode::Transpose:
    return checkTranspose();
  case OpCode::Slice:
  case OpCode::Repeat:
    return checkSliceOrRepeat();
  case OpCode::Cast:
    return checkCast();
  }
  llvm_unreachable("unknown opcode");
}

LogicalResult KernelOp::verify() { return KernelChecker(*this).check(); }
