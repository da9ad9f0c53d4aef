//===- Report.cpp - tpc-compile --report ----------------------------------===//

#include "tpc/Target/Report.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::tpc;

LogicalResult mlir::tpc::writeReport(const CompileReport &report,
                                     StringRef path, Location loc) {
  namespace json = llvm::json;
  auto comm = [](const CommBytes &bytes) {
    return json::Object{{"all_reduce", bytes.allReduce},
                        {"all_gather", bytes.allGather},
                        {"reduce_scatter", bytes.reduceScatter}};
  };
  json::Array stages;
  for (auto [i, figures] : llvm::enumerate(report.stages)) {
    json::Object commPerMicrobatch = comm(figures.commPerMicrobatch);
    commPerMicrobatch["p2p"] = figures.commPerMicrobatch.p2p;
    json::Object stage{
        {"stage", static_cast<int64_t>(i)},
        {"layers", json::Array{figures.firstLayer, figures.lastLayer}},
        {"param_bytes", figures.paramBytes},
        {"grad_bytes", figures.gradBytes},
        {"optimizer_bytes", figures.optimizerBytes},
        {"peak_activation_bytes", figures.peakActivationBytes},
        {"peak_bytes", figures.peakBytes},
        {"flops_per_microbatch", figures.flopsPerMicrobatch},
        {"remat", figures.remat},
        {"recompute_flops_per_microbatch", figures.recomputeFlopsPerMicrobatch},
        {"masked_flops_per_microbatch", figures.maskedFlopsPerMicrobatch},
        {"stash_bytes_per_microbatch", figures.stashBytesPerMicrobatch},
        {"comm_bytes_per_microbatch", std::move(commPerMicrobatch)},
        {"comm_bytes_per_step", comm(figures.commPerStep)}};
    if (!figures.pools.empty()) {
      json::Array pools;
      for (const StageFigures::Pool &pool : figures.pools) {
        json::Array functions;
        for (const std::string &name : pool.functions)
          functions.push_back(name);
        pools.push_back(json::Object{{"functions", std::move(functions)},
                                     {"slots", pool.slots},
                                     {"slot_bytes", pool.slotBytes}});
      }
      stage["pools"] = std::move(pools);
    }
    // Virtual stages: "layers" spans the chunks; each chunk's own range.
    if (figures.chunkLayers.size() > 1) {
      json::Array chunks;
      for (auto [first, last] : figures.chunkLayers)
        chunks.push_back(json::Array{first, last});
      stage["chunk_layers"] = std::move(chunks);
    }
    stages.push_back(std::move(stage));
  }
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
      {"schedule", report.schedule},
      {"microbatches", report.microbatches},
      {"virtual_stages", report.virtualStages},
      {"remat", report.remat},
      {"per_layer",
       json::Object{{"activation_bytes", report.activationBytesPerLayer}}},
      {"stages", std::move(stages)}};
  if (const std::optional<StepPrediction> &p = report.predicted) {
    json::Array perStage;
    for (auto [i, stage] : llvm::enumerate(p->stages)) {
      json::Object kernels;
      for (const auto &[kind, seconds] : stage.kernelSeconds)
        kernels[kind] = seconds;
      json::Object prices;
      for (const auto &[kind, price] : stage.kernelPrices)
        prices[kind] = price;
      perStage.push_back(json::Object{
          {"stage", static_cast<int64_t>(i)},
          {"compute_s", stage.computeSeconds},
          {"recompute_s", stage.recomputeSeconds},
          {"communication_s", stage.communicationSeconds},
          {"idle_s", stage.idleSeconds},
          {"overlapped_communication_s", stage.overlappedCommunicationSeconds},
          {"peak_bytes", stage.peakBytes},
          {"kernel_s", std::move(kernels)},
          {"kernel_prices", std::move(prices)}});
    }
    root["predicted"] = json::Object{
        {"hardware", p->hardware},
        {"hardware_file", p->hardwarePath},
        {"step_time_s", p->stepSeconds},
        {"bubble_fraction", p->bubbleFraction},
        {"mfu", p->mfu},
        {"hfu", p->hfu},
        {"tflops_per_gpu", p->tflopsPerDevice},
        {"stages", std::move(perStage)}};
    if (p->deviceFusions) {
      json::Array groups, batches;
      for (const std::vector<int64_t> &group : *p->deviceFusions)
        groups.push_back(json::Array(group));
      for (const std::vector<int64_t> &batch : p->deviceBatches)
        batches.push_back(json::Array(batch));
      root["predicted"].getAsObject()->try_emplace(
          "device_fusions",
          json::Object{{"groups", std::move(groups)},
                       {"batches", std::move(batches)},
                       {"squares_in_updates", json::Array(p->squaresInUpdates)},
                       {"bytes_not_moved", p->fusedBytesNotMoved},
                       {"refused", json::Array(p->fusionRefusals)}});
    }
  }

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError(loc) << "--report: " << error;
  file->os() << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  file->keep();
  return success();
}
