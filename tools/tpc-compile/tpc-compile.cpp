//===- tpc-compile.cpp - tpc IR -> .tpcx executable -----------------------===//
//
// A thin driver: flags -> tpc::CompileOptions -> the phases of
// tpc/Pipelines (the same tpc-opt --tpc-compile-pipeline runs), then the
// serializer; between the phases it reads what --report needs. Flags of the user
// contract that the compiler does not implement yet are accepted by the
// parser, so that --help lists them, and then refused with an error: never
// silently ignored. So is a training flag given without --train.
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/Passes.h"
#include "dialects/Rt/Transforms/PlanMemory.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/Transforms/Autodiff.h"
#include "dialects/Tpc/Transforms/Passes.h"
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
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <cmath>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpc-compile options");
static cl::OptionCategory
    trainCategory("Training (with --train; INTERFACE.md gives the defaults)");
static cl::OptionCategory unsupportedCategory(
    "Not supported yet (given, each is refused with an error)");

static cl::opt<std::string>
    mesh("mesh",
         cl::desc("Device mesh, e.g. dp=2,tp=2: data parallelism over dp "
                  "ranks (the batch is split), Megatron tensor parallelism "
                  "over tp ranks (heads and FFN split); pp must be 1. The "
                  "executable then runs on the product of the sizes with "
                  "tpc-run --ranks"),
         cl::value_desc("dp=D,pp=P,tp=T"), cl::cat(category));
static cl::opt<bool> vocabParallel(
    "vocab-parallel",
    cl::desc("With tp > 1, split the embedding and the LM head along the "
             "vocabulary (default; the vocabulary is padded to a multiple of "
             "tp, the padding masked); --vocab-parallel=false keeps them "
             "whole on every rank"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("With tp > 1: layer norms, dropout and residual adds run on "
             "sequence shards (all-gather / reduce-scatter instead of "
             "all-reduce)"),
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
           cl::desc("Device the executable is compiled for: cpu (default); "
                    "cuda is not supported yet"),
           cl::value_desc("cpu"), cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    report("report",
           cl::desc("Write the memory and compute report (JSON, from shapes "
                    "alone) to this file ('-' is stdout)"),
           cl::value_desc("report.json"), cl::cat(category));

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
TPC_TRAIN_FLAG(lr, "lr", "Peak learning rate (default 1e-3)", "X", "1e-3");
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
TPC_TRAIN_FLAG(microbatches, "microbatches",
               "Microbatches the global batch is split into (default 1)", "M",
               "1");
#undef TPC_TRAIN_FLAG

// The rest of the user contract (INTERFACE.md): parsed, then refused.
#define TPC_UNSUPPORTED(var, flag, type, help)                                 \
  static cl::opt<type> var(flag, cl::desc(help), cl::cat(unsupportedCategory))
TPC_UNSUPPORTED(schedule, "schedule", std::string,
                "gpipe|1f1b|interleaved-1f1b|zb-h1");
TPC_UNSUPPORTED(virtualStages, "virtual-stages", std::string,
                "Virtual pipeline stages");
TPC_UNSUPPORTED(remat, "remat", std::string,
                "none|selective|full|uniform:N|block:N|auto");
TPC_UNSUPPORTED(memoryLimit, "memory-limit", std::string,
                "Per-device memory limit");
#undef TPC_UNSUPPORTED

/// What tpc-compile can do today, for the refusals.
static constexpr llvm::StringLiteral kScope =
    "this tpc-compile compiles the forward pass and loss, or with --train a "
    "training step, for CPU devices: one, or a mesh of data- and "
    "tensor-parallel ranks";

static const cl::Option *const unsupportedFlags[] = {
    &schedule, &virtualStages, &remat, &memoryLimit};

static const cl::Option *const trainFlags[] = {
    &optimizer,   &lr,           &beta1,      &beta2,       &eps,
    &weightDecay, &decayExclude, &momentum,   &gradClip,    &lrSchedule,
    &warmupSteps, &minLr,        &decaySteps, &microbatches};

static int fail(const llvm::Twine &message) {
  return tpc::reportError(message);
}

/// The mesh axes of --mesh with a size above 1, in the order dp, tp.
static FailureOr<SmallVector<std::pair<std::string, int64_t>>>
parseMesh(StringRef text) {
  SmallVector<std::pair<std::string, int64_t>> axes;
  std::string error;
  if (failed(tpc::parseMesh(text, axes, error, kScope))) {
    fail("--mesh: " + error);
    return failure();
  }
  return axes;
}

/// Runs the distribute phase (dist-mesh, Megatron's annotation,
/// propagation and partitioning) on `module` (also on the report's copies).
static LogicalResult distribute(ModuleOp module,
                                const tpc::CompileOptions &options) {
  module.getContext()->loadDialect<dist::DistDialect>();
  PassManager pm(module.getContext());
  tpc::buildDistribute(pm, options);
  return pm.run(module);
}

/// The kinds of range a numeric flag takes.
enum class Range { Positive, NonNegative, Fraction };

/// A finite number of `range` (Fraction: [0, 1)) at most `max`; on a bad
/// value prints `error: --flag: '<text>' is not <what>` and returns nullopt.
static std::optional<double>
parseNumber(const cl::opt<std::string> &flag, Range range,
            double max = std::numeric_limits<double>::infinity(),
            StringRef what = "") {
  double value;
  bool ok = !llvm::StringRef(flag).trim().getAsDouble(value) &&
            std::isfinite(value) && value <= max;
  switch (range) {
  case Range::Positive:
    ok &= value > 0;
    break;
  case Range::NonNegative:
    ok &= value >= 0;
    break;
  case Range::Fraction:
    ok &= value >= 0 && value < 1;
    break;
  }
  if (ok)
    return value;
  if (what.empty())
    what = range == Range::Positive      ? "a positive number"
           : range == Range::NonNegative ? "a non-negative number"
                                         : "a number in [0, 1)";
  fail("--" + flag.ArgStr + ": '" + flag + "' is not " + what);
  return std::nullopt;
}

static std::optional<int64_t> parseInteger(const cl::opt<std::string> &flag,
                                           int64_t low, StringRef range) {
  int64_t value;
  if (llvm::StringRef(flag).trim().getAsInteger(10, value) || value < low) {
    fail("--" + flag.ArgStr + ": '" + flag + "' is not " + range);
    return std::nullopt;
  }
  return value;
}

/// Reads and checks the training flags into the options of tpc-autodiff and
/// tpc-optimizer; prints the first error and returns failure.
static LogicalResult readTrainFlags(tpc::TpcAutodiffOptions &autodiff,
                                    tpc::TpcOptimizerOptions &options) {
  auto given = [](const cl::Option &flag) {
    return flag.getNumOccurrences() > 0;
  };
  if (optimizer != "adamw" && optimizer != "sgd")
    return failure(
        fail("--optimizer: '" + optimizer + "' is not one of adamw, sgd"));
  bool adamw = optimizer == "adamw";
  options.optimizer = optimizer;
  // Settings of the other optimizer are a mistake, not something to ignore.
  for (const cl::Option *flag : {static_cast<const cl::Option *>(&beta1),
                                 static_cast<const cl::Option *>(&beta2),
                                 static_cast<const cl::Option *>(&eps)})
    if (!adamw && given(*flag))
      return failure(fail("--" + flag->ArgStr +
                          " is an AdamW setting, but --optimizer is sgd"));
  if (adamw && given(momentum))
    return failure(
        fail("--momentum is an SGD setting, but --optimizer is adamw"));

  std::optional<double> value;
  if (!(value = parseNumber(lr, Range::Positive)))
    return failure();
  options.lr = *value;
  if (!(value = parseNumber(beta1, Range::Fraction)))
    return failure();
  options.beta1 = *value;
  if (!(value = parseNumber(beta2, Range::Fraction)))
    return failure();
  options.beta2 = *value;
  if (!(value = parseNumber(eps, Range::Positive)))
    return failure();
  options.eps = *value;
  if (given(weightDecay)) {
    if (!(value = parseNumber(weightDecay, Range::NonNegative)))
      return failure();
    options.weightDecay = *value;
  }
  for (StringRef part : llvm::split(StringRef(decayExclude), ',')) {
    part = part.trim();
    if (part.empty()) {
      if (given(decayExclude))
        return failure(fail("--decay-exclude: '" + decayExclude +
                            "' has an empty name; give comma-separated "
                            "parts of parameter names, e.g. bias,ln_"));
      continue;
    }
    options.decayExclude.push_back(part.str());
  }
  if (!(value = parseNumber(momentum, Range::NonNegative)))
    return failure();
  options.momentum = *value;
  if (!(value = parseNumber(gradClip, Range::NonNegative,
                            std::numeric_limits<double>::infinity(),
                            "a non-negative number (0: no clipping)")))
    return failure();
  options.gradClip = *value;

  if (lrSchedule != "constant" && lrSchedule != "cosine")
    return failure(fail("--lr-schedule: '" + lrSchedule +
                        "' is not one of constant, cosine"));
  options.lrSchedule = lrSchedule;
  if (lrSchedule == "constant") {
    for (const cl::Option *flag :
         {static_cast<const cl::Option *>(&warmupSteps),
          static_cast<const cl::Option *>(&minLr),
          static_cast<const cl::Option *>(&decaySteps)})
      if (given(*flag))
        return failure(fail("--" + flag->ArgStr +
                            " needs --lr-schedule cosine (the constant "
                            "schedule has no warm-up or decay)"));
  } else {
    std::optional<int64_t> warmup =
        parseInteger(warmupSteps, 0, "a non-negative integer");
    if (!warmup)
      return failure();
    if (!given(decaySteps))
      return failure(fail("--lr-schedule cosine needs --decay-steps N: the "
                          "step at which the rate reaches --min-lr"));
    std::optional<int64_t> decay =
        parseInteger(decaySteps, *warmup + 1,
                     "an integer greater than --warmup-steps (" +
                         std::to_string(*warmup) + ")");
    if (!decay)
      return failure();
    if (!(value = parseNumber(minLr, Range::NonNegative, options.lr,
                              "a number in [0, --lr]")))
      return failure();
    options.warmupSteps = *warmup;
    options.totalSteps = *decay;
    options.minLr = *value;
  }
  std::optional<int64_t> count =
      parseInteger(microbatches, 1, "a positive integer");
  if (!count)
    return failure();
  if (*count > std::numeric_limits<unsigned>::max())
    return failure(fail("--microbatches: '" + microbatches + "' is too large"));
  autodiff.microbatches = static_cast<unsigned>(*count);
  return success();
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
  cl::HideUnrelatedOptions({&category, &trainCategory, &unsupportedCategory});
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

  for (const cl::Option *flag : unsupportedFlags)
    if (flag->getNumOccurrences())
      return fail("--" + flag->ArgStr + " is not supported yet: " + kScope);
  // Flags -> options, checked; the flow is tpc/Pipelines.
  tpc::CompileOptions options;
  options.train = train;
  options.sequenceParallel = sequenceParallel;
  options.vocabParallel = vocabParallel;
  tpc::TpcAutodiffOptions &autodiffOptions = options.autodiff;
  tpc::TpcOptimizerOptions &optimizerOptions = options.optimizer;
  if (!train) {
    for (const cl::Option *flag : trainFlags)
      if (flag->getNumOccurrences())
        return fail("--" + flag->ArgStr +
                    " is a training setting: it needs --train");
  } else if (failed(readTrainFlags(autodiffOptions, optimizerOptions))) {
    return 1;
  }
  SmallVector<std::pair<std::string, int64_t>> &meshAxes = options.mesh;
  if (!mesh.empty()) {
    auto parsed = parseMesh(mesh);
    if (failed(parsed))
      return 1;
    meshAxes = *parsed;
  }
  if (target == "cuda")
    return fail("--target cuda is not supported yet: " + kScope);
  if (target != "cpu")
    return fail("--target: '" + target + "' is not one of cpu, cuda");
  options.shardingPipeline = shardingPass;
  if (std::string why; failed(tpc::checkCompileOptions(options, "--", why)))
    return fail(why);
  if (!shardingPass.empty()) {
    std::string why;
    if (failed(tpc::checkShardingPipeline(shardingPass, why)))
      return fail("--sharding-pass '" + shardingPass + "': " + why +
                  " (a plugin's pass needs --load-pass-plugin)");
  }
  uint64_t &seedValue = options.seed;
  if (llvm::StringRef(seed).trim().getAsInteger(10, seedValue))
    return fail("--seed: '" + seed + "' is not an integer in [0, 2^64)");
  if (emit != "tpcx" && emit != "mlir")
    return fail("--emit: '" + emit + "' is not one of tpcx, mlir");
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
    llvm::raw_ostream &os = llvm::errs();
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      llvm::WithColor::error(os);
      break;
    case DiagnosticSeverity::Warning:
      llvm::WithColor::warning(os);
      break;
    case DiagnosticSeverity::Note:
      llvm::WithColor::note(os);
      break;
    case DiagnosticSeverity::Remark:
      llvm::WithColor::remark(os);
      break;
    }
    os << diag << "\n";
    return success();
  });
  // Parsing verifies the module; every diagnostic carries its location.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  // A data-parallel rank takes an equal part of every microbatch.
  int64_t dataParallel = 1;
  for (const auto &[name, size] : meshAxes)
    if (name == "dp")
      dataParallel = size;
  if (auto forwardFn = module->lookupSymbol<func::FuncOp>("forward");
      forwardFn && dataParallel > 1) {
    int64_t parts = dataParallel * (train ? autodiffOptions.microbatches : 1);
    for (BlockArgument arg : forwardFn.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() == 0 ||
          !forwardFn.getArgAttr(arg.getArgNumber(), "tpc.input") ||
          type.getDimSize(0) % parts == 0)
        continue;
      return fail("--mesh: the global batch (" +
                  llvm::Twine(type.getDimSize(0)) +
                  ") is not divisible by dp x microbatches (" +
                  llvm::Twine(dataParallel) + " x " +
                  llvm::Twine(parts / dataParallel) + " = " +
                  llvm::Twine(parts) + ")");
    }
  }

  // The phases of tpc/Pipelines, one by one: the report reads the IR
  // between them.
  auto runPhase = [&](auto build) {
    PassManager pm(&context);
    build(pm, options);
    return pm.run(*module);
  };
  if (options.axisSize("tp") > 1)
    context.loadDialect<dist::DistDialect>();
  if (failed(runPhase(tpc::buildPrepareForward)))
    return 1;

  // The training step, on tpc IR.
  if (failed(runPhase(tpc::buildTrainStep)))
    return 1;

  // What the report reads from the tpc functions, before they are lowered.
  tpc::CompileReport reportData;
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  if (!report.empty()) {
    if (!forward || forward.isExternal()) {
      module->emitError("--report: no func.func @forward");
      return 1;
    }
    if (failed(tpc::readModelInfo(*module, forward,
                                  autodiffOptions.microbatches, reportData)))
      return 1;
    for (const auto &[name, size] : meshAxes)
      (name == "dp" ? reportData.dataParallel : reportData.tensorParallel) =
          size;
    reportData.sequenceParallel = sequenceParallel;
    // As Megatron's micro_batch_size: what one data-parallel rank computes
    // (the checks above made it divide).
    reportData.microbatchSize /= reportData.dataParallel;
    // The stash of layer 0 of an @train_F, on one device of the mesh.
    auto layerStash = [&](func::FuncOp trainF) -> FailureOr<int64_t> {
      if (meshAxes.empty())
        return tpc::summarizeStash(trainF).layers.lookup(0).bytes;
      return tpc::computeDeviceLayerStashBytes(
          trainF, [&](ModuleOp copy) { return distribute(copy, options); },
          /*layer=*/0);
    };
    FailureOr<int64_t> stash;
    if (train) {
      // One microbatch's F, B and W: tpc-autodiff built them.
      SmallVector<func::FuncOp> functions;
      for (StringRef name : {tpc::kTrainForwardName, tpc::kTrainInputGradName,
                             tpc::kTrainWeightGradName})
        functions.push_back(module->lookupSymbol<func::FuncOp>(name));
      stash = layerStash(functions.front());
      reportData.flopsPerMicrobatch = tpc::countMatmulFlops(functions);
    } else {
      // What a training step would stash; the forward's products.
      OwningOpRef<ModuleOp> copy = module->clone();
      if (failed(tpc::buildTrainingFunctions(*copy, /*microbatches=*/1)))
        return 1;
      stash = layerStash(copy->lookupSymbol<func::FuncOp>(
          tpc::kTrainForwardName));
      reportData.flopsPerMicrobatch = tpc::countMatmulFlops(forward);
    }
    if (failed(stash))
      return 1;
    reportData.activationBytesPerLayer = *stash;
  }

  // The training step replaces the forward pass: only it is lowered.
  if (failed(runPhase(tpc::buildUnrollTrainStep)))
    return 1;
  if (!meshAxes.empty()) {
    if (failed(distribute(*module, options)))
      return 1;
    // The collectives dist-partition inserted, before lowering hides them;
    // one device's products (local shapes), per microbatch.
    if (!report.empty()) {
      auto partitioned = module->lookupSymbol<func::FuncOp>(
          train ? StringRef(tpc::kTrainStepName) : "forward");
      int64_t count = train ? autodiffOptions.microbatches : 1;
      if (failed(tpc::countCommBytes(partitioned, count, reportData)))
        return 1;
      reportData.flopsPerMicrobatch =
          tpc::countMatmulFlops(partitioned) / count;
    }
  }
  if (failed(runPhase(tpc::buildLowerToExecutable)))
    return 1;

  if (!report.empty()) {
    rt::MemoryStats stats =
        rt::computeMemoryStats(*module->getOps<rt::ProgramOp>().begin());
    reportData.paramBytes = stats.paramBytes + stats.paramCopyBytes;
    reportData.gradBytes = stats.gradBytes;
    reportData.optimizerBytes = stats.stateBytes;
    reportData.peakActivationBytes = stats.peakActivationBytes;
    reportData.peakBytes = stats.peakBytes;
    if (failed(tpc::writeReport(reportData, report, UnknownLoc::get(&context))))
      return 1;
  }

  if (!writeOutput) {
    // Nothing more to write.
  } else if (emitMlir) {
    if (int status = tpc::printModuleToFile(*module, outputPath))
      return status;
  } else if (failed(rt::writeTpcxFile(*module, outputPath))) {
    return 1;
  }
  printSummary(*module, llvm::errs());
  return 0;
}
