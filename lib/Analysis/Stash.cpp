//===- Stash.cpp - the stash of a layer on one device ---------------------===//
//
// The stash is marked where it is computed (`tpc.stash_layer`, set by
// tpc-autodiff on @train_F); the copies of the marked ops keep the mark
// through unrolling and dist-partition, which changes their result types in
// place to one device's shard. So the stash of a device is read from the
// step that is lowered, with the layouts the compile chose for it.
//
//===----------------------------------------------------------------------===//

#include "tpc/Analysis/Report.h"

#include "MicrobatchPhases.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcDialect.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tpc;

FailureOr<SmallVector<int64_t>>
mlir::tpc::countStashBytesByLayer(func::FuncOp function, int64_t microbatches,
                                  int64_t layers) {
  MicrobatchPhases phases(function);
  SmallVector<int64_t> repeated(layers, 0), shared(layers, 0);
  WalkResult walk = function.walk([&](Operation *op) {
    auto marks = op->getAttrOfType<DenseI64ArrayAttr>(kStashLayerAttrName);
    if (!marks)
      return WalkResult::advance();
    if (static_cast<unsigned>(marks.size()) != op->getNumResults()) {
      op->emitError() << "report: '" << kStashLayerAttrName << "' has "
                      << marks.size() << " entries for " << op->getNumResults()
                      << " results";
      return WalkResult::interrupt();
    }
    for (auto [mark, result] : llvm::zip(marks.asArrayRef(), op->getResults()))
      if (mark >= 0 && mark < layers)
        (phases.of(result) == Phase::Microbatch ? repeated : shared)[mark] +=
            byteSize(result.getType());
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  SmallVector<int64_t> bytes(layers, 0);
  for (int64_t layer = 0; layer < layers; ++layer) {
    if (repeated[layer] % microbatches != 0)
      return function.emitError()
             << "report: the stash bytes of layer " << layer
             << " the microbatches repeat (" << repeated[layer]
             << ") do not divide by the " << microbatches << " microbatches";
    bytes[layer] = repeated[layer] / microbatches + shared[layer];
  }
  return bytes;
}

int64_t mlir::tpc::countReceivedStashBytes(func::FuncOp function,
                                           int64_t microbatches,
                                           int64_t stage) {
  auto readByBackward = [](Value value) {
    return llvm::any_of(value.getUsers(), [](Operation *user) {
      auto phase = user->getAttrOfType<StringAttr>(kPhaseAttrName);
      return phase && phase.getValue().starts_with("train_B");
    });
  };
  int64_t bytes = 0;
  function.walk([&](dist::RecvOp recv) {
    auto rank = recv->getAttrOfType<IntegerAttr>(dist::kPipelineRankAttrName);
    auto kind = recv->getAttrOfType<StringAttr>(dist::kTransferAttrName);
    if (rank && rank.getInt() == stage && kind &&
        kind.getValue() == "activation" && readByBackward(recv.getResult()))
      bytes += byteSize(recv.getResult().getType());
  });
  return bytes / microbatches;
}
