//===- DropoutDraws.cpp - what the dropout-drawing ops draw ---------------===//
//
// TpcDropoutDrawOpInterface: the shape each op draws from the dropout
// stream, for tpc-lower-to-rt's splits and first index.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tpc/IR/TpcOps.h"

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// A mask of the first result's shape, all of it split like the result.
DropoutDraw maskOf(Value result, Value block) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(result.getType()).getShape();
  return DropoutDraw{block, SmallVector<int64_t>(shape),
                     static_cast<unsigned>(shape.size())};
}

/// Attention's probabilities [b, h, sq, sk]: the first three are the
/// output's (the query's: dims 0, 2, 1 when sequence-major), the keys'
/// length is whole.
DropoutDraw probabilitiesOf(Value query, Value key, Value block,
                            bool seqMajor) {
  ArrayRef<int64_t> q = cast<RankedTensorType>(query.getType()).getShape();
  const unsigned headsDim = attentionHeadsDim(seqMajor),
                 seqDim = attentionSeqDim(seqMajor);
  int64_t keys = cast<RankedTensorType>(key.getType()).getDimSize(seqDim);
  DropoutDraw draw{block, {q[0], q[headsDim], q[seqDim], keys}, 3};
  if (seqMajor)
    draw.resultDims = {0, headsDim, seqDim};
  return draw;
}

} // namespace

DropoutDraw DropoutOp::getDropoutDraw() {
  return maskOf(getResult(), Value());
}

DropoutDraw DropoutMaskOp::getDropoutDraw() {
  return maskOf(getResult(), getBlock());
}

DropoutDraw AttentionOp::getDropoutDraw() {
  return probabilitiesOf(getQuery(), getKey(), getBlock(), getSeqMajor());
}

DropoutDraw AttentionGradOp::getDropoutDraw() {
  return probabilitiesOf(getQuery(), getKey(), getBlock(), getSeqMajor());
}
