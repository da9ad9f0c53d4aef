//===- Report.cpp - tpc-compile --report ----------------------------------===//

#include "tpc/Target/Report.h"

#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/ToolOutputFile.h"

#include <limits>

using namespace mlir;
using namespace mlir::tpc;

namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

/// The product of `factors`, saturating at INT64_MAX.
int64_t product(std::initializer_list<int64_t> factors) {
  int64_t result = 1;
  for (int64_t factor : factors)
    if (llvm::MulOverflow(result, factor, result))
      return kSaturated;
  return result;
}

int64_t elements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// 2·m·n·k of a linear (or one of its gradients) from its input [..., k]
/// and its result (or dY), whatever the weight's layout.
int64_t linearFlops(Value input, Value output) {
  int64_t k = cast<RankedTensorType>(input.getType()).getShape().back();
  return product({2, elements(output), k});
}

/// Scores of an attention: b·h·sq·sk.
int64_t scores(Value query, Value key) {
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  return product(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), k.getDimSize(2)});
}

int64_t dimOf(Value value, int64_t dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

int64_t flopsOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([](LinearOp op) {
        return linearFlops(op.getInput(), op.getResult());
      })
      .Case([](LinearInputGradOp op) {
        return linearFlops(op.getResult(), op.getGrad());
      })
      .Case([](LinearWeightGradOp op) {
        return linearFlops(op.getInput(), op.getGrad());
      })
      .Case([](BatchMatmulOp op) {
        auto lhs = cast<RankedTensorType>(op.getLhs().getType());
        int64_t k =
            lhs.getDimSize(lhs.getRank() - (op.getTransposeLhs() ? 2 : 1));
        return product({2, elements(op.getResult()), k});
      })
      .Case([](AttentionOp op) {
        // q·kᵀ over d, p·v over dv.
        return product({2, scores(op.getQuery(), op.getKey()),
                        dimOf(op.getQuery(), 3) + dimOf(op.getValue(), 3)});
      })
      .Case([](AttentionGradOp op) {
        // The scores again, dq and dk over d; dv and dp over dv.
        return product(
            {2, scores(op.getQuery(), op.getKey()),
             3 * dimOf(op.getQuery(), 3) + 2 * dimOf(op.getValue(), 3)});
      })
      .Default([](Operation *) { return int64_t(0); });
}

} // namespace

LogicalResult mlir::tpc::readModelInfo(ModuleOp module, func::FuncOp forward,
                                       int64_t microbatches,
                                       CompileReport &report) {
  auto model = module->getAttrOfType<DictionaryAttr>("tpc.model");
  if (!model)
    return module.emitError("--report: the module has no 'tpc.model' "
                            "attribute (tpc-import writes it)");
  auto field = [&](StringRef name, int64_t &value) -> LogicalResult {
    auto attr = model.getAs<IntegerAttr>(name);
    if (!attr)
      return module.emitError()
             << "--report: 'tpc.model' has no integer '" << name << "'";
    value = attr.getInt();
    return success();
  };
  int64_t batch = 0;
  if (failed(field("layers", report.layers)) ||
      failed(field("hidden", report.hidden)) ||
      failed(field("heads", report.heads)) ||
      failed(field("seq", report.seq)) ||
      failed(field("vocab", report.vocab)) || failed(field("batch", batch)))
    return failure();
  report.microbatches = microbatches;
  report.microbatchSize = microbatches > 0 ? batch / microbatches : batch;
  // The activations' type: that of the embedding's result.
  report.dtype = "fp32";
  forward.walk([&](EmbeddingOp embedding) {
    Type element = embedding.getType().getElementType();
    report.dtype = element.isBF16()  ? "bf16"
                   : element.isF16() ? "fp16"
                                     : "fp32";
    return WalkResult::interrupt();
  });
  return success();
}

int64_t mlir::tpc::countMatmulFlops(ArrayRef<func::FuncOp> functions) {
  int64_t total = 0;
  for (func::FuncOp function : functions)
    function.walk([&](Operation *op) {
      if (llvm::AddOverflow(total, flopsOf(op), total))
        total = kSaturated;
    });
  return total;
}

LogicalResult mlir::tpc::writeReport(const CompileReport &report,
                                     StringRef path, Location loc) {
  namespace json = llvm::json;
  auto comm = [](const CommBytes &bytes) {
    return json::Object{{"all_reduce", bytes.allReduce},
                        {"all_gather", bytes.allGather},
                        {"reduce_scatter", bytes.reduceScatter}};
  };
  json::Object commPerMicrobatch = comm(report.commPerMicrobatch);
  commPerMicrobatch["p2p"] = report.commPerMicrobatch.p2p;
  json::Object stage{
      {"stage", 0},
      {"layers", json::Array{0, report.layers - 1}},
      {"param_bytes", report.paramBytes},
      {"grad_bytes", report.gradBytes},
      {"optimizer_bytes", report.optimizerBytes},
      {"peak_activation_bytes", report.peakActivationBytes},
      {"peak_bytes", report.peakBytes},
      {"flops_per_microbatch", report.flopsPerMicrobatch},
      {"comm_bytes_per_microbatch", std::move(commPerMicrobatch)},
      {"comm_bytes_per_step", comm(report.commPerStep)}};
  json::Object root{
      {"model", json::Object{{"layers", report.layers},
                             {"hidden", report.hidden},
                             {"heads", report.heads},
                             {"seq", report.seq},
                             {"vocab", report.vocab},
                             {"microbatch_size", report.microbatchSize},
                             {"dtype", report.dtype}}},
      {"mesh", json::Object{{"dp", report.dataParallel},
                            {"pp", report.pipelineParallel},
                            {"tp", report.tensorParallel}}},
      {"sequence_parallel", report.sequenceParallel},
      {"schedule", "none"},
      {"microbatches", report.microbatches},
      {"virtual_stages", 1},
      {"remat", "none"},
      {"per_layer",
       json::Object{{"activation_bytes", report.activationBytesPerLayer}}},
      {"stages", json::Array{std::move(stage)}}};

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError(loc) << "--report: " << error;
  file->os() << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  file->keep();
  return success();
}
