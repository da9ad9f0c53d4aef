//===- tpc-import.cpp - Hugging Face config.json -> tpc IR ----------------===//

#include "tpc/Import/ModelBuilder.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::tpc;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpc-import options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<config.json>"),
                                      cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: "
                                                     "stdout)"),
                                       cl::value_desc("model.mlir"),
                                       cl::init("-"), cl::cat(category));
static cl::opt<int64_t> batch("batch",
                              cl::desc("Global batch size (default 1)"),
                              cl::init(1), cl::cat(category));
static cl::opt<int64_t> seq("seq",
                            cl::desc("Sequence length (default: the config's "
                                     "maximum number of positions)"),
                            cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    numLayers("num-layers",
              cl::desc("Number of transformer layers, overriding the config "
                       "(quick experiments)"),
              cl::init(0), cl::cat(category));
static cl::opt<ElementDtype> dtype(
    "dtype", cl::desc("Element type of parameters and activations"),
    cl::values(clEnumValN(ElementDtype::F32, "fp32", "32-bit float (default)"),
               clEnumValN(ElementDtype::BF16, "bf16", "bfloat16")),
    cl::init(ElementDtype::F32), cl::cat(category));
static cl::opt<AttentionForm> attention(
    "attention", cl::desc("How attention is expressed"),
    cl::values(clEnumValN(AttentionForm::Fused, "fused",
                          "one tpc.attention op per layer (default)"),
               clEnumValN(AttentionForm::Unfused, "unfused",
                          "Megatron-style chain: QK^T with the scale folded "
                          "in, causal softmax, dropout, times V")),
    cl::init(AttentionForm::Fused), cl::cat(category));
static cl::opt<double> dropout("dropout",
                               cl::desc("Override every dropout rate of the "
                                        "config"),
                               cl::value_desc("P"), cl::cat(category));
static cl::opt<ModelOutput> output(
    "output", cl::desc("What @forward returns"),
    cl::values(clEnumValN(ModelOutput::Loss, "loss",
                          "the mean loss (default)"),
               clEnumValN(ModelOutput::Logits, "logits",
                          "the mean loss and the logits")),
    cl::init(ModelOutput::Loss), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs()) << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tpc-import: Hugging Face config.json (gpt2, llama) -> tpc IR\n\n"
      "Emits func.func @forward(params..., %input_ids, %labels) returning the "
      "loss\n(and the logits with --output logits). Parameters carry their "
      "Hugging Face\nnames (tpc.param); ops of transformer layer N carry "
      "tpc.layer = N.\n");

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(inputPath, &error);
  if (!file)
    return fail(inputPath + ": " + error);

  ImportOptions options;
  options.batch = batch;
  options.seq = seq;
  options.numLayers = numLayers;
  options.dtype = dtype;
  options.attention = attention;
  if (dropout.getNumOccurrences())
    options.dropout = dropout;
  options.output = output;

  llvm::Expected<ModelConfig> config =
      parseModelConfig(file->getBuffer(), options);
  if (!config)
    return fail(llvm::toString(config.takeError()));

  MLIRContext context;
  OwningOpRef<ModuleOp> module = buildModel(context, *config, options);
  if (failed(verify(*module)))
    return fail("internal error: the imported module does not verify");

  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(outputPath, &error);
  if (!out)
    return fail(outputPath + ": " + error);
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return 0;
}
