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
