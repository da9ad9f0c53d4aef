//===- PipelineSplit.cpp - dist-pipeline-split ----------------------------===//
//
// Which (virtual) pipeline stage computes each op of @forward: contiguous
// runs of transformer layers per chunk, balanced by matrix-product FLOPs;
// see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/Transforms/LayerBalance.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Tpc/IR/MatmulFlops.h"
#include "dialects/Tpc/IR/TpcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPIPELINESPLIT
#include "dialects/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

/// The FLOPs of each layer, and of what comes before the first layer and
/// after the last. Doubles: a large model's sums pass INT64_MAX (a 1T GPT
/// at batch 3072 has ~1e17 FLOPs per layer), and saturated sums would tie.
struct LayerCosts {
  SmallVector<double> layers;
  double before = 0, after = 0;
};

struct DistPipelineSplitPass
    : public dist::impl::DistPipelineSplitBase<DistPipelineSplitPass> {
  using Base::Base;

  InFlightDiagnostic error(Operation *at) {
    return at->emitError() << "dist-pipeline-split: ";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(run(module)))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    if (stages < 1 || virtualStages < 1)
      return error(module) << "stages (" << static_cast<int64_t>(stages)
                           << ") and virtual-stages ("
                           << static_cast<int64_t>(virtualStages)
                           << ") must be positive";
    if (placement != "round-robin" && placement != "v")
      return error(module) << "placement '" << placement
                           << "' is not one of round-robin, v";
    if (placement == "v" && virtualStages != 2)
      return error(module) << "placement v (ZB-V) needs virtual-stages=2, not "
                           << static_cast<int64_t>(virtualStages);
    int64_t chunks = stages * virtualStages;
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal() || !forward.getBody().hasOneBlock())
      return error(module) << "no func.func @forward with a body";
    Block &body = forward.getBody().front();

    // The layers, in order, and their costs.
    LayerCosts costs;
    int64_t lastSeen = -1;
    for (Operation &op : body.without_terminator()) {
      auto layer = op.getAttrOfType<IntegerAttr>(tpc::kLayerAttrName);
      double flops = static_cast<double>(tpc::getMatmulFlops(&op));
      if (!layer) {
        double &side = costs.layers.empty() ? costs.before : costs.after;
        side += flops;
        continue;
      }
      int64_t index = layer.getInt();
      if (index != lastSeen && index != lastSeen + 1)
        return error(&op) << "layer " << index << " follows layer " << lastSeen
                          << ": the layers must come one after another, from "
                             "0, each contiguous";
      if (index == lastSeen + 1) {
        // Untagged ops between two layers count with the later one, whose
        // chunk reads them.
        costs.layers.push_back(costs.after);
        costs.after = 0;
      }
      lastSeen = index;
      costs.layers.back() += flops;
    }
    int64_t numLayers = costs.layers.size();
    if (numLayers == 0)
      return error(forward) << "@forward has no transformer layers ('"
                            << tpc::kLayerAttrName << "') to split";

    SmallVector<int64_t> counts;
    if (!stageLayers.empty()) {
      if (static_cast<int64_t>(stageLayers.size()) != chunks)
        return error(module)
               << "stage-layers has " << stageLayers.size()
               << " counts, but there are " << chunks << " chunks (stages "
               << static_cast<int64_t>(stages) << " x virtual-stages "
               << static_cast<int64_t>(virtualStages) << ")";
      int64_t sum = 0;
      for (auto [chunk, count] : llvm::enumerate(stageLayers)) {
        if (count < 1)
          return error(module) << "stage-layers: chunk " << chunk << " has "
                               << count << " layers; each needs at least one";
        sum += count;
      }
      if (sum != numLayers)
        return error(module) << "stage-layers add up to " << sum
                             << " layers, but @forward has " << numLayers;
      counts.assign(stageLayers.begin(), stageLayers.end());
    } else {
      if (numLayers < chunks)
        return error(module)
               << "cannot split " << numLayers << " layers into " << chunks
               << " chunks (stages " << static_cast<int64_t>(stages)
               << " x virtual-stages " << static_cast<int64_t>(virtualStages)
               << "): each needs at least one layer";
      counts = llvm::to_vector(pipeline::balanceLayers(
          std::vector<double>(costs.layers.begin(), costs.layers.end()),
          costs.before, costs.after, chunks));
    }

    // The chunk of each layer, then of every op: a layer's ops its chunk's,
    // another op its first reader's (the last chunk if only the return reads
    // it), walking backwards so that readers are decided first.
    SmallVector<int64_t> chunkOfLayer;
    for (auto [chunk, count] : llvm::enumerate(counts))
      chunkOfLayer.append(count, static_cast<int64_t>(chunk));
    DenseMap<Operation *, int64_t> chunkOf;
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      int64_t chunk = chunks - 1;
      if (auto layer = op->getAttrOfType<IntegerAttr>(tpc::kLayerAttrName)) {
        chunk = chunkOfLayer[layer.getInt()];
      } else {
        for (Operation *user : op->getUsers())
          if (auto it = chunkOf.find(user); it != chunkOf.end())
            chunk = std::min(chunk, it->second);
      }
      chunkOf[op] = chunk;
    }
    // Activations flow forward only.
    for (Operation *op : ops)
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && chunkOf.lookup(def) > chunkOf.lookup(op))
          return error(op) << "reads a value of chunk " << chunkOf.lookup(def)
                           << " from chunk " << chunkOf.lookup(op)
                           << ": data would flow backwards through the pipeline";

    Builder builder(module.getContext());
    SmallVector<int64_t> ranks, layers, flops(chunks, 0);
    for (int64_t chunk = 0, first = 0; chunk < chunks; ++chunk) {
      ranks.push_back(placement == "v" && chunk >= stages
                          ? 2 * stages - 1 - chunk
                          : chunk % stages);
      layers.append({first, first + counts[chunk] - 1});
      first += counts[chunk];
    }
    for (Operation *op : ops) {
      int64_t chunk = chunkOf.lookup(op);
      op->setAttr(kStageAttrName, builder.getI64IntegerAttr(chunk));
      flops[chunk] = tpc::addFlops(flops[chunk], tpc::getMatmulFlops(op));
    }
    module->setAttr(
        kPipelineAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("stages", builder.getI64IntegerAttr(stages)),
            builder.getNamedAttr("virtual_stages",
                                 builder.getI64IntegerAttr(virtualStages)),
            builder.getNamedAttr("placement",
                                 builder.getStringAttr(placement)),
            builder.getNamedAttr("ranks", builder.getDenseI64ArrayAttr(ranks)),
            builder.getNamedAttr("layers",
                                 builder.getDenseI64ArrayAttr(layers)),
            builder.getNamedAttr("flops", builder.getDenseI64ArrayAttr(flops)),
        }));
    return success();
  }
};

} // namespace
