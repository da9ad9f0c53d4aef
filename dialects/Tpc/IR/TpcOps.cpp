//===- TpcOps.cpp - tpc op verifiers and type inference -------------------===//
//
// Every check names the bad value: a user reading the diagnostic should not
// need to open the IR to see what went wrong.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/IR/TpcVerify.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tpc;

using namespace mlir::tpc::checks;

LogicalResult checks::checkSameElementType(Reporter report, Value ref,
                                           StringRef refName, Value other,
                                           StringRef otherName) {
  Type refType = tensorType(ref).getElementType();
  Type otherType = tensorType(other).getElementType();
  if (refType == otherType)
    return success();
  return report(otherName, " element type ", otherType, " differs from the ",
                refName, " element type ", refType);
}

LogicalResult checks::checkOperandType(std::optional<Location> loc, Value v,
                                       StringRef name, bool index) {
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

FailureOr<RankedTensorType> checks::checkInputDim(std::optional<Location> loc,
                                                  Value input,
                                                  IntegerAttr dimAttr) {
  if (failed(checkOperandType(loc, input, "input")))
    return failure();
  auto type = tensorType(input);
  int64_t dim = dimAttr.getInt();
  if (dim < 0 || dim >= type.getRank())
    return emitOptionalError(loc, "dim ", dim, " is out of range for rank ",
                             type.getRank());
  return type;
}

LogicalResult checks::checkRepeats(std::optional<Location> loc,
                                   int64_t repeats) {
  if (repeats < 1)
    return emitOptionalError(loc, "repeats must be at least 1 but is ",
                             repeats);
  return success();
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

LogicalResult checks::verifyNormParam(Operation *op, Value input, Value param,
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

LogicalResult checks::verifyEpsilon(Operation *op, double epsilon) {
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

LogicalResult checks::verifyDropoutRate(Operation *op, double rate) {
  if (rate >= 0.0 && rate < 1.0)
    return success();
  return op->emitOpError() << "dropout rate " << rate
                           << " is outside [0, 1)";
}

LogicalResult checks::verifyDropoutStream(Operation *op, int64_t stream) {
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

/// Whether `attr` is a splat of +0.0 or -0.0.
static bool isZeroSplat(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  return splat && isa<FloatType>(splat.getElementType()) &&
         splat.getSplatValue<APFloat>().isZero();
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + 0 = x; only where x already has the result's type (a broadcast rhs
  // is not the result).
  if (isZeroSplat(adaptor.getRhs()))
    return getLhs();
  if (isZeroSplat(adaptor.getLhs()) && getRhs().getType() == getType())
    return getRhs();
  return {};
}
LogicalResult MulOp::verify() {
  return verifyBroadcastBinary(*this, getLhs(), getRhs());
}

//===----------------------------------------------------------------------===//
// AttentionOp, RotaryOp
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType>
 checks::inferAttentionType(std::optional<Location> loc, Value query, Value key,
                           Value value, bool seqMajor) {
  if (failed(checkOperandType(loc, query, "query")) ||
      failed(checkOperandType(loc, key, "key")) ||
      failed(checkOperandType(loc, value, "value")))
    return failure();
  auto q = tensorType(query);
  auto k = tensorType(key);
  auto v = tensorType(value);
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"query", q},
                            {"key", k},
                            {"value", v}})
    if (type.getRank() != 4)
      return emitOptionalError(loc, name, " must be ",
                               attentionLayoutText(seqMajor),
                               " but has shape ", ShapeStr{type.getShape()});
  const unsigned headsDim = attentionHeadsDim(seqMajor),
                 seqDim = attentionSeqDim(seqMajor);
  if (failed(checkSameElementType(loc, query, "query", key, "key")) ||
      failed(checkSameElementType(loc, query, "query", value, "value")))
    return failure();
  if (k.getDimSize(0) != q.getDimSize(0) || v.getDimSize(0) != q.getDimSize(0))
    return emitOptionalError(loc, "batch sizes differ: query ",
                             q.getDimSize(0), ", key ", k.getDimSize(0),
                             ", value ", v.getDimSize(0));
  if (k.getDimSize(headsDim) != v.getDimSize(headsDim))
    return emitOptionalError(loc, "key has ", k.getDimSize(headsDim),
                             " heads but value has ", v.getDimSize(headsDim));
  int64_t heads = q.getDimSize(headsDim), kvHeads = k.getDimSize(headsDim);
  if (kvHeads == 0)
    return emitOptionalError(loc, "key and value have 0 heads");
  if (heads % kvHeads != 0)
    return emitOptionalError(loc, "query heads ", heads,
                             " is not divisible by ", kvHeads,
                             " key/value heads");
  if (k.getDimSize(seqDim) != v.getDimSize(seqDim))
    return emitOptionalError(loc, "key length ", k.getDimSize(seqDim),
                             " differs from value length ",
                             v.getDimSize(seqDim));
  if (k.getDimSize(3) != q.getDimSize(3))
    return emitOptionalError(loc, "key head_dim ", k.getDimSize(3),
                             " differs from query head_dim ", q.getDimSize(3));
  SmallVector<int64_t> shape = {q.getDimSize(0), heads, q.getDimSize(seqDim),
                                v.getDimSize(3)};
  if (seqMajor)
    std::swap(shape[1], shape[2]);
  return RankedTensorType::get(shape, q.getElementType());
}

LogicalResult AttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  // Attributes are checked by the verifier: while parsing, the default-valued
  // ones are still unset here.
  FailureOr<RankedTensorType> type =
      inferAttentionType(loc, adaptor.getQuery(), adaptor.getKey(),
                         adaptor.getValue(), adaptor.getSeqMajor());
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  if (adaptor.getWithLse())
    inferred.push_back(attentionLseType(*type, adaptor.getSeqMajor()));
  return success();
}

RankedTensorType checks::attentionLseType(RankedTensorType result,
                                          bool seqMajor) {
  int64_t seqDim = attentionSeqDim(seqMajor),
          headsDim = attentionHeadsDim(seqMajor);
  return RankedTensorType::get({result.getDimSize(0),
                                result.getDimSize(headsDim),
                                result.getDimSize(seqDim)},
                               Float32Type::get(result.getContext()));
}

LogicalResult checks::verifyAttentionAttrs(Operation *op, double scale,
                                           double rate, int64_t stream,
                                           bool causal, bool hasBlock,
                                           int64_t queries, int64_t keys) {
  if (!(scale > 0.0 && std::isfinite(scale)))
    return op->emitOpError() << "scale must be positive and finite but is "
                             << scale;
  if (failed(verifyDropoutRate(op, rate)) ||
      failed(verifyDropoutStream(op, stream)))
    return failure();
  // The custom form prints the stream only together with a non-zero rate.
  if (rate == 0.0 && stream != 0)
    return op->emitOpError() << "dropout stream " << stream
                             << " is set but the dropout rate is 0";
  if (rate == 0.0 && hasBlock)
    return op->emitOpError()
           << "a dropout block is set but the dropout rate is 0";
  if (causal)
    return verifyCausalLengths(op, queries, keys);
  return success();
}

LogicalResult AttentionOp::verify() {
  return verifyAttentionAttrs(
      *this, getScale().convertToDouble(), getDropoutRate().convertToDouble(),
      getDropoutStreamAttr().getInt(), getCausal(), !!getBlock(),
      getQuery().getType().getDimSize(getSeqDim()),
      getKey().getType().getDimSize(getSeqDim()));
}

LogicalResult checks::verifyRotary(Operation *op, RankedTensorType type,
                                   double theta,
                                   std::optional<ArrayRef<double>> scaling,
                                   int64_t offset, bool seqMajor) {
  if (type.getRank() != 4)
    return op->emitOpError()
           << "input must be " << attentionLayoutText(seqMajor)
           << " but has shape " << ShapeStr{type.getShape()};
  if (type.getDimSize(3) % 2 != 0)
    return op->emitOpError() << "head_dim " << type.getDimSize(3)
                             << " must be even for rotate-half";
  if (!(theta > 0.0 && std::isfinite(theta)))
    return op->emitOpError() << "theta must be positive and finite but is "
                             << theta;
  if (offset < 0)
    return op->emitOpError() << "position offset " << offset
                             << " is negative";
  if (!scaling)
    return success();
  ArrayRef<double> s = *scaling;
  auto positive = [](double x) { return x > 0.0 && std::isfinite(x); };
  if (s.size() != 1 && s.size() != 4)
    return op->emitOpError()
           << "scaling has " << s.size()
           << " values, expected [factor] (linear) or [factor, "
              "low_freq_factor, high_freq_factor, original_max_positions] "
              "(llama3)";
  if (!positive(s[0]))
    return op->emitOpError() << "scaling factor " << s[0]
                             << " must be positive and finite";
  if (s.size() == 4 && !(positive(s[1]) && positive(s[3]) &&
                         std::isfinite(s[2]) && s[2] > s[1]))
    return op->emitOpError()
           << "llama3 scaling needs high_freq_factor (" << s[2]
           << ") > low_freq_factor (" << s[1]
           << ") > 0 and original_max_positions (" << s[3] << ") > 0";
  return success();
}

LogicalResult RotaryOp::verify() {
  return verifyRotary(*this, getInput().getType(),
                      getTheta().convertToDouble(), getScaling(),
                      getOffsetAttr().getInt(), getSeqMajor());
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult checks::verifyLogitsLabels(Operation *op, Value logits,
                                         Value labels) {
  auto logitsType = tensorType(logits);
  if (logitsType.getRank() < 1)
    return op->emitOpError() << "logits must have a vocabulary dimension but "
                                "are a scalar "
                             << logitsType;
  if (logitsType.getShape().drop_back() != tensorType(labels).getShape())
    return op->emitOpError()
           << "labels shape " << shapeOf(labels) << " must be the logits shape "
           << shapeOf(logits) << " without its vocabulary dimension";
  return success();
}

LogicalResult checks::verifyVocab(Operation *op, Value logits,
                                  std::optional<int64_t> vocab,
                                  std::optional<int64_t> blocks) {
  if (blocks && *blocks < 1)
    return op->emitOpError() << "blocks " << *blocks << " must be positive";
  if (!vocab)
    return success();
  int64_t columns = tensorType(logits).getShape().back();
  if (*vocab < 1)
    return op->emitOpError() << "vocab " << *vocab << " must be positive";
  // The logits may hold one block of the vocabulary; vocab counts all
  // (blocks near 2^63 overflowed the product: found by test/fuzz; beyond
  // int64 it holds any vocab).
  int64_t whole;
  if (!llvm::MulOverflow(columns, blocks.value_or(1), whole) &&
      *vocab > whole)
    return op->emitOpError()
           << "vocab " << *vocab << " exceeds the logits' " << columns
           << " columns" << (blocks ? " x " + std::to_string(*blocks) + " blocks" : "");
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyLogitsLabels(*this, getLogits(), getLabels())))
    return failure();
  return verifyVocab(*this, getLogits(), getVocab(), getVocabBlocks());
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
  FailureOr<RankedTensorType> input =
      checkInputDim(loc, adaptor.getInput(), adaptor.getDimAttr());
  if (failed(input))
    return failure();
  int64_t dim = adaptor.getDimAttr().getInt();
  int64_t offset = adaptor.getOffsetAttr().getInt(),
          size = adaptor.getSizeAttr().getInt();
  int64_t extent = input->getDimSize(dim);
  if (offset < 0 || size <= 0 || offset > extent || size > extent - offset)
    return emitOptionalError(loc, "slice [", offset, " : ", size,
                             "] (offset : size) is out of bounds for dim ", dim,
                             " of size ", extent);
  inferred.push_back(withDimSize(*input, dim, size));
  return success();
}

LogicalResult RepeatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input =
      checkInputDim(loc, adaptor.getInput(), adaptor.getDimAttr());
  if (failed(input))
    return failure();
  int64_t dim = adaptor.getDimAttr().getInt();
  int64_t repeats = adaptor.getRepeatsAttr().getInt();
  if (failed(checkRepeats(loc, repeats)))
    return failure();
  int64_t size;
  if (llvm::MulOverflow(input->getDimSize(dim), repeats, size))
    return emitOptionalError(loc, "repeating dim ", dim, " of size ",
                             input->getDimSize(dim), " ", repeats,
                             " times overflows a 64-bit size");
  inferred.push_back(withDimSize(*input, dim, size));
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
