//===- TpcGradOps.cpp - backward and driver op verifiers ------------------===//
//
// The shapes a backward op must have follow from the forward op it derives;
// each check names the operand and the sizes that disagree.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"
#include "dialects/Tpc/IR/TpcVerify.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tpc;
using namespace mlir::tpc::checks;

/// The result of a weight (or bias) gradient op may be any float type; the
/// inputs it reads must agree with each other.
static LogicalResult checkSameShape(Operation *op, Value ref, StringRef refName,
                                    Value other, StringRef otherName) {
  if (tensorType(ref).getShape() == tensorType(other).getShape())
    return success();
  return op->emitOpError() << otherName << " shape " << shapeOf(other)
                           << " differs from the " << refName << " shape "
                           << shapeOf(ref);
}

//===----------------------------------------------------------------------===//
// EmbeddingGradOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::verify() {
  auto grad = getGrad().getType();
  auto ids = getIds().getType();
  auto result = getResult().getType();
  if (result.getRank() != 2)
    return emitOpError() << "result must be [vocab, hidden] but has shape "
                         << shapeOf(getResult());
  int64_t hidden = result.getDimSize(1);
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(hidden);
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "grad shape " << shapeOf(getGrad())
                         << " must be the ids shape " << shapeOf(getIds())
                         << " followed by the hidden size " << hidden;
  return success();
}

//===----------------------------------------------------------------------===//
// Linear gradients
//===----------------------------------------------------------------------===//

/// The output dimensions and input size of a linear weight of `layout`.
static std::pair<ArrayRef<int64_t>, int64_t>
splitWeight(RankedTensorType weight, WeightLayout layout) {
  if (layout == WeightLayout::InOut)
    return {weight.getShape().drop_front(), weight.getDimSize(0)};
  return {weight.getShape().drop_back(),
          weight.getDimSize(weight.getRank() - 1)};
}

LogicalResult
LinearInputGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  if (failed(checkOperandType(loc, adaptor.getGrad(), "grad")) ||
      failed(checkOperandType(loc, adaptor.getWeight(), "weight")))
    return failure();
  auto grad = tensorType(adaptor.getGrad());
  auto weight = tensorType(adaptor.getWeight());
  if (weight.getRank() < 2)
    return emitOptionalError(loc,
                             "weight must have at least 2 dimensions but "
                             "has shape ",
                             ShapeStr{weight.getShape()});
  if (failed(checkSameElementType(loc, adaptor.getGrad(), "grad",
                                  adaptor.getWeight(), "weight")))
    return failure();
  WeightLayout layout =
      adaptor.getLayoutAttr() ? adaptor.getLayout() : WeightLayout::InOut;
  auto [outDims, in] = splitWeight(weight, layout);
  ArrayRef<int64_t> gradShape = grad.getShape();
  if (gradShape.size() < outDims.size() ||
      gradShape.take_back(outDims.size()) != outDims)
    return emitOptionalError(loc, "grad shape ", ShapeStr{gradShape},
                             " does not end with the weight's output "
                             "dimensions ",
                             ShapeStr{outDims}, " (weight shape ",
                             ShapeStr{weight.getShape()}, ", layout ",
                             stringifyWeightLayout(layout), ")");
  SmallVector<int64_t> shape(gradShape.drop_back(outDims.size()));
  shape.push_back(in);
  inferred.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

LogicalResult LinearWeightGradOp::verify() {
  auto input = getInput().getType();
  auto grad = getGrad().getType();
  if (input.getRank() < 1)
    return emitOpError() << "input must have a feature dimension but is a "
                            "scalar";
  if (failed(checkSameElementType(getOperation(), getInput(), "input",
                                  getGrad(), "grad")))
    return failure();
  ArrayRef<int64_t> lead = input.getShape().drop_back();
  if (grad.getRank() <= input.getRank() - 1 ||
      grad.getShape().take_front(lead.size()) != lead)
    return emitOpError() << "grad shape " << shapeOf(getGrad())
                         << " must be the input's leading dimensions "
                         << ShapeStr{lead} << " followed by output dimensions";
  ArrayRef<int64_t> outDims = grad.getShape().drop_front(lead.size());
  SmallVector<int64_t> expected;
  if (getLayout() == WeightLayout::InOut) {
    expected.push_back(input.getShape().back());
    llvm::append_range(expected, outDims);
  } else {
    llvm::append_range(expected, outDims);
    expected.push_back(input.getShape().back());
  }
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << shapeOf(getResult())
                         << " is not the " << stringifyWeightLayout(getLayout())
                         << " weight shape " << ShapeStr{expected};
  return success();
}

LogicalResult SumToOp::verify() {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  if (out.size() > in.size() || in.take_back(out.size()) != out)
    return emitOpError() << "result shape " << ShapeStr{out}
                         << " is not a suffix of the input shape "
                         << ShapeStr{in};
  return success();
}

//===----------------------------------------------------------------------===//
// Norm gradients
//===----------------------------------------------------------------------===//

/// A `[hidden]` parameter gradient of a norm over `input`.
static LogicalResult verifyNormParamGrad(Operation *op, Value input,
                                         Value result, StringRef name) {
  auto type = tensorType(input);
  if (type.getRank() < 1)
    return op->emitOpError() << "input must have at least one dimension to "
                                "normalize but is a scalar "
                             << type;
  int64_t hidden = type.getShape().back();
  if (tensorType(result).getShape() != ArrayRef<int64_t>{hidden})
    return op->emitOpError()
           << name << " shape " << shapeOf(result)
           << " does not match the normalized dimension " << hidden;
  return success();
}

LogicalResult LayerNormInputGradOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getWeight(), "weight")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult LayerNormParamGradOp::verify() {
  if (failed(verifyNormParamGrad(*this, getInput(), getWeightGrad(),
                                 "weight_grad")) ||
      failed(
          verifyNormParamGrad(*this, getInput(), getBiasGrad(), "bias_grad")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult RmsNormInputGradOp::verify() {
  if (failed(verifyNormParam(*this, getInput(), getWeight(), "weight")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult RmsNormParamGradOp::verify() {
  if (failed(verifyNormParamGrad(*this, getInput(), getResult(), "result")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult SoftmaxGradOp::verify() {
  if (getOutput().getType().getRank() < 1)
    return emitOpError() << "output must have at least one dimension but is a "
                            "scalar "
                         << getOutput().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

LogicalResult DropoutMaskOp::verify() {
  if (failed(verifyDropoutStream(*this, getStreamAttr().getInt())))
    return failure();
  return verifyDropoutRate(*this, getRate().convertToDouble());
}

LogicalResult ApplyMaskOp::verify() {
  if (failed(checkSameShape(*this, getInput(), "input", getMask(), "mask")))
    return failure();
  return verifyDropoutRate(*this, getRate().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Attention and rotary gradients
//===----------------------------------------------------------------------===//

LogicalResult AttentionGradOp::verify() {
  FailureOr<RankedTensorType> output =
      inferAttentionType(getLoc(), getQuery(), getKey(), getValue(),
                         getSeqMajor());
  if (failed(output))
    return failure();
  if (getGrad().getType() != *output)
    return emitOpError() << "grad type " << getGrad().getType()
                         << " differs from the attention output type "
                         << *output;
  if (!getOutput() != !getLse())
    return emitOpError() << "takes the forward's output and lse both or "
                            "neither";
  if (getOutput() && getOutput().getType() != *output)
    return emitOpError() << "saved output type " << getOutput().getType()
                         << " differs from the attention output type "
                         << *output;
  RankedTensorType lse = attentionLseType(*output, getSeqMajor());
  if (getLse() && getLse().getType() != lse)
    return emitOpError() << "saved lse type " << getLse().getType()
                         << " differs from the attention's log-sum-exp type "
                         << lse;
  return verifyAttentionAttrs(
      *this, getScale().convertToDouble(), getDropoutRate().convertToDouble(),
      getDropoutStreamAttr().getInt(), getCausal(), !!getBlock(),
      getQuery().getType().getDimSize(getSeqDim()),
      getKey().getType().getDimSize(getSeqDim()));
}

LogicalResult RotaryGradOp::verify() {
  return verifyRotary(*this, getGrad().getType(), getTheta().convertToDouble(),
                      getScaling(), getOffsetAttr().getInt(), getSeqMajor());
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyLogitsLabels(*this, getLogits(), getLabels())))
    return failure();
  return verifyVocab(*this, getLogits(), getVocab(), getVocabBlocks());
}

//===----------------------------------------------------------------------===//
// Shape gradients
//===----------------------------------------------------------------------===//

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
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
  if (offset < 0 || size < extent || offset > size - extent)
    return emitOptionalError(loc, "cannot place dim ", dim, " of size ", extent,
                             " at offset ", offset, " in a dimension of size ",
                             size);
  inferred.push_back(withDimSize(*input, dim, size));
  return success();
}

LogicalResult SumGroupsOp::inferReturnTypes(MLIRContext *,
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
  int64_t extent = input->getDimSize(dim);
  if (extent % repeats != 0)
    return emitOptionalError(loc, "dim ", dim, " of size ", extent,
                             " is not divisible into groups of ", repeats);
  inferred.push_back(withDimSize(*input, dim, extent / repeats));
  return success();
}
