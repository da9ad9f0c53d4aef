//===- tpc-import.cpp - Hugging Face config.json -> tpc IR ----------------===//

#include "tpc/Import/ModelBuilder.h"
#include "tpc/Tools/ToolSupport.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tpc;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpc-import options");

/// Choice flags whose errors read `--<flag>: <why>`, like the config errors.
template <typename T>
struct ChoiceParser : cl::parser<T> {
  using cl::parser<T>::parser;
  bool parse(cl::Option &, llvm::StringRef name, llvm::StringRef arg,
             T &value) {
    std::string choices;
    for (const auto &option : this->Values) {
      if (option.Name == arg) {
        value = option.V.getValue();
        return false;
      }
      choices += (choices.empty() ? "" : ", ") + option.Name.str();
    }
    commandLineErrorStream() << "--" << name << ": '" << arg
                   << "' is not one of " << choices << "\n";
    return true;
  }
};

static cl::opt<std::string>
    inputPath(cl::Positional, cl::Required,
              cl::desc("<config.json | model directory>"),
              cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: "
                                                     "stdout)"),
                                       cl::value_desc("model.mlir"),
                                       cl::init("-"), cl::cat(category));
static cl::opt<std::string> batch("batch",
                              cl::desc("Global batch size, a positive integer "
                                       "(default 1)"),
                              cl::value_desc("B"), cl::init("1"),
                              cl::cat(category));
static cl::opt<std::string> seq("seq",
                            cl::desc("Sequence length, at most the config's "
                                     "maximum number of positions (default: "
                                     "that maximum)"),
                            cl::value_desc("S"), cl::cat(category));
static cl::opt<std::string>
    numLayers("num-layers",
              cl::desc("Number of transformer layers, a positive integer "
                       "overriding the config (quick experiments)"),
              cl::value_desc("N"), cl::cat(category));
static cl::opt<ElementDtype, false, ChoiceParser<ElementDtype>> dtype(
    "dtype",
    cl::desc("Element type of parameters and activations (token ids and "
             "labels stay i64, the loss f32)"),
    cl::values(clEnumValN(ElementDtype::F32, "fp32", "32-bit float (default)"),
               clEnumValN(ElementDtype::BF16, "bf16", "bfloat16")),
    cl::init(ElementDtype::F32), cl::cat(category));
static cl::opt<AttentionForm, false, ChoiceParser<AttentionForm>> attention(
    "attention", cl::desc("How attention is expressed"),
    cl::values(clEnumValN(AttentionForm::Fused, "fused",
                          "one tpc.attention op per layer (default)"),
               clEnumValN(AttentionForm::Unfused, "unfused",
                          "Megatron-style chain: QK^T with the scale folded "
                          "in, causal softmax, dropout, times V")),
    cl::init(AttentionForm::Fused), cl::cat(category));
static cl::opt<std::string>
    dropout("dropout",
            cl::desc("Override every dropout rate of the config with P, "
                     "0 <= P < 1 (0 removes every dropout op)"),
            cl::value_desc("P"), cl::cat(category));
static cl::opt<ModelOutput, false, ChoiceParser<ModelOutput>> output(
    "output", cl::desc("What @forward returns"),
    cl::values(clEnumValN(ModelOutput::Loss, "loss",
                          "the mean loss (default)"),
               clEnumValN(ModelOutput::Logits, "logits",
                          "the mean loss and the logits")),
    cl::init(ModelOutput::Loss), cl::cat(category));

/// Reads the numeric flag `flag` when given; its range is checked with the
/// config (parseModelConfig).
template <typename T>
static llvm::Error readNumber(const cl::opt<std::string> &flag,
                              std::optional<T> &value) {
  if (!flag.getNumOccurrences())
    return llvm::Error::success();
  llvm::StringRef text = llvm::StringRef(flag).trim();
  T parsed;
  bool bad;
  if constexpr (std::is_integral_v<T>)
    bad = text.getAsInteger(10, parsed);
  else
    bad = text.getAsDouble(parsed);
  if (bad)
    return llvm::createStringError(
        "--" + flag.ArgStr + ": '" + flag + "' is not " +
        (std::is_integral_v<T> ? "an integer in the range of int64"
                               : "a number"));
  value = parsed;
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!parseToolCommandLine(
          argc, argv,
          "tpc-import: Hugging Face config.json (gpt2, llama, mistral, "
          "qwen2) -> tpc IR\n\n"
          "Emits func.func @forward(params..., %input_ids, %labels) returning "
          "the loss\n(and the logits with --output logits). Parameters carry "
          "their Hugging Face\nnames (tpc.param); ops of transformer layer N "
          "carry tpc.layer = N.\n\n<config.json> is a Hugging Face config.json "
          "(model_type gpt2, llama, mistral\nor qwen2; - reads stdin), or a "
          "model directory (save_pretrained's) holding\none. Keys the importer "
          "does not use are ignored. A config's torch_dtype is\nnoted on "
          "stderr when it differs from --dtype (the default stays fp32, as\n"
          "from_pretrained loads). Errors are printed as `error: <field>: "
          "<why>` with exit\nstatus 1.\n"))
    return 1;

  ImportOptions options;
  std::optional<int64_t> batchValue;
  if (llvm::Error err = readNumber(batch, batchValue))
    return reportError(llvm::toString(std::move(err)));
  if (llvm::Error err = readNumber(seq, options.seq))
    return reportError(llvm::toString(std::move(err)));
  if (llvm::Error err = readNumber(numLayers, options.numLayers))
    return reportError(llvm::toString(std::move(err)));
  if (llvm::Error err = readNumber(dropout, options.dropout))
    return reportError(llvm::toString(std::move(err)));
  options.batch = batchValue.value_or(1);
  options.dtype = dtype;
  options.attention = attention;
  options.output = output;

  // A model directory (save_pretrained's) holds its config.json.
  std::string path = inputPath;
  if (path != "-" && llvm::sys::fs::is_directory(path)) {
    llvm::SmallString<256> file(path);
    llvm::sys::path::append(file, "config.json");
    if (!llvm::sys::fs::exists(file))
      return reportError(path + ": a directory without a config.json");
    path = file.str().str();
  }
  llvm::Expected<ModelConfig> config = parseModelConfigFile(path, options);
  if (!config)
    return reportError(llvm::toString(config.takeError()));
  // from_pretrained loads fp32 whatever the config says; say so when the
  // config names another type than the one imported.
  StringRef wanted = options.dtype == ElementDtype::BF16 ? "bfloat16"
                                                         : "float32";
  if (!config->torchDtype.empty() && config->torchDtype != wanted)
    llvm::errs() << "tpc-import: note: " << path << " has torch_dtype "
                 << config->torchDtype << "; importing as "
                 << (options.dtype == ElementDtype::BF16 ? "bf16" : "fp32")
                 << " (--dtype "
                 << (options.dtype == ElementDtype::BF16 ? "fp32" : "bf16")
                 << " for "
                 << (options.dtype == ElementDtype::BF16 ? "float32"
                                                         : "bfloat16")
                 << ")\n";

  MLIRContext context;
  OwningOpRef<ModuleOp> module = buildModel(context, *config, options);
  if (failed(verify(*module)))
    return reportError("internal error: the imported module does not verify");

  return printModuleToFile(*module, outputPath);
}
