//===- tpc-plan.cpp - the best parallel plans for a model and a cluster ---===//
//
// Searches tensor, pipeline and data-parallel sizes, virtual stages,
// microbatch size, sequence parallelism, schedule and recomputation with the
// closed forms of tpc/Analysis/PlanModel.h, drops plans that do not fit,
// replays the best candidates on their schedules' real action lists, prints
// the best K, and compiles the best through the real pipeline (on fewer
// layers when the model is large) to prove it legal, its compiled plan
// replayed on the same hardware (docs/design/cost-model.md).
//
//===----------------------------------------------------------------------===//

#include "dialects/Dist/IR/DistDialect.h"
#include "dialects/Rt/IR/RtOps.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "tpc/Analysis/Hardware.h"
#include "tpc/Analysis/PlanModel.h"
#include "tpc/Analysis/Report.h"
#include "tpc/Import/ModelBuilder.h"
#include "tpc/Import/ModelConfig.h"
#include "tpc/Pipelines/Pipelines.h"
#include "tpc/Target/Tpcx.h"
#include "tpc/Tools/ToolSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "mlir/Support/FileUtilities.h"

#include <algorithm>
#include <chrono>

using namespace mlir;
using namespace mlir::tpc;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpc-plan options");
static cl::opt<std::string> configPath(cl::Positional, cl::Required,
                                       cl::desc("<config.json|MODEL_DIR>"),
                                       cl::cat(category));
static cl::opt<int64_t>
    gpus("gpus", cl::desc("Devices to plan for (required)"),
         cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<std::string> hardwareName(
    "hardware",
    cl::desc("a100, h100, h200, cpu or a JSON file "
             "(docs/design/hardware-format.md); required"),
    cl::value_desc("a100|h100|h200|cpu|FILE.json"), cl::cat(category));
static cl::opt<int64_t> globalBatch(
    "global-batch", cl::desc("Sequences per step over all devices (required)"),
    cl::value_desc("B"), cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    seqLength("seq",
              cl::desc("Sequence length (default: the config's positions)"),
              cl::value_desc("S"), cl::init(0), cl::cat(category));
static cl::opt<std::string> memoryLimit(
    "memory-limit",
    cl::desc("Bytes a device may hold (80GB, 80GiB, or an integer); "
             "default: the hardware's memory_bytes"),
    cl::value_desc("BYTES"), cl::cat(category));
static cl::opt<int64_t> top("top", cl::desc("Plans to print (default 5)"),
                            cl::value_desc("K"), cl::init(5),
                            cl::cat(category));
static cl::opt<std::string>
    dtypeName("dtype", cl::desc("bf16 (default, mixed precision) or fp32"),
              cl::value_desc("bf16|fp32"), cl::init("bf16"),
              cl::cat(category));
static cl::opt<std::string> attentionName(
    "attention",
    cl::desc("fused (default: never materializes s x s) or unfused "
             "(Megatron's chain; selective recomputation applies)"),
    cl::value_desc("fused|unfused"), cl::init("fused"), cl::cat(category));
static cl::opt<std::string> compare(
    "compare",
    cl::desc("A plan to rank beside the best, e.g. the published one: "
             "tp=8,pp=64,b=1,v=1,schedule=1f1b,remat=full[,sp]"),
    cl::value_desc("PLAN"), cl::cat(category));
static cl::opt<std::string> reportPath(
    "report",
    cl::desc("Write the best plans and the check compile's report (JSON)"),
    cl::value_desc("plan.json"), cl::cat(category));
static cl::opt<int64_t> checkLayers(
    "check-layers",
    cl::desc("Layers of the best plan's check compile, a multiple of pp*v "
             "(default: the model's when it has at most 24, else the largest "
             "multiple of pp*v up to 24, at least pp*v); 0 skips it"),
    cl::value_desc("N"), cl::init(-1), cl::cat(category));
static cl::opt<std::string> checkPlan(
    "check-plan",
    cl::desc("The plan the check compile compiles: best (default) or "
             "compared (--compare's, e.g. to see how far the closed form's "
             "memory is from a published plan's compiled peak)"),
    cl::value_desc("best|compared"), cl::init("best"), cl::cat(category));

static int fail(const llvm::Twine &message) { return reportError(message); }

namespace {

struct Candidate {
  PlanChoice plan;
  PlanEstimate estimate;
};

std::string describe(const PlanChoice &plan) {
  return llvm::formatv("tp={0},pp={1},dp={2},v={3},b={4},m={5},{6},{7},{8}",
                       plan.tp, plan.pp, plan.dp, plan.virtualStages,
                       plan.microbatchSize, plan.microbatches,
                       plan.sequenceParallel ? "sp" : "no-sp",
                       plan.pp > 1 ? plan.schedule : "-", plan.remat)
      .str();
}

std::string compileFlags(const PlanChoice &plan, const Hardware &hw) {
  // A CUDA plan's executable pads the vocabulary (--target cuda).
  std::string flags = std::string("--train") +
                      (hw.runtimeDevice == "cuda" ? " --target cuda" : "") +
                      " --mesh dp=" + std::to_string(plan.dp) +
                      ",pp=" + std::to_string(plan.pp) +
                      ",tp=" + std::to_string(plan.tp) + " --microbatches " +
                      std::to_string(plan.microbatches);
  if (plan.pp > 1) {
    flags += " --schedule " + plan.schedule;
    if (plan.virtualStages > 1)
      flags += " --virtual-stages " + std::to_string(plan.virtualStages);
  }
  if (plan.sequenceParallel)
    flags += " --sequence-parallel";
  if (plan.remat != "none")
    flags += " --remat " + plan.remat;
  return flags;
}

/// "tp=8,pp=64,b=1,v=1,schedule=1f1b,remat=full,sp"
bool parsePlan(StringRef text, PlanChoice &plan, std::string &error) {
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    auto [key, value] = part.split('=');
    int64_t number = 0;
    auto integer = [&](int64_t &into) {
      if (value.getAsInteger(10, number) || number < 1) {
        error = "--compare: '" + part.str() + "' needs a positive integer";
        return false;
      }
      into = number;
      return true;
    };
    if (key == "tp" || key == "pp" || key == "b" || key == "v") {
      if (!integer(key == "tp"   ? plan.tp
                   : key == "pp" ? plan.pp
                   : key == "b"  ? plan.microbatchSize
                                 : plan.virtualStages))
        return false;
    } else if (key == "schedule") {
      plan.schedule = value.str();
    } else if (key == "remat") {
      plan.remat = value.str();
    } else if (key == "sp" && value.empty()) {
      plan.sequenceParallel = true;
    } else {
      error = "--compare: unknown '" + part.str() +
              "' (tp=, pp=, b=, v=, schedule=, remat=, sp)";
      return false;
    }
  }
  return true;
}

bool samePlan(const PlanChoice &a, const PlanChoice &b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp &&
         a.virtualStages == b.virtualStages &&
         a.microbatchSize == b.microbatchSize &&
         a.sequenceParallel == b.sequenceParallel &&
         (a.pp == 1 || a.schedule == b.schedule) && a.remat == b.remat;
}

double gb(int64_t bytes) { return static_cast<double>(bytes) / 1e9; }

void printRow(llvm::raw_ostream &os, StringRef label, const Candidate &c) {
  const PlanChoice &p = c.plan;
  const PlanEstimate &e = c.estimate;
  os << llvm::formatv(
      "{0,-5} {1,3} {2,3} {3,4} {4,2} {5,2} {6,5} {7,-3} {8,-16} {9,-9} "
      "{10,7:F1} {11,6:F1} {12,6:F1} {13,6:F1} {14,7:F1} | {15,8:F3} "
      "{16,8:F3} {17,7:F3} {18,7:F3} {19,7:F3} {20,7:F1} {21,5:F3}\n",
      label, p.tp, p.pp, p.dp, p.virtualStages, p.microbatchSize,
      p.microbatches, p.sequenceParallel ? "sp" : "-",
      p.pp > 1 ? p.schedule : "-", p.remat, gb(e.paramBytes), gb(e.gradBytes),
      gb(e.optimizerBytes), gb(e.activationBytes), gb(e.peakBytes),
      e.stepSeconds, e.computeSeconds, e.communicationSeconds,
      e.bubbleSeconds, e.recomputeSeconds,
      e.hardwareFlops / e.stepSeconds / 1e12, e.mfu);
}

void printHeader(llvm::raw_ostream &os) {
  os << llvm::formatv(
      "{0,-5} {1,3} {2,3} {3,4} {4,2} {5,2} {6,5} {7,-3} {8,-16} {9,-9} "
      "{10,7} {11,6} {12,6} {13,6} {14,7} | {15,8} {16,8} {17,7} {18,7} "
      "{19,7} {20,7} {21,5}\n",
      "rank", "tp", "pp", "dp", "v", "b", "m", "sp", "schedule", "remat",
      "params", "grads", "optim", "activ", "peakGB", "step_s", "compute",
      "comm", "bubble", "recomp", "TFLOP/s", "MFU");
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category});
  if (!parseToolCommandLine(
          argc, argv,
          "tpc-plan: the best parallel plans for a model on N devices\n\n"
          "Searches tp, pp, dp, virtual stages, microbatch size, sequence "
          "parallelism,\nschedule and recomputation with closed forms, "
          "drops plans that do not fit\n--memory-limit, replays the best "
          "on their schedules' real action lists, and\nprints the best "
          "--top K (memory per device in GB = 1e9 bytes; time per step\nin "
          "seconds: compute, exposed communication, bubble, recomputation; "
          "TFLOP/s\nper device counting recomputation; MFU without). Then "
          "compiles the best with\nthe tpc-compile flags printed (on fewer "
          "layers for a large model) and replays\nthe compiled plan on the "
          "same hardware. Progress goes to stderr.\n"))
    return 1;
  auto started = std::chrono::steady_clock::now();
  if (gpus < 1)
    return fail("--gpus: give the number of devices (a positive integer)");
  if (globalBatch < 1)
    return fail("--global-batch: give the sequences per step (a positive "
                "integer)");
  if (hardwareName.empty())
    return fail("--hardware is required (a100, h100, h200, cpu or a file)");
  if (dtypeName != "bf16" && dtypeName != "fp32")
    return fail("--dtype: '" + dtypeName + "' is not one of bf16, fp32");
  if (attentionName != "fused" && attentionName != "unfused")
    return fail("--attention: '" + attentionName +
                "' is not one of fused, unfused");
  if (top < 1)
    return fail("--top: must be at least 1");
  if (checkPlan != "best" && checkPlan != "compared")
    return fail("--check-plan: '" + checkPlan +
                "' is not one of best, compared");
  const bool checkCompared = checkPlan == "compared";
  if (checkCompared && compare.empty())
    return fail("--check-plan=compared needs --compare PLAN");
  llvm::Expected<Hardware> hw = loadHardware(
      hardwareName, llvm::sys::fs::getMainExecutable(
                        argv[0], reinterpret_cast<void *>(&fail)));
  if (!hw)
    return fail(llvm::toString(hw.takeError()));
  int64_t limit = hw->memoryBytes;
  if (!memoryLimit.empty()) {
    std::optional<int64_t> parsed = parseByteCount(memoryLimit);
    if (!parsed || *parsed <= 0)
      return fail("--memory-limit: '" + memoryLimit +
                  "' is not a byte count (80GB, 80GiB, 85899345920)");
    limit = *parsed;
  }

  ImportOptions importOptions;
  importOptions.batch = globalBatch;
  if (seqLength > 0)
    importOptions.seq = seqLength;
  importOptions.dtype =
      dtypeName == "bf16" ? ElementDtype::BF16 : ElementDtype::F32;
  importOptions.attention = attentionName == "fused" ? AttentionForm::Fused
                                                     : AttentionForm::Unfused;
  std::string path = configPath;
  if (llvm::sys::fs::is_directory(path))
    path += "/config.json";
  llvm::Expected<ModelConfig> config = parseModelConfigFile(path, importOptions);
  if (!config)
    return fail(llvm::toString(config.takeError()));

  TransformerShape shape;
  shape.layers = config->numLayers;
  shape.hidden = config->hiddenSize;
  shape.heads = config->numHeads;
  shape.kvHeads = config->numKvHeads;
  shape.headDim = config->headDim;
  shape.ffn = config->ffnSize;
  shape.vocab = config->vocabSize;
  shape.seq = *importOptions.seq;
  shape.llama = config->family == ModelFamily::Llama;
  shape.tiedEmbeddings = config->tieWordEmbeddings;
  shape.elementBytes = dtypeName == "bf16" ? 2 : 4;
  shape.fusedAttention = attentionName == "fused";
  shape.attentionDropout = config->attentionDropout;
  shape.residualDropout = config->residualDropout;
  shape.embeddingDropout = config->embeddingDropout;

  // The search space.
  std::vector<Candidate> fits;
  int64_t considered = 0, tooBig = 0;
  std::vector<std::string> remats = {"none", "full"};
  if (!shape.fusedAttention)
    remats.insert(remats.begin() + 1, "selective");
  for (int64_t tp = 1; tp <= std::min(gpus.getValue(), hw->devicesPerNode);
       tp *= 2) {
    if (gpus % tp || shape.heads % tp || shape.ffn % tp)
      continue;
    if (shape.kvHeads % tp && tp % shape.kvHeads)
      continue;
    for (int64_t pp = 1; pp <= gpus / tp; ++pp) {
      if ((gpus / tp) % pp || shape.layers % pp)
        continue;
      int64_t dp = gpus / tp / pp;
      if (globalBatch % dp)
        continue;
      for (int64_t b : {1, 2, 4, 8}) {
        if ((globalBatch / dp) % b)
          continue;
        int64_t m = globalBatch / dp / b;
        for (int64_t v : {1, 2, 4}) {
          if (v > 1 && (pp == 1 || shape.layers % (pp * v) || m % pp))
            continue;
          std::vector<std::string> schedules;
          if (pp == 1)
            schedules = {"1f1b"};
          else if (v == 2)
            schedules = {"interleaved-1f1b", "zb-v"};
          else if (v > 1)
            schedules = {"interleaved-1f1b"};
          else
            schedules = {"1f1b", "zb-h1"};
          for (bool sp : {false, true}) {
            if (sp && tp == 1)
              continue;
            for (const std::string &schedule : schedules)
              for (const std::string &remat : remats) {
                Candidate c;
                c.plan = {tp, pp, dp, v, b, m, sp, schedule, remat};
                ++considered;
                std::string error;
                std::optional<PlanEstimate> e =
                    estimatePlan(shape, c.plan, *hw, false, error);
                if (!e)
                  continue;
                if (e->peakBytes > limit) {
                  ++tooBig;
                  continue;
                }
                c.estimate = *e;
                fits.push_back(std::move(c));
              }
          }
        }
      }
    }
  }
  llvm::errs() << llvm::formatv(
      "tpc-plan: {0} plans considered, {1} do not fit {2:F1} GB, {3} fit\n",
      considered, tooBig, gb(limit), fits.size());
  if (fits.empty())
    return fail("no plan fits " + std::to_string(limit) +
                " bytes per device; more devices, a smaller batch or a "
                "larger --memory-limit");
  auto byStep = [](const Candidate &a, const Candidate &b) {
    return a.estimate.stepSeconds < b.estimate.stepSeconds;
  };
  std::sort(fits.begin(), fits.end(), byStep);

  // Replay the best on their action lists.
  size_t replay = std::min<size_t>(fits.size(), std::max<int64_t>(16, 4 * top));
  llvm::errs() << "tpc-plan: replaying the best " << replay
               << " on their schedules' action lists\n";
  std::vector<Candidate> best(fits.begin(), fits.begin() + replay);
  for (Candidate &c : best) {
    std::string error;
    if (std::optional<PlanEstimate> e =
            estimatePlan(shape, c.plan, *hw, true, error))
      c.estimate = *e;
  }
  std::sort(best.begin(), best.end(), byStep);

  // The compared plan: its rank among all that fit, by the closed forms
  // every one of them has (the table's rows are replayed).
  std::optional<Candidate> compared;
  int64_t comparedRank = -1;
  if (!compare.empty()) {
    PlanChoice plan;
    std::string error;
    if (!parsePlan(compare, plan, error))
      return fail(error);
    plan.dp = gpus / (plan.tp * plan.pp);
    if (plan.dp < 1 || plan.tp * plan.pp * plan.dp != gpus ||
        globalBatch % (plan.dp * plan.microbatchSize))
      return fail("--compare: tp*pp must divide --gpus and dp*b the batch");
    plan.microbatches = globalBatch / plan.dp / plan.microbatchSize;
    std::optional<PlanEstimate> e =
        estimatePlan(shape, plan, *hw, true, error);
    if (!e)
      return fail("--compare: " + error);
    std::optional<PlanEstimate> closed =
        estimatePlan(shape, plan, *hw, false, error);
    if (!closed)
      return fail("--compare: " + error);
    compared = Candidate{plan, *e};
    comparedRank = 1;
    for (const Candidate &c : fits)
      if (!samePlan(c.plan, plan) &&
          c.estimate.stepSeconds < closed->stepSeconds)
        ++comparedRank;
  }

  llvm::outs() << llvm::formatv(
      "tpc-plan: {0} ({1} layers, hidden {2}, {3} heads, vocab {4}, seq {5}, "
      "{6} parameters) on {7} x {8}, global batch {9}\n",
      path, shape.layers, shape.hidden, shape.heads, shape.vocab, shape.seq,
      countParameters(shape), gpus.getValue(), hw->name,
      globalBatch.getValue());
  printHeader(llvm::outs());
  for (size_t i = 0; i < best.size() && i < static_cast<size_t>(top); ++i)
    printRow(llvm::outs(), std::to_string(i + 1), best[i]);
  if (compared) {
    printRow(llvm::outs(), "cmp", *compared);
    llvm::outs() << llvm::formatv(
        "compared plan ({0}): rank {1} of {2} by the closed forms{3}; best / "
        "compared "
        "throughput {4:F3}\n",
        describe(compared->plan), comparedRank, fits.size(),
        compared->estimate.peakBytes > limit ? " (does not fit)" : "",
        compared->estimate.stepSeconds / best.front().estimate.stepSeconds);
    // Where the gain comes from: the compared plan moved to the best one
    // choice at a time, each replayed.
    const PlanChoice &to = best.front().plan;
    PlanChoice step = compared->plan;
    double before = compared->estimate.stepSeconds;
    auto move = [&](StringRef what, auto change) {
      PlanChoice next = step;
      change(next);
      if (samePlan(next, step))
        return;
      std::string error;
      std::optional<PlanEstimate> e =
          estimatePlan(shape, next, *hw, true, error);
      if (!e) {
        llvm::outs() << "  + " << what << ": not a plan alone (" << error
                     << ")\n";
        return;
      }
      llvm::outs() << llvm::formatv(
          "  + {0,-28} step {1,9:F3} s ({2:+0.0;-0.0}%){3}\n", what,
          e->stepSeconds, 100 * (e->stepSeconds / before - 1),
          e->peakBytes > limit ? ", does not fit alone" : "");
      before = e->stepSeconds;
      step = next;
    };
    llvm::outs() << "gain, one choice at a time from the compared plan:\n";
    move("sequence parallelism", [&](PlanChoice &p) {
      p.sequenceParallel = to.sequenceParallel && p.tp > 1;
    });
    move("recomputation " + to.remat,
         [&](PlanChoice &p) { p.remat = to.remat; });
    move("schedule " + to.schedule + " v=" + std::to_string(to.virtualStages),
         [&](PlanChoice &p) {
           p.schedule = to.schedule;
           p.virtualStages = to.virtualStages;
         });
    move("sizes tp/pp/dp/b", [&](PlanChoice &p) {
      p.tp = to.tp, p.pp = to.pp, p.dp = to.dp;
      p.microbatchSize = to.microbatchSize;
      p.microbatches = to.microbatches;
      p.sequenceParallel = to.sequenceParallel;
    });
  }
  const Candidate &winner = best.front();
  // A command that runs as printed: each tool writes its file.
  llvm::outs() << "best: tpc-import " << configPath << " --batch "
               << globalBatch << " --seq " << shape.seq << " --dtype "
               << dtypeName << " --attention " << attentionName
               << " -o model.mlir && tpc-compile model.mlir "
               << compileFlags(winner.plan, *hw) << " -o model.tpcx\n";

  // The check compile: the best (or the compared) plan through the real
  // pipeline.
  llvm::json::Object checkJson;
  const Candidate &checked = checkCompared ? *compared : winner;
  int64_t layersPerChunk = checked.plan.pp * checked.plan.virtualStages;
  int64_t check = checkLayers;
  if (check < 0)
    check = shape.layers > 24 ? layersPerChunk *
                                    std::max<int64_t>(1, 24 / layersPerChunk)
                              : shape.layers;
  if (check > 0) {
    if (check % layersPerChunk)
      return fail("--check-layers " + std::to_string(check) +
                  " does not divide by pp*v = " +
                  std::to_string(layersPerChunk));
    llvm::errs() << "tpc-plan: compiling the " << checkPlan << " with " << check
                 << " layers to check it\n";
    DialectRegistry registry;
    registry.insert<TpcDialect, rt::RtDialect, dist::DistDialect,
                    func::FuncDialect>();
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    ImportOptions checkImport = importOptions;
    checkImport.numLayers = check;
    ImportOptions reparse = checkImport;
    llvm::Expected<ModelConfig> checkConfig =
        parseModelConfigFile(path, reparse);
    if (!checkConfig)
      return fail(llvm::toString(checkConfig.takeError()));
    OwningOpRef<ModuleOp> module = buildModel(context, *checkConfig, reparse);
    CompileSettings settings;
    settings["train"] = "true";
    settings["mesh"] = llvm::formatv("dp={0},pp={1},tp={2}", checked.plan.dp,
                                     checked.plan.pp, checked.plan.tp)
                           .str();
    settings["microbatches"] = std::to_string(checked.plan.microbatches);
    if (checked.plan.pp > 1) {
      settings["schedule"] = checked.plan.schedule;
      settings["virtual-stages"] = std::to_string(checked.plan.virtualStages);
    }
    if (checked.plan.sequenceParallel)
      settings["sequence-parallel"] = "true";
    settings["remat"] = checked.plan.remat;
    settings["pad-vocab"] = std::to_string(hw->vocabPadding());
    CompileOptions options;
    std::string why;
    if (failed(parseCompileOptions(settings, "--", options, why)))
      return fail("the " + checkPlan + " plan's flags are refused: " + why);
    CompileReport report;
    if (failed(runCompileFlow(*module, options, &report)) ||
        failed(rt::predictStepOnDevice(*module, *hw, report)))
      return fail("the " + checkPlan + " plan does not compile (above)");
    TransformerShape small = shape;
    small.layers = check;
    std::string error;
    std::optional<PlanEstimate> closed =
        estimatePlan(small, checked.plan, *hw, true, error);
    // The search's figure (in-flight counts from closed forms, not from the
    // schedule's action lists): the one --memory-limit filtered with.
    std::optional<PlanEstimate> searched =
        estimatePlan(small, checked.plan, *hw, false, error);
    int64_t compiledPeak = 0;
    for (const StageFigures &stage : report.stages)
      compiledPeak = std::max(compiledPeak, stage.peakBytes);
    std::string searchedPeak;
    if (closed && searched && searched->peakBytes != closed->peakBytes)
      searchedPeak =
          llvm::formatv(", searched with {0:F2}", gb(searched->peakBytes));
    llvm::outs() << llvm::formatv(
        "check: {5}compiled with {0} layers: planned peak {1:F2} GB (closed "
        "form {2:F2}{6}), replayed step {3:F4} s (closed form {4:F4} s, "
        "searched with {7:F4} s)\n",
        check, gb(compiledPeak), closed ? gb(closed->peakBytes) : 0.0,
        report.predicted->stepSeconds, closed ? closed->stepSeconds : 0.0,
        checkCompared ? "the compared plan " : "", searchedPeak,
        searched ? searched->stepSeconds : 0.0);
    if (compiledPeak > limit)
      llvm::WithColor::warning(llvm::errs(), "tpc-plan")
          << "the check compile's planned peak passes --memory-limit: the "
             "closed form under-estimated this plan"
          << (checkCompared ? "\n" : "; take the next one\n");
    checkJson = llvm::json::Object{
        {"plan", describe(checked.plan)},
        {"layers", check},
        {"compiled_peak_bytes", compiledPeak},
        {"closed_form_peak_bytes", closed ? closed->peakBytes : 0},
        {"searched_peak_bytes", searched ? searched->peakBytes : 0},
        {"compiled_step_time_s", report.predicted->stepSeconds},
        {"closed_form_step_time_s", closed ? closed->stepSeconds : 0.0},
        {"searched_step_time_s", searched ? searched->stepSeconds : 0.0}};
  }

  if (!reportPath.empty()) {
    llvm::json::Array plans;
    for (size_t i = 0; i < best.size() && i < static_cast<size_t>(top); ++i) {
      const Candidate &c = best[i];
      plans.push_back(llvm::json::Object{
          {"rank", static_cast<int64_t>(i + 1)},
          {"plan", describe(c.plan)},
          {"tpc_compile_flags", compileFlags(c.plan, *hw)},
          {"step_time_s", c.estimate.stepSeconds},
          {"peak_bytes", c.estimate.peakBytes},
          {"mfu", c.estimate.mfu},
          {"tflops_per_gpu",
           c.estimate.hardwareFlops / c.estimate.stepSeconds / 1e12}});
    }
    llvm::json::Object root{{"hardware", hw->name},
                            {"gpus", gpus.getValue()},
                            {"global_batch", globalBatch.getValue()},
                            {"plans", std::move(plans)},
                            {"check", std::move(checkJson)}};
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        mlir::openOutputFile(reportPath, &error);
    if (!file)
      return fail("--report: " + error);
    file->os() << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)))
               << "\n";
    file->keep();
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  llvm::errs() << llvm::formatv("tpc-plan: done in {0:F2} s\n", seconds);
  return 0;
}
