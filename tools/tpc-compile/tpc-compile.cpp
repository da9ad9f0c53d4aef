//===- tpc-compile.cpp - tpc IR -> .tpcx executable -----------------------===//
//
// A thin driver: flags -> tpc::CompileOptions -> the compile flow of
// tpc/Pipelines (the passes tpc-opt --tpc-compile-pipeline runs, and with
// --report the analyses of tpc/Analysis between its phases) -> the file. Flags of the user
// contract that the compiler does not implement yet are accepted by the
// parser, so that --help lists them, and then refused with an error: never
// silently ignored. So is a training flag given without --train.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/Transforms/Passes.h"
#include "tpc/Analysis/Hardware.h"
#include "tpc/Pipelines/Pipelines.h"
#include "tpc/Target/Report.h"
#include "tpc/Target/Tpcx.h"
#include "tpc/Tools/ToolSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"


using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpc-compile options");
static cl::OptionCategory
    trainCategory("Training (with --train; INTERFACE.md gives the defaults)");

static cl::opt<std::string>
    mesh("mesh",
         cl::desc("Device mesh, e.g. dp=2,pp=2,tp=2: data parallelism over "
                  "dp ranks (the batch is split), pipeline parallelism over "
                  "pp ranks (the layers are split; needs --train), Megatron "
                  "tensor parallelism over tp ranks (heads and FFN split). "
                  "The executable then runs on the product of the sizes "
                  "with tpc-run --ranks; ranks are ordered pp-major, then "
                  "dp, then tp (tp fastest), whatever the order given"),
         cl::value_desc("dp=D,pp=P,tp=T"), cl::cat(category));
static cl::opt<bool> vocabParallel(
    "vocab-parallel",
    cl::desc("With tp > 1, split the embedding and the LM head along the "
             "vocabulary (default; the vocabulary is padded to a multiple of "
             "tp x --pad-vocab, the padding masked); --vocab-parallel=false "
             "keeps them "
             "whole on every rank"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> padVocab(
    "pad-vocab",
    cl::desc("Pad the vocabulary (the LM head's rows and the embedding "
             "tables of that size) with zero rows to a multiple of N, per "
             "tensor-parallel block where --vocab-parallel splits it; the "
             "padding takes no probability mass, and gradients, checkpoints "
             "and outputs keep the real vocabulary. An odd vocabulary "
             "(GPT-2's 50257) makes the LM head's GEMMs several times "
             "slower on tensor cores. Default: 64 with --target cuda, else "
             "1 (only what --vocab-parallel needs); at most 1024"),
    cl::value_desc("N"), cl::cat(category));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("With tp > 1: layer norms, dropout and residual adds run on "
             "sequence shards (all-gather / reduce-scatter instead of "
             "all-reduce)"),
    cl::cat(category));
static cl::opt<bool> keepDropout(
    "keep-dropout",
    cl::desc("Without --train: keep the model's dropout in the forward "
             "pass. By default a forward-only executable evaluates without "
             "dropout, as Hugging Face's model.eval() does (a training step "
             "always keeps it)"),
    cl::cat(category));
static cl::opt<bool> unrollMicrobatches(
    "unroll-microbatches",
    cl::desc("With --train: unroll the microbatches into one kernel list "
             "per rank (the executable grows with --microbatches) instead "
             "of one microbatch's kernels that the executable's actions run "
             "once per microbatch (the default; a pipeline: each chunk's F, "
             "B and W once, run in the schedule's order)"),
    cl::cat(category));
static cl::list<std::string> passPlugins(
    "load-pass-plugin",
    cl::desc("Load a pass plugin (a shared library exporting "
             "mlirGetPassPluginInfo, as tpc-opt --load-pass-plugin); may "
             "repeat"),
    cl::value_desc("plugin.so"), cl::cat(category));
static cl::opt<std::string> shardingPass(
    "sharding-pass",
    cl::desc("With --mesh: the pass (pipeline text, e.g. example-shard-mlp "
             "from a plugin) that annotates the layouts, run in place of "
             "dist-annotate-megatron; dist-propagate and dist-partition "
             "follow"),
    cl::value_desc("pass"), cl::cat(category));
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string> outputPath(
    "o",
    cl::desc("Output file: the executable, written atomically; with --emit "
             "mlir the rt module ('-' is stdout, the default for --emit "
             "mlir). Not needed with --report alone"),
    cl::value_desc("model.tpcx"), cl::cat(category));

static cl::opt<std::string>
    emit("emit",
         cl::desc("What to write: tpcx, the executable (default), or mlir, "
                  "the planned rt module"),
         cl::value_desc("tpcx|mlir"), cl::init("tpcx"), cl::cat(category));
static cl::opt<std::string>
    seed("seed",
         cl::desc("Dropout seed recorded in the executable, an integer in "
                  "[0, 2^64) (default 0)"),
         cl::value_desc("S"), cl::init("0"), cl::cat(category));
static cl::opt<std::string>
    target("target",
           cl::desc("Device the executable is for: cpu (default) or cuda. "
                    "One .tpcx runs on both (tpc-run --device cpu|cuda); "
                    "cuda pads the vocabulary to a multiple of 64 "
                    "(--pad-vocab), else the two give the same executable"),
           cl::value_desc("cpu|cuda"), cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    report("report",
           cl::desc("Write the memory and compute report (JSON, from shapes "
                    "alone; INTERFACE.md) to this file ('-' is stdout). "
                    "Without --train nothing is stashed: its activation "
                    "bytes per layer are 0"),
           cl::value_desc("report.json"), cl::cat(category));
static cl::opt<std::string> hardware(
    "hardware",
    cl::desc("With --report: replay the plan's per-rank action lists on this "
             "hardware and add the report's \"predicted\" section (step "
             "time, bubble, MFU, HFU, TFLOP/s per device, each stage's busy "
             "and idle time, overlapped communication, seconds per kind of "
             "kernel and peak bytes). a100, h100, h200 (the tree's "
             "hardware/*.json, whose runtime device is cuda: the CUDA "
             "device's fused groups, collective streams and attention "
             "kernels priced as it runs them; the report lists the groups "
             "and, with its reasons, each candidate it does not fuse), cpu "
             "(this machine, measured by tpc-measure-hardware) or a JSON "
             "file "
             "(docs/design/hardware-format.md)"),
    cl::value_desc("a100|h100|h200|cpu|FILE.json"), cl::cat(category));

// Training. Numbers are read as text so that a bad one is reported with the
// flag's name.
static cl::opt<bool> train("train",
                           cl::desc("Compile a training step: forward, "
                                    "backward and optimizer update"),
                           cl::cat(trainCategory));
#define TPC_TRAIN_FLAG(var, flag, help, valueDesc, initial)                    \
  static cl::opt<std::string> var(flag, cl::desc(help),                        \
                                  cl::value_desc(valueDesc),                   \
                                  cl::init(initial), cl::cat(trainCategory))
TPC_TRAIN_FLAG(optimizer, "optimizer", "adamw (default) or sgd", "adamw|sgd",
               "adamw");
TPC_TRAIN_FLAG(lr, "lr", "Peak learning rate, >= 0 (default 1e-3)", "X", "1e-3");
TPC_TRAIN_FLAG(beta1, "beta1", "AdamW beta1 (default 0.9)", "X", "0.9");
TPC_TRAIN_FLAG(beta2, "beta2", "AdamW beta2 (default 0.999)", "X", "0.999");
TPC_TRAIN_FLAG(eps, "eps", "AdamW epsilon (default 1e-8)", "X", "1e-8");
TPC_TRAIN_FLAG(weightDecay, "weight-decay",
               "Weight decay (default: 0.01 for adamw, 0 for sgd)", "X", "");
TPC_TRAIN_FLAG(decayExclude, "decay-exclude",
               "No weight decay for parameters whose name contains one of "
               "these comma-separated strings",
               "bias,norm", "");
TPC_TRAIN_FLAG(momentum, "momentum", "SGD momentum (default 0)", "X", "0");
TPC_TRAIN_FLAG(remat, "remat",
               "Activation rematerialization: none (default), or full: each "
               "transformer layer keeps only its input from the forward and "
               "the backward recomputes the rest of what it reads, layer by "
               "layer (loss and gradients bit for bit as none; "
               "docs/design/remat.md); uniform:N: the same for groups of N "
               "consecutive layers (a group keeps its input); block:N: full "
               "for the first N layers of each pipeline chunk, none for the "
               "others; selective: only the attention core (scores, softmax, "
               "dropout) of unfused attention (fused attention recomputes "
               "it already); layers:E,E,... one entry per layer (n none, s "
               "selective, f full, gK in checkpointed group K); auto (needs "
               "--memory-limit): per pipeline stage the least recompute "
               "FLOPs whose planned peak fits, found by compiling the "
               "candidates (docs/design/remat.md, \"auto\")",
               "none|selective|full|uniform:N|block:N|layers:...|auto",
               "none");
TPC_TRAIN_FLAG(gradClip, "grad-clip",
               "Clip the global gradient norm to X (default 0: no clipping)",
               "X", "0");
TPC_TRAIN_FLAG(lrSchedule, "lr-schedule",
               "constant (default), or cosine: linear warm-up, then cosine "
               "decay to --min-lr",
               "constant|cosine", "constant");
TPC_TRAIN_FLAG(warmupSteps, "warmup-steps",
               "Cosine: steps of linear warm-up (default 0)", "N", "0");
TPC_TRAIN_FLAG(minLr, "min-lr", "Cosine: the final learning rate (default 0)",
               "X", "0");
TPC_TRAIN_FLAG(decaySteps, "decay-steps",
               "Cosine: the step at which the rate reaches --min-lr, counted "
               "from the first step (warm-up included); required",
               "N", "0");
TPC_TRAIN_FLAG(gradReduceDType, "grad-reduce-dtype",
               "Element type of the gradients' reductions over the ranks "
               "(data parallelism, and tensor parallelism's replicated "
               "parameters): fp32 (default: the gradients' own) or bf16 "
               "(half the bytes: each reduced gradient is cast to bf16 and "
               "back, losing its low mantissa bits)",
               "fp32|bf16", "fp32");
TPC_TRAIN_FLAG(gradBucketMiB, "grad-bucket-mb",
               "Buckets of the gradients' reductions: consecutive "
               "all_reduces of one group, at most this many MiB together, "
               "which the CUDA device issues as one NCCL group (each moved "
               "down to the next; PyTorch DDP's bucket_cap_mb). Default 25; "
               "0: each gradient reduced alone, as soon as it is written",
               "MiB", "25");
TPC_TRAIN_FLAG(microbatches, "microbatches",
               "Microbatches the global batch is split into (default 1)", "M",
               "1");
#undef TPC_TRAIN_FLAG

static cl::opt<std::string> schedule(
    "schedule",
    cl::desc("With pp > 1: the pipeline schedule: gpipe, 1f1b (default), "
             "interleaved-1f1b (needs --microbatches a multiple of pp), "
             "zb-h1, zb-v (docs/design/pipeline-schedules.md)"),
    cl::value_desc("gpipe|1f1b|interleaved-1f1b|zb-h1|zb-v"),
    cl::cat(category));
static cl::opt<std::string> virtualStages(
    "virtual-stages",
    cl::desc("With pp > 1: chunks (virtual stages) per rank: 1 (default), "
             "2 or more for interleaved-1f1b (default 2), 2 for zb-v"),
    cl::value_desc("V"), cl::cat(category));
static cl::opt<std::string> stageLayers(
    "stage-layers",
    cl::desc("With pp > 1: transformer layers per chunk, in model order, "
             "e.g. 5,5,6 (default: balanced by matrix-product FLOPs)"),
    cl::value_desc("N,N,..."), cl::cat(category));

static cl::opt<std::string> memoryLimit(
    "memory-limit",
    cl::desc("The bytes each rank's planned peak must fit: an integer, or a "
             "number with kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, "
             "TiB (powers of 1024), e.g. 80GB or 80GiB. With --remat auto "
             "the rematerialization is chosen to fit it; otherwise the "
             "compile fails when a stage's planned peak exceeds it, saying "
             "by how many bytes"),
    cl::value_desc("BYTES"), cl::cat(category));

/// What tpc-compile can do today, for the refusals.
static constexpr llvm::StringLiteral kScope =
    "this tpc-compile compiles the forward pass and loss, or with --train a "
    "training step, for CPU or CUDA devices: one, or a mesh of data-, "
    "pipeline- and tensor-parallel ranks";

static const cl::opt<std::string> *const trainFlags[] = {
    &optimizer,   &lr,          &beta1,           &beta2,
    &eps,         &weightDecay, &decayExclude,    &momentum,
    &gradClip,    &lrSchedule,  &gradReduceDType, &gradBucketMiB,
    &warmupSteps, &minLr,       &decaySteps,      &microbatches,
    &remat};

static int fail(const llvm::Twine &message) {
  return tpc::reportError(message);
}

static cl::opt<bool> blockingTransfers(
    "blocking-transfers",
    cl::desc("With pp > 1: each transfer between pipeline ranks blocks "
             "where the schedule sends and receives, instead of starting "
             "there (a receive one compute earlier) and being waited for "
             "later (a send after the rank's next compute), which overlaps "
             "it with computation but keeps the buffers in flight live "
             "longer (the pools do not grow)"),
    cl::cat(category));
/// The flags of the compile's settings that were given, as text by name
/// (tpc::parseCompileOptions reads and checks them).
static tpc::CompileSettings givenSettings() {
  tpc::CompileSettings settings;
  auto given = [](const cl::Option &flag) {
    return flag.getNumOccurrences() > 0;
  };
  for (const cl::opt<bool> *flag :
       {&train, &sequenceParallel, &vocabParallel, &unrollMicrobatches,
        &blockingTransfers, &keepDropout})
    if (given(*flag))
      settings[flag->ArgStr] = *flag ? "true" : "false";
  for (const cl::opt<std::string> *flag : trainFlags)
    if (given(*flag))
      settings[flag->ArgStr] = *flag;
  for (const cl::opt<std::string> *flag :
       {&mesh, &padVocab, &shardingPass, &seed, &schedule, &virtualStages,
        &stageLayers, &memoryLimit, &target})
    if (given(*flag))
      settings[flag->ArgStr] = *flag;
  return settings;
}

static constexpr llvm::StringLiteral kOverview =
    "tpc-compile: tpc IR (from tpc-import) -> .tpcx executable\n\n"
    "Lowers @forward to the rt dialect (tpc-lower-to-rt), plans its "
    "memory in one arena\n(rt-plan-memory, checked), and writes the "
    "executable that tpc-run runs. With\n--train it first builds the "
    "training step (tpc-autodiff, tpc-optimizer) and\nflattens it "
    "(tpc-unroll-train-step). Prints a one-line summary to stderr.\n"
    "<model.mlir> may be - for stdin. Errors are printed as `error: ...` "
    "(with the\nIR location where there is one), exit status 1.\n";

/// Prints `tpc-compile: K kernels, B buffers (...), arena A bytes, planned
/// peak P bytes` for a planned rt module.
static void printSummary(ModuleOp module, llvm::raw_ostream &os) {
  int64_t kernels = 0, buffers = 0, params = 0, inputs = 0, outputs = 0,
          state = 0, grads = 0;
  module.walk([&](Operation *op) {
    if (isa<rt::KernelOp>(op))
      ++kernels;
    else if (isa<rt::ParamOp>(op))
      ++buffers, ++params;
    else if (isa<rt::InputOp>(op))
      ++buffers, ++inputs;
    else if (isa<rt::StateOp>(op))
      ++buffers, ++state;
    else if (isa<rt::AllocOp>(op))
      ++buffers;
    else if (isa<rt::OutputOp>(op))
      ++outputs;
    else if (isa<rt::GradOp>(op))
      ++grads;
  });
  auto bytes = [&](StringRef name) {
    auto attr = module->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };
  std::string training =
      state || grads
          ? llvm::formatv(", {0} state, {1} grads", state, grads).str()
          : "";
  os << llvm::formatv("tpc-compile: {0} kernels, {1} buffers ({2} params, "
                      "{3} inputs, {4} outputs{5}), arena {6} bytes, planned "
                      "peak {7} bytes\n",
                      kernels, buffers, params, inputs, outputs, training,
                      bytes(rt::RtDialect::kArenaBytesAttrName),
                      bytes(rt::RtDialect::kPlannedPeakBytesAttrName));
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &trainCategory});
  if (!tpc::parseToolCommandLine(argc, argv, kOverview))
    return 1;
  // Plugins register their passes before --sharding-pass names one.
  for (const std::string &path : passPlugins) {
    auto plugin = PassPlugin::load(path);
    if (!plugin)
      return fail("--load-pass-plugin " + path + ": " +
                  llvm::toString(plugin.takeError()));
    plugin->registerPassRegistryCallbacks();
  }

  // Flags -> options, read and checked as the pipelines' options are.
  tpc::CompileOptions options;
  if (std::string why; failed(tpc::parseCompileOptions(
          givenSettings(), "--", options, why, kScope)))
    return fail(why);
  options.progressPrefix = "tpc-compile: ";
  if (emit != "tpcx" && emit != "mlir")
    return fail("--emit: '" + emit + "' is not one of tpcx, mlir");
  // Fewer microbatches than pipeline ranks leave ranks idle most of the
  // step (the bubble (p - 1)/(m + p - 1) is more than half): allowed, said.
  if (int64_t stages = options.axisSize("pp");
      stages > 1 && options.autodiff.microbatches < stages)
    llvm::WithColor::warning(llvm::errs(), "tpc-compile")
        << "--microbatches " << options.autodiff.microbatches << " < pp="
        << stages << ": each pipeline rank idles for most of the step (the "
        << options.schedule << " bubble grows with p - 1 against m)\n";
  bool emitMlir = emit == "mlir";
  // --report alone writes only the report.
  bool writeOutput = emitMlir || !outputPath.empty() || report.empty();
  if (!emitMlir && writeOutput && (outputPath.empty() || outputPath == "-"))
    return fail(outputPath.empty()
                    ? "-o is required: where to write the executable"
                    : "-o -: the executable is binary; write it to a file");
  if (outputPath.empty())
    outputPath = "-";
  if (!report.empty() && report == outputPath && writeOutput)
    return fail("--report: '" + report + "' is also the output (-o)");
  // The description is read before the compile: a typo fails at once.
  std::optional<tpc::Hardware> hardwareDescription;
  if (!hardware.empty()) {
    if (report.empty())
      return fail("--hardware needs --report: the prediction is a section "
                  "of the report");
    llvm::Expected<tpc::Hardware> loaded = tpc::loadHardware(
        hardware, llvm::sys::fs::getMainExecutable(
                      argv[0], reinterpret_cast<void *>(&printSummary)));
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    hardwareDescription = std::move(*loaded);
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputPath, &error);
  if (!input)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());

  DialectRegistry registry;
  registry.insert<tpc::TpcDialect, rt::RtDialect, func::FuncDialect>();
  MLIRContext context(registry);
  // A diagnostic names the op; dumping it (possibly a whole program) adds
  // nothing a user can act on.
  context.printOpOnDiagnostic(false);
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // Diagnostics without a location (e.g. the output cannot be written) read
  // `error: ...` like the tool's own errors; the others go to the handler
  // above, which prints their location and source line.
  context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    if (!isa<UnknownLoc>(diag.getLocation()))
      return failure();
    tpc::printSeverityLabel(llvm::errs(), diag.getSeverity()) << diag << "\n";
    return success();
  });
  tpc::registerLongLineDiagnostics(context, sourceMgr);
  // Parsing verifies the module; every diagnostic carries its location.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  // The flow and the report's analyses are tpc/Pipelines'.
  tpc::CompileReport reportData;
  if (failed(tpc::runCompileFlow(*module, options,
                                 report.empty() ? nullptr : &reportData)))
    return 1;
  if (hardwareDescription && failed(rt::predictStepOnDevice(
                                 *module, *hardwareDescription, reportData)))
    return 1;
  if (!report.empty() &&
      failed(tpc::writeReport(reportData, report, UnknownLoc::get(&context))))
    return 1;

  if (!writeOutput) {
    // Nothing more to write.
  } else if (emitMlir) {
    if (int status = tpc::printModuleToFile(*module, outputPath))
      return status;
  } else if (failed(rt::writeTpcxFile(*module, outputPath))) {
    return 1;
  }
  printSummary(*module, llvm::errs());
  if (!options.train)
    llvm::errs() << (options.keepDropout
                         ? "tpc-compile: the forward pass keeps the model's "
                           "dropout (--keep-dropout)\n"
                         : "tpc-compile: the forward pass evaluates without "
                           "dropout, as Hugging Face's model.eval() "
                           "(--keep-dropout keeps it)\n");
  return 0;
}
