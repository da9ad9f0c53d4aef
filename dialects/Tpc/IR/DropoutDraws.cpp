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
/// output's (the query's), the keys' length is whole.
DropoutDraw probabilitiesOf(Value query, Value key, Value block) {
  ArrayRef<int64_t> q = cast<RankedTensorType>(query.getType()).getShape();
  int64_t keys = cast<RankedTensorType>(key.getType()).getDimSize(2);
  return DropoutDraw{block, {q[0], q[1], q[2], keys}, 3};
}

} // namespace

DropoutDraw DropoutOp::getDropoutDraw() {
  return maskOf(getResult(), Value());
}

DropoutDraw DropoutMaskOp::getDropoutDraw() {
  return maskOf(getResult(), getBlock());
}

DropoutDraw AttentionOp::getDropoutDraw() {
  return probabilitiesOf(getQuery(), getKey(), getBlock());
}

DropoutDraw AttentionGradOp::getDropoutDraw() {
  return probabilitiesOf(getQuery(), getKey(), getBlock());
}
