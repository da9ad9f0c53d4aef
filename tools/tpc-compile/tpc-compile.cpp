//===- tpc-compile.cpp - tpc IR -> .tpcx executable -----------------------===//
//
// A named pipeline over the same passes tpc-opt runs (tpc-lower-to-rt,
// rt-plan-memory) plus the serializer. Flags of the user contract that the
// compiler does not implement yet are accepted by the parser, so that --help
// lists them, and then refused with an error: never silently ignored.
//
//===----------------------------------------------------------------------===//

#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Rt/Transforms/Passes.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "tpc/Target/Tpcx.h"
#include "tpc/Tools/ToolSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpc-compile options");
static cl::OptionCategory unsupportedCategory(
    "Not supported yet (given, each is refused with an error)");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string> outputPath(
    "o",
    cl::desc("Output file: the executable, written atomically; with --emit "
             "mlir the rt module ('-' is stdout, the default for --emit mlir)"),
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

// The rest of the user contract (INTERFACE.md): parsed, then refused.
#define TPC_UNSUPPORTED(var, flag, type, help)                                 \
  static cl::opt<type> var(flag, cl::desc(help), cl::cat(unsupportedCategory))
TPC_UNSUPPORTED(train, "train", bool, "Compile a training step");
TPC_UNSUPPORTED(optimizer, "optimizer", std::string, "adamw|sgd");
TPC_UNSUPPORTED(lr, "lr", std::string, "Learning rate");
TPC_UNSUPPORTED(beta1, "beta1", std::string, "AdamW beta1");
TPC_UNSUPPORTED(beta2, "beta2", std::string, "AdamW beta2");
TPC_UNSUPPORTED(eps, "eps", std::string, "AdamW epsilon");
TPC_UNSUPPORTED(weightDecay, "weight-decay", std::string, "Weight decay");
TPC_UNSUPPORTED(decayExclude, "decay-exclude", std::string,
                "Parameters without weight decay (bias,norm)");
TPC_UNSUPPORTED(momentum, "momentum", std::string, "SGD momentum");
TPC_UNSUPPORTED(gradClip, "grad-clip", std::string, "Gradient norm clip");
TPC_UNSUPPORTED(lrSchedule, "lr-schedule", std::string, "constant|cosine");
TPC_UNSUPPORTED(warmupSteps, "warmup-steps", std::string, "Warmup steps");
TPC_UNSUPPORTED(minLr, "min-lr", std::string, "Final learning rate");
TPC_UNSUPPORTED(mesh, "mesh", std::string, "Device mesh dp=D,pp=P,tp=T");
TPC_UNSUPPORTED(sequenceParallel, "sequence-parallel", bool,
                "Sequence parallelism");
TPC_UNSUPPORTED(schedule, "schedule", std::string,
                "gpipe|1f1b|interleaved-1f1b|zb-h1");
TPC_UNSUPPORTED(microbatches, "microbatches", std::string,
                "Microbatches per step");
TPC_UNSUPPORTED(virtualStages, "virtual-stages", std::string,
                "Virtual pipeline stages");
TPC_UNSUPPORTED(remat, "remat", std::string,
                "none|selective|full|uniform:N|block:N|auto");
TPC_UNSUPPORTED(memoryLimit, "memory-limit", std::string,
                "Per-device memory limit");
TPC_UNSUPPORTED(report, "report", std::string, "Report file (JSON)");
#undef TPC_UNSUPPORTED

/// What tpc-compile can do today, for the refusals.
static constexpr llvm::StringLiteral kScope =
    "this tpc-compile compiles the forward pass and loss for one CPU device";

static const cl::Option *const unsupportedFlags[] = {
    &train,       &optimizer,    &lr,
    &beta1,       &beta2,        &eps,
    &weightDecay, &decayExclude, &momentum,
    &gradClip,    &lrSchedule,   &warmupSteps,
    &minLr,       &mesh,         &sequenceParallel,
    &schedule,    &microbatches, &virtualStages,
    &remat,       &memoryLimit,  &report};

static int fail(const llvm::Twine &message) { return tpc::reportError(message); }

static constexpr llvm::StringLiteral kOverview =
    "tpc-compile: tpc IR (from tpc-import) -> .tpcx executable\n\n"
    "Lowers @forward to the rt dialect (tpc-lower-to-rt), plans its "
    "memory in one arena\n(rt-plan-memory, checked), and writes the "
    "executable that tpc-run runs. Prints a\none-line summary to "
    "stderr. <model.mlir> may be - for stdin. Errors are printed\nas "
    "`error: ...` (with the IR location where there is one), exit "
    "status 1.\n";

/// Prints `tpc-compile: K kernels, B buffers (...), arena A bytes, planned
/// peak P bytes` for a planned rt module.
static void printSummary(ModuleOp module, llvm::raw_ostream &os) {
  int64_t kernels = 0, buffers = 0, params = 0, inputs = 0, outputs = 0;
  module.walk([&](Operation *op) {
    if (isa<rt::KernelOp>(op))
      ++kernels;
    else if (isa<rt::ParamOp>(op))
      ++buffers, ++params;
    else if (isa<rt::InputOp>(op))
      ++buffers, ++inputs;
    else if (isa<rt::AllocOp>(op))
      ++buffers;
    else if (isa<rt::OutputOp>(op))
      ++outputs;
  });
  auto bytes = [&](StringRef name) {
    auto attr = module->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };
  os << llvm::formatv("tpc-compile: {0} kernels, {1} buffers ({2} params, "
                      "{3} inputs, {4} outputs), arena {5} bytes, planned "
                      "peak {6} bytes\n",
                      kernels, buffers, params, inputs, outputs,
                      bytes(rt::RtDialect::kArenaBytesAttrName),
                      bytes(rt::RtDialect::kPlannedPeakBytesAttrName));
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &unsupportedCategory});
  if (!tpc::parseToolCommandLine(argc, argv, kOverview))
    return 1;

  for (const cl::Option *flag : unsupportedFlags)
    if (flag->getNumOccurrences())
      return fail("--" + flag->ArgStr + " is not supported yet: " + kScope);
  if (target == "cuda")
    return fail("--target cuda is not supported yet: " + kScope);
  if (target != "cpu")
    return fail("--target: '" + target + "' is not one of cpu, cuda");
  uint64_t seedValue;
  if (llvm::StringRef(seed).trim().getAsInteger(10, seedValue))
    return fail("--seed: '" + seed + "' is not an integer in [0, 2^64)");
  if (emit != "tpcx" && emit != "mlir")
    return fail("--emit: '" + emit + "' is not one of tpcx, mlir");
  bool emitMlir = emit == "mlir";
  if (!emitMlir && (outputPath.empty() || outputPath == "-"))
    return fail(outputPath.empty()
                    ? "-o is required: where to write the executable"
                    : "-o -: the executable is binary; write it to a file");
  if (outputPath.empty())
    outputPath = "-";

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

  PassManager pm(&context);
  rt::TpcLowerToRtOptions lowerOptions;
  lowerOptions.seed = seedValue;
  pm.addPass(rt::createTpcLowerToRt(lowerOptions));
  rt::RtPlanMemoryOptions planOptions;
  planOptions.check = true;
  pm.addPass(rt::createRtPlanMemory(planOptions));
  if (failed(pm.run(*module)))
    return 1;

  if (emitMlir) {
    if (int status = tpc::printModuleToFile(*module, outputPath))
      return status;
  } else if (failed(rt::writeTpcxFile(*module, outputPath))) {
    return 1;
  }
  printSummary(*module, llvm::errs());
  return 0;
}
