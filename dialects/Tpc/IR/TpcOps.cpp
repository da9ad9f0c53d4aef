//===- TpcOps.cpp - tpc op verifiers and type inference -------------------===//
//
// Every check names the bad value: a user reading the diagnostic should not
// need to open the IR to see what went wrong.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tpc;

namespace {
/// Prints a shape as `4x32x64` (a scalar as `scalar`).
struct ShapeStr {
  ArrayRef<int64_t> shape;
};
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ShapeStr s) {
  if (s.shape.empty())
    return os << "scalar";
  llvm::interleave(s.shape, os, "x");
  return os;
}
Diagnostic &operator<<(Diagnostic &diag, ShapeStr s) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << s;
  return diag << str;
}
} // namespace

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static ShapeStr shapeOf(Value v) { return {tensorType(v).getShape()}; }

namespace {
/// Where a check reports: on the op (verifiers; the message starts with the
/// op name) or at a location (result-type inference, which runs while parsing,
/// before the op exists).
class Reporter {
public:
  Reporter(Operation *op) : op(op) {}
  Reporter(std::optional<Location> loc) : loc(loc) {}

  template <typename... Args>
  LogicalResult operator()(Args &&...args) const {
    if (!op)
      return emitOptionalError(loc, std::forward<Args>(args)...);
    InFlightDiagnostic diag = op->emitOpError();
    (diag << ... << std::forward<Args>(args));
    return diag;
  }

private:
  Operation *op = nullptr;
  std::optional<Location> loc;
};
} // namespace

/// Checks that `other` (named `otherName`) has the element type of `ref`
/// (named `refName`).
static LogicalResult checkSameElementType(Reporter report, Value ref,
                                          StringRef refName, Value other,
                                          StringRef otherName) {
  Type refType = tensorType(ref).getElementType();
  Type otherType = tensorType(other).getElementType();
  if (refType == otherType)
    return success();
  return report(otherName, " element type ", otherType, " differs from the ",
                refName, " element type ", refType);
}

/// Checks that `v` (named `name`) is a statically shaped tensor of f32, bf16
/// or f16 (or, with `index`, of i32 or i64). Result-type inference runs while
/// parsing, before the ODS operand constraints are verified, so it checks the
/// operands it reads itself: the ODS message would come too late, after a
/// misleading shape diagnostic or none.
static LogicalResult checkOperandType(std::optional<Location> loc, Value v,
                                      StringRef name, bool index = false) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (type && type.hasStaticShape()) {
    Type element = type.getElementType();
    if (index ? element.isSignlessInteger(32) || element.isSignlessInteger(64)
              : isa<Float32Type, BFloat16Type, Float16Type>(element))
      return success();
  }
  return emitOptionalError(loc, name, " must be a statically shaped tensor of ",
                           index ? "i32 or i64" : "f32, bf16 or f16",
                           " but is ", v.getType());
}

/// The number of elements of a static shape, or nullopt if it overflows int64.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

/// Checks that `dim` is a valid dimension index of a rank-`rank` tensor.
static LogicalResult checkDim(std::optional<Location> loc, int64_t dim,
                              int64_t rank) {
  if (dim >= 0 && dim < rank)
    return success();
  return emitOptionalError(loc, "dim ", dim, " is out of range for rank ",
                           rank);
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getTable(), "table")) ||
      failed(checkOperandType(loc, adaptor.getIds(), "ids", /*index=*/true)))
    return failure();
  auto table = tensorType(adaptor.getTable());
  auto ids = tensorType(adaptor.getIds());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "embedding table must be [vocab, hidden] but "
                                  "has shape ",
                             ShapeStr{table.getShape()});
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult
LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getInput(), "input")) ||
      failed(checkOperandType(loc, adaptor.getWeight(), "weight")) ||
      (adaptor.getBias() &&
       failed(checkOperandType(loc, adaptor.getBias(), "bias"))))
    return failure();
  auto input = tensorType(adaptor.getInput());
  auto weight = tensorType(adaptor.getWeight());
  if (input.getRank() < 1)
    return emitOptionalError(loc, "input must have a feature dimension but is "
                                  "a scalar");
  if (weight.getRank() < 2)
    return emitOptionalError(loc, "weight must have at least 2 dimensions but "
                                  "has shape ",
                             ShapeStr{weight.getShape()});
  if (failed(checkSameElementType(loc, adaptor.getInput(), "input",
                                  adaptor.getWeight(), "weight")))
    return failure();

  // A builder may leave the default-valued layout unset.
  WeightLayout layout = adaptor.getLayoutAttr() ? adaptor.getLayout()
                                                : WeightLayout::InOut;
  bool inOut = layout == WeightLayout::InOut;
  int64_t inFeatures = inOut ? weight.getDimSize(0)
                             : weight.getDimSize(weight.getRank() - 1);
  ArrayRef<int64_t> outDims = inOut ? weight.getShape().drop_front()
                                    : weight.getShape().drop_back();
  int64_t inputFeatures = input.getShape().back();
  if (inputFeatures != inFeatures)
    return emitOptionalError(
        loc, "input features ", inputFeatures,
        " do not match the weight's input dimension ", inFeatures,
        " (weight shape ", ShapeStr{weight.getShape()}, ", layout ",
        stringifyWeightLayout(layout), ")");

  if (Value bias = adaptor.getBias()) {
    if (failed(checkSameElementType(loc, adaptor.getInput(), "input", bias,
                                    "bias")))
      return failure();
    if (tensorType(bias).getShape() != outDims)
      return emitOptionalError(loc, "bias shape ", shapeOf(bias),
                               " does not match the output dimensions ",
                               ShapeStr{outDims});
  }
  SmallVector<int64_t> shape(input.getShape().drop_back());
  llvm::append_range(shape, outDims);
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// BatchMatmulOp
//===----------------------------------------------------------------------===//

LogicalResult BatchMatmulOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getLhs(), "lhs")) ||
      failed(checkOperandType(loc, adaptor.getRhs(), "rhs")))
    return failure();
  auto lhs = tensorType(adaptor.getLhs());
  auto rhs = tensorType(adaptor.getRhs());
  if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank())
    return emitOptionalError(loc, "operands must have the same rank of at "
                                  "least 2 but have shapes ",
                             ShapeStr{lhs.getShape()}, " and ",
                             ShapeStr{rhs.getShape()});
  if (failed(checkSameElementType(loc, adaptor.getLhs(), "lhs",
                                  adaptor.getRhs(), "rhs")))
    return failure();
  int64_t rank = lhs.getRank();
  ArrayRef<int64_t> batch = lhs.getShape().drop_back(2);
  if (batch != rhs.getShape().drop_back(2))
    return emitOptionalError(loc, "batch dimensions differ: ",
                             ShapeStr{batch}, " vs ",
                             ShapeStr{rhs.getShape().drop_back(2)});
  int64_t m = lhs.getDimSize(rank - 2), kl = lhs.getDimSize(rank - 1);
  if (adaptor.getTransposeLhs())
    std::swap(m, kl);
  int64_t kr = rhs.getDimSize(rank - 2), n = rhs.getDimSize(rank - 1);
  if (adaptor.getTransposeRhs())
    std::swap(kr, n);
  if (kl != kr)
    return emitOptionalError(loc, "contracted dimensions differ: lhs has ", kl,
                             ", rhs has ", kr);
  SmallVector<int64_t> shape(batch);
  shape.push_back(m);
  shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult BatchMatmulOp::verify() {
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale))
    return emitOpError() << "scale must be finite but is " << scale;
  return success();
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// Checks a per-feature norm parameter: shape [hidden], input's element type.
static LogicalResult verifyNormParam(Operation *op, Value input, Value param,
                                     StringRef name) {
  auto inputType = tensorType(input);
  if (inputType.getRank() < 1)
    return op->emitOpError() << "input must have at least one dimension to "
                                "normalize but is a scalar "
                             << inputType;
  int64_t hidden = inputType.getShape().back();
  if (tensorType(param).getShape() != ArrayRef<int64_t>{hidden})
    return op->emitOpError() << name << " shape " << shapeOf(param)
                             << " does not match the normalized dimension "
                             << hidden;
  return checkSameElementType(op, input, "input", param, name);
}

static LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (epsilon > 0.0 && std::isfinite(epsilon))
    return success();
  return op->emitOpError() << "epsilon must be positive and finite but is "
                           << epsilon;
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getWeight(), "weight")) ||
      failed(verifyNormParam(*this, getInput(), getBias(), "bias")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getWeight(), "weight")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// DropoutOp, SoftmaxOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyDropoutRate(Operation *op, double rate) {
  if (rate >= 0.0 && rate < 1.0)
    return success();
  return op->emitOpError() << "dropout rate " << rate
                           << " is outside [0, 1)";
}

static LogicalResult verifyDropoutStream(Operation *op, int64_t stream) {
  if (stream >= 0)
    return success();
  return op->emitOpError() << "dropout stream " << stream << " is negative";
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyDropoutStream(*this, getStreamAttr().getInt())))
    return failure();
  return verifyDropoutRate(*this, getRate().convertToDouble());
}

/// A causal mask over `[..., queries, keys]` is aligned to the bottom right
/// (query `i` sees keys `j <= i + keys - queries`), so with more queries than
/// keys the first rows would see no key at all.
static LogicalResult verifyCausalLengths(Operation *op, int64_t queries,
                                         int64_t keys) {
  if (keys >= queries)
    return success();
  return op->emitOpError() << "causal mask needs at least as many keys as "
                              "queries but has "
                           << queries << " queries and " << keys << " keys";
}

LogicalResult SoftmaxOp::verify() {
  auto type = getInput().getType();
  int64_t rank = type.getRank();
  if (rank < 1)
    return emitOpError() << "input must have at least one dimension to "
                            "normalize over but is a scalar "
                         << type;
  if (!getCausal())
    return success();
  if (rank < 2)
    return emitOpError() << "causal softmax needs [..., queries, keys] but the "
                            "input has shape "
                         << shapeOf(getInput());
  return verifyCausalLengths(*this, type.getDimSize(rank - 2),
                             type.getDimSize(rank - 1));
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

/// rhs must have the shape of lhs or a suffix of it (broadcast over the
/// leading dimensions), and the same element type.
static LogicalResult verifyBroadcastBinary(Operation *op, Value lhs,
                                           Value rhs) {
  ArrayRef<int64_t> lhsShape = tensorType(lhs).getShape();
  ArrayRef<int64_t> rhsShape = tensorType(rhs).getShape();
  if (rhsShape.size() > lhsShape.size() ||
      lhsShape.take_back(rhsShape.size()) != rhsShape)
    return op->emitOpError()
           << "rhs shape " << ShapeStr{rhsShape}
           << " is neither the lhs shape " << ShapeStr{lhsShape}
           << " nor a suffix of it";
  return checkSameElementType(op, lhs, "lhs", rhs, "rhs");
}

LogicalResult AddOp::verify() {
  return verifyBroadcastBinary(*this, getLhs(), getRhs());
}
LogicalResult MulOp::verify() {
  return verifyBroadcastBinary(*this, getLhs(), getRhs());
}

//===----------------------------------------------------------------------===//
// AttentionOp, RotaryOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getQuery(), "query")) ||
      failed(checkOperandType(loc, adaptor.getKey(), "key")) ||
      failed(checkOperandType(loc, adaptor.getValue(), "value")))
    return failure();
  auto q = tensorType(adaptor.getQuery());
  auto k = tensorType(adaptor.getKey());
  auto v = tensorType(adaptor.getValue());
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"query", q},
                            {"key", k},
                            {"value", v}})
    if (type.getRank() != 4)
      return emitOptionalError(loc, name,
                               " must be [batch, heads, seq, head_dim] but has "
                               "shape ",
                               ShapeStr{type.getShape()});
  if (failed(checkSameElementType(loc, adaptor.getQuery(), "query",
                                  adaptor.getKey(), "key")) ||
      failed(checkSameElementType(loc, adaptor.getQuery(), "query",
                                  adaptor.getValue(), "value")))
    return failure();
  if (k.getDimSize(0) != q.getDimSize(0) || v.getDimSize(0) != q.getDimSize(0))
    return emitOptionalError(loc, "batch sizes differ: query ",
                             q.getDimSize(0), ", key ", k.getDimSize(0),
                             ", value ", v.getDimSize(0));
  if (k.getDimSize(1) != v.getDimSize(1))
    return emitOptionalError(loc, "key has ", k.getDimSize(1),
                             " heads but value has ", v.getDimSize(1));
  int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
  if (kvHeads == 0)
    return emitOptionalError(loc, "key and value have 0 heads");
  if (heads % kvHeads != 0)
    return emitOptionalError(loc, "query heads ", heads,
                             " is not divisible by ", kvHeads,
                             " key/value heads");
  if (k.getDimSize(2) != v.getDimSize(2))
    return emitOptionalError(loc, "key length ", k.getDimSize(2),
                             " differs from value length ", v.getDimSize(2));
  if (k.getDimSize(3) != q.getDimSize(3))
    return emitOptionalError(loc, "key head_dim ", k.getDimSize(3),
                             " differs from query head_dim ", q.getDimSize(3));
  // Attributes are checked by the verifier: while parsing, the default-valued
  // ones are still unset here.
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), heads, q.getDimSize(2), v.getDimSize(3)},
      q.getElementType()));
  return success();
}

LogicalResult AttentionOp::verify() {
  double scale = getScale().convertToDouble();
  if (!(scale > 0.0 && std::isfinite(scale)))
    return emitOpError() << "scale must be positive and finite but is "
                         << scale;
  double rate = getDropoutRate().convertToDouble();
  int64_t stream = getDropoutStreamAttr().getInt();
  if (failed(verifyDropoutRate(*this, rate)) ||
      failed(verifyDropoutStream(*this, stream)))
    return failure();
  // The custom form prints the stream only together with a non-zero rate.
  if (rate == 0.0 && stream != 0)
    return emitOpError() << "dropout stream " << stream
                         << " is set but the dropout rate is 0";
  if (getCausal())
    return verifyCausalLengths(*this, getQuery().getType().getDimSize(2),
                               getKey().getType().getDimSize(2));
  return success();
}

LogicalResult RotaryOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() != 4)
    return emitOpError() << "input must be [batch, heads, seq, head_dim] but "
                            "has shape "
                         << shapeOf(getInput());
  if (type.getDimSize(3) % 2 != 0)
    return emitOpError() << "head_dim " << type.getDimSize(3)
                         << " must be even for rotate-half";
  double theta = getTheta().convertToDouble();
  if (!(theta > 0.0 && std::isfinite(theta)))
    return emitOpError() << "theta must be positive and finite but is "
                         << theta;
  if (getOffsetAttr().getInt() < 0)
    return emitOpError() << "position offset " << getOffsetAttr().getInt()
                         << " is negative";
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  auto logits = getLogits().getType();
  auto labels = getLabels().getType();
  if (logits.getRank() < 1)
    return emitOpError() << "logits must have a vocabulary dimension but are "
                            "a scalar "
                         << logits;
  if (logits.getShape().drop_back() != labels.getShape())
    return emitOpError() << "labels shape " << shapeOf(getLabels())
                         << " must be the logits shape " << shapeOf(getLogits())
                         << " without its vocabulary dimension";
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType();
  auto out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " differs from the input element type "
                         << in.getElementType();
  std::optional<int64_t> inCount = elementCount(in.getShape());
  std::optional<int64_t> outCount = elementCount(out.getShape());
  if (!inCount || !outCount)
    return emitOpError() << "element count of "
                         << shapeOf(!inCount ? getInput() : getResult())
                         << " overflows a 64-bit integer";
  if (*inCount != *outCount)
    return emitOpError() << "cannot reshape " << shapeOf(getInput()) << " ("
                         << *inCount << " elements) to "
                         << shapeOf(getResult()) << " (" << *outCount
                         << " elements)";
  return success();
}

LogicalResult
TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getInput(), "input")))
    return failure();
  auto input = tensorType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid) {
    std::string str;
    llvm::raw_string_ostream os(str);
    llvm::interleaveComma(perm, os);
    return emitOptionalError(loc, "permutation [", str,
                             "] is not a permutation of ", rank,
                             " dimensions");
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getInput(), "input")))
    return failure();
  auto input = tensorType(adaptor.getInput());
  int64_t dim = adaptor.getDimAttr().getInt();
  if (failed(checkDim(loc, dim, input.getRank())))
    return failure();
  int64_t offset = adaptor.getOffsetAttr().getInt(),
          size = adaptor.getSizeAttr().getInt();
  int64_t extent = input.getDimSize(dim);
  if (offset < 0 || size <= 0 || offset > extent || size > extent - offset)
    return emitOptionalError(loc, "slice [", offset, " : ", size,
                             "] (offset : size) is out of bounds for dim ", dim,
                             " of size ", extent);
  SmallVector<int64_t> shape(input.getShape());
  shape[dim] = size;
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult RepeatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getInput(), "input")))
    return failure();
  auto input = tensorType(adaptor.getInput());
  int64_t dim = adaptor.getDimAttr().getInt();
  if (failed(checkDim(loc, dim, input.getRank())))
    return failure();
  int64_t repeats = adaptor.getRepeatsAttr().getInt();
  if (repeats < 1)
    return emitOptionalError(loc, "repeats must be at least 1 but is ",
                             repeats);
  SmallVector<int64_t> shape(input.getShape());
  if (llvm::MulOverflow(shape[dim], repeats, shape[dim]))
    return emitOptionalError(loc, "repeating dim ", dim, " of size ",
                             input.getDimSize(dim), " ", repeats,
                             " times overflows a 64-bit size");
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError() << "result shape " << shapeOf(getResult())
                         << " differs from the input shape "
                         << shapeOf(getInput());
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Tpc/IR/TpcOps.cpp.inc"
