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

/// Checks that `other` has the element type of `ref`; `what` names `other`.
static LogicalResult checkSameElementType(std::optional<Location> loc,
                                          Value ref, Value other,
                                          StringRef what) {
  Type refType = tensorType(ref).getElementType();
  Type otherType = tensorType(other).getElementType();
  if (refType == otherType)
    return success();
  return emitOptionalError(loc, what, " element type ", otherType,
                           " differs from the input element type ", refType);
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
  auto input = tensorType(adaptor.getInput());
  auto weight = tensorType(adaptor.getWeight());
  if (input.getRank() < 1)
    return emitOptionalError(loc, "input must have at least one dimension");
  if (weight.getRank() < 2)
    return emitOptionalError(loc, "weight must have at least 2 dimensions but "
                                  "has shape ",
                             ShapeStr{weight.getShape()});
  if (failed(checkSameElementType(loc, adaptor.getInput(), adaptor.getWeight(),
                                  "weight")))
    return failure();

  bool inOut = adaptor.getLayout() == WeightLayout::InOut;
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
        stringifyWeightLayout(adaptor.getLayout()), ")");

  if (Value bias = adaptor.getBias()) {
    if (failed(checkSameElementType(loc, adaptor.getInput(), bias, "bias")))
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
  auto lhs = tensorType(adaptor.getLhs());
  auto rhs = tensorType(adaptor.getRhs());
  if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank())
    return emitOptionalError(loc, "operands must have the same rank of at "
                                  "least 2 but have shapes ",
                             ShapeStr{lhs.getShape()}, " and ",
                             ShapeStr{rhs.getShape()});
  if (failed(checkSameElementType(loc, adaptor.getLhs(), adaptor.getRhs(),
                                  "rhs")))
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

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// Checks a per-feature norm parameter: shape [hidden], input's element type.
static LogicalResult verifyNormParam(Operation *op, Value input, Value param,
                                     StringRef name) {
  auto inputType = tensorType(input);
  if (inputType.getRank() < 1)
    return op->emitOpError("input must have at least one dimension");
  int64_t hidden = inputType.getShape().back();
  if (tensorType(param).getShape() != ArrayRef<int64_t>{hidden})
    return op->emitOpError() << name << " shape " << shapeOf(param)
                             << " does not match the normalized dimension "
                             << hidden;
  return checkSameElementType(op->getLoc(), input, param, name);
}

static LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (epsilon > 0.0)
    return success();
  return op->emitOpError() << "epsilon must be positive but is " << epsilon;
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

LogicalResult DropoutOp::verify() {
  if (getStreamAttr().getInt() < 0)
    return emitOpError() << "stream " << getStreamAttr().getInt() << " is negative";
  return verifyDropoutRate(*this, getRate().convertToDouble());
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (rank < 1)
    return emitOpError("input must have at least one dimension");
  if (getCausal() && rank < 2)
    return emitOpError() << "causal softmax needs [..., queries, keys] but the "
                            "input has shape "
                         << shapeOf(getInput());
  return success();
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
  return checkSameElementType(op->getLoc(), lhs, rhs, "rhs");
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
  if (failed(checkSameElementType(loc, adaptor.getQuery(), adaptor.getKey(),
                                  "key")) ||
      failed(checkSameElementType(loc, adaptor.getQuery(), adaptor.getValue(),
                                  "value")))
    return failure();
  if (k.getDimSize(0) != q.getDimSize(0) || v.getDimSize(0) != q.getDimSize(0))
    return emitOptionalError(loc, "batch sizes differ: query ",
                             q.getDimSize(0), ", key ", k.getDimSize(0),
                             ", value ", v.getDimSize(0));
  if (k.getDimSize(1) != v.getDimSize(1))
    return emitOptionalError(loc, "key has ", k.getDimSize(1),
                             " heads but value has ", v.getDimSize(1));
  int64_t heads = q.getDimSize(1), kvHeads = k.getDimSize(1);
  if (kvHeads == 0 || heads % kvHeads != 0)
    return emitOptionalError(loc, "query heads ", heads,
                             " is not divisible by ", kvHeads,
                             " key/value heads");
  if (k.getDimSize(2) != v.getDimSize(2))
    return emitOptionalError(loc, "key length ", k.getDimSize(2),
                             " differs from value length ", v.getDimSize(2));
  if (k.getDimSize(3) != q.getDimSize(3))
    return emitOptionalError(loc, "key head_dim ", k.getDimSize(3),
                             " differs from query head_dim ", q.getDimSize(3));
  double rate = adaptor.getDropoutRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOptionalError(loc, "dropout rate ", rate,
                             " is outside [0, 1)");
  if (!(adaptor.getScale().convertToDouble() > 0.0))
    return emitOptionalError(loc, "scale must be positive but is ",
                             adaptor.getScale().convertToDouble());
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), heads, q.getDimSize(2), v.getDimSize(3)},
      q.getElementType()));
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
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError() << "theta must be positive but is "
                         << getTheta().convertToDouble();
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
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != labels.getShape())
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
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << shapeOf(getInput()) << " ("
                         << in.getNumElements() << " elements) to "
                         << shapeOf(getResult()) << " ("
                         << out.getNumElements() << " elements)";
  return success();
}

LogicalResult
TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferred) {
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
  auto input = tensorType(adaptor.getInput());
  int64_t dim = adaptor.getDimAttr().getInt();
  if (failed(checkDim(loc, dim, input.getRank())))
    return failure();
  int64_t repeats = adaptor.getRepeatsAttr().getInt();
  if (repeats < 1)
    return emitOptionalError(loc, "repeats must be at least 1 but is ",
                             repeats);
  SmallVector<int64_t> shape(input.getShape());
  shape[dim] *= repeats;
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
