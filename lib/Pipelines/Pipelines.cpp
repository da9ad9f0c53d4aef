//===- Pipelines.cpp - the compile flow as pass pipelines -----------------===//
//
// See include/tpc/Pipelines/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#include "tpc/Pipelines/Pipelines.h"

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Rt/Transforms/Passes.h"
#include "dialects/Tpc/Transforms/Autodiff.h"
#include "tpc/Conversion/TpcToRt.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::tpc;

int64_t CompileOptions::axisSize(StringRef name) const {
  for (const auto &[axis, size] : mesh)
    if (axis == name)
      return size;
  return 1;
}

StringRef CompileOptions::loweredFunction() const {
  return train ? StringRef(kTrainStepName) : StringRef("forward");
}

LogicalResult
mlir::tpc::parseMesh(StringRef text,
                     SmallVector<std::pair<std::string, int64_t>> &axes,
                     std::string &error, StringRef scope) {
  llvm::StringMap<int64_t> sizes;
  SmallVector<StringRef> items;
  text.split(items, ',');
  for (StringRef item : items) {
    auto [name, value] = item.trim().split('=');
    int64_t size;
    if (name != "dp" && name != "pp" && name != "tp") {
      error = ("'" + item + "': the axes are dp, pp and tp").str();
      return failure();
    }
    if (value.trim().getAsInteger(10, size) || size < 1) {
      error = ("'" + item + "': the size must be a positive integer").str();
      return failure();
    }
    if (!sizes.try_emplace(name, size).second) {
      error = ("axis '" + name + "' is given twice").str();
      return failure();
    }
  }
  if (sizes.lookup("pp") > 1) {
    error = "pp=" + std::to_string(sizes.lookup("pp")) +
            ": pipeline parallelism is not supported yet" +
            (scope.empty() ? "" : ": " + scope.str());
    return failure();
  }
  axes.clear();
  for (StringRef name : {"dp", "tp"})
    if (sizes.lookup(name) > 1)
      axes.push_back({name.str(), sizes.lookup(name)});
  return success();
}

LogicalResult mlir::tpc::checkCompileOptions(const CompileOptions &options,
                                             StringRef prefix,
                                             std::string &error) {
  if (options.sequenceParallel && options.axisSize("tp") <= 1) {
    error = (prefix + "sequence-parallel needs tensor parallelism: a " +
             prefix + "mesh with tp > 1")
                .str();
    return failure();
  }
  if (!options.shardingPipeline.empty() && options.mesh.empty()) {
    error = (prefix + "sharding-pass needs a " + prefix +
             "mesh to shard over")
                .str();
    return failure();
  }
  return success();
}

LogicalResult mlir::tpc::checkShardingPipeline(StringRef text,
                                               std::string &error) {
  OpPassManager probe("builtin.module");
  std::string message;
  llvm::raw_string_ostream stream(message);
  if (succeeded(parsePassPipeline(text, probe, stream)))
    return success();
  // The parser's first line, without its own location and severity.
  StringRef first = StringRef(message).split('\n').first;
  size_t at = first.find("error: ");
  error = (at == StringRef::npos ? first : first.drop_front(at + 7)).str();
  return failure();
}

void mlir::tpc::buildPrepareForward(OpPassManager &pm,
                                    const CompileOptions &options) {
  // Tensor parallelism splits the vocabulary: pad it to a multiple first,
  // on the forward pass, so the training step is built padded. Fewer
  // grouped-query kv-heads than devices: each device computes the kv-head
  // its query heads read, from a copy of it.
  int64_t tensorParallel = options.axisSize("tp");
  if (tensorParallel <= 1)
    return;
  if (options.vocabParallel) {
    dist::DistPadVocabOptions pad;
    pad.multiple = tensorParallel;
    pm.addPass(dist::createDistPadVocab(pad));
  }
  dist::DistReplicateKvHeadsOptions replicate;
  replicate.tp = tensorParallel;
  pm.addPass(dist::createDistReplicateKvHeads(replicate));
}

void mlir::tpc::buildTrainStep(OpPassManager &pm,
                               const CompileOptions &options) {
  if (!options.train)
    return;
  pm.addPass(createTpcAutodiff(options.autodiff));
  pm.addPass(createTpcOptimizer(options.optimizer));
}

void mlir::tpc::buildUnrollTrainStep(OpPassManager &pm,
                                     const CompileOptions &options) {
  if (!options.train)
    return;
  // The training step replaces the forward pass: only it is lowered.
  TpcUnrollTrainStepOptions unroll;
  unroll.keepForward = false;
  pm.addPass(createTpcUnrollTrainStep(unroll));
}

void mlir::tpc::buildDistribute(OpPassManager &pm,
                                const CompileOptions &options) {
  if (options.mesh.empty())
    return;
  dist::DistMeshOptions mesh;
  for (const auto &[name, size] : options.mesh)
    mesh.axes.push_back(name + "=" + std::to_string(size));
  pm.addPass(dist::createDistMesh(mesh));
  if (!options.shardingPipeline.empty()) {
    // Checked by whoever set it (tpc-compile, the pipelines' options).
    [[maybe_unused]] LogicalResult parsed =
        parsePassPipeline(options.shardingPipeline, pm);
    assert(succeeded(parsed) && "an unchecked --sharding-pass");
  } else {
    dist::DistAnnotateMegatronOptions annotate;
    annotate.sequenceParallel = options.sequenceParallel;
    annotate.vocabParallel = options.vocabParallel;
    pm.addPass(dist::createDistAnnotateMegatron(annotate));
  }
  pm.addPass(dist::createDistPropagate());
  pm.addPass(dist::createDistPartition());
}

void mlir::tpc::buildLowerToExecutable(OpPassManager &pm,
                                       const CompileOptions &options) {
  TpcLowerToRtOptions lower;
  lower.function = options.loweredFunction().str();
  lower.seed = options.seed;
  pm.addPass(createTpcLowerToRt(lower));
  rt::RtPlanMemoryOptions plan;
  plan.check = true;
  pm.addPass(rt::createRtPlanMemory(plan));
}

void mlir::tpc::buildCompilePipeline(OpPassManager &pm,
                                     const CompileOptions &options) {
  buildPrepareForward(pm, options);
  buildTrainStep(pm, options);
  buildUnrollTrainStep(pm, options);
  buildDistribute(pm, options);
  buildLowerToExecutable(pm, options);
}

namespace {

/// The pipelines' option string: tpc-compile's flags, by the same names.
struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  Option<bool> train{*this, "train",
                     llvm::cl::desc("Compile the training step")};
  Option<std::string> mesh{
      *this, "mesh",
      llvm::cl::desc("Device mesh, e.g. dp=2,tp=2 (as tpc-compile --mesh)")};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Sequence parallelism over tp")};
  Option<bool> vocabParallel{
      *this, "vocab-parallel",
      llvm::cl::desc("Split the embedding and LM head over tp (default)"),
      llvm::cl::init(true)};
  Option<std::string> shardingPass{
      *this, "sharding-pass",
      llvm::cl::desc("The pass that annotates the layouts in place of "
                     "dist-annotate-megatron (as tpc-compile --sharding-pass)")};
  Option<uint64_t> seed{*this, "seed",
                        llvm::cl::desc("The dropout seed (default 0)"),
                        llvm::cl::init(0)};
  Option<unsigned> microbatches{*this, "microbatches",
                                llvm::cl::desc("Microbatches (default 1)"),
                                llvm::cl::init(1)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("adamw (default) or sgd"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Peak learning rate"),
                    llvm::cl::init(1e-3)};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Default: 0.01 for adamw, 0 for sgd"),
      llvm::cl::init(-1.0)};
  ListOption<std::string> decayExclude{
      *this, "decay-exclude",
      llvm::cl::desc("No weight decay where the name contains one of these")};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<double> gradClip{*this, "grad-clip", llvm::cl::init(0.0)};
  Option<std::string> lrSchedule{*this, "lr-schedule",
                                 llvm::cl::desc("constant or cosine"),
                                 llvm::cl::init("constant")};
  Option<int64_t> warmupSteps{*this, "warmup-steps", llvm::cl::init(0)};
  Option<int64_t> decaySteps{*this, "decay-steps", llvm::cl::init(0)};
  Option<double> minLr{*this, "min-lr", llvm::cl::init(0.0)};

  /// The options as CompileOptions; an error names the option.
  LogicalResult read(CompileOptions &options,
                     function_ref<LogicalResult(const Twine &)> error) const {
    options.train = train;
    options.sequenceParallel = sequenceParallel;
    options.vocabParallel = vocabParallel;
    options.seed = seed;
    if (!mesh.empty()) {
      std::string why;
      if (failed(parseMesh(mesh, options.mesh, why)))
        return error("mesh: " + why);
    }
    if (!shardingPass.empty()) {
      std::string why;
      if (failed(checkShardingPipeline(shardingPass, why)))
        return error("sharding-pass '" + shardingPass + "': " + why);
      options.shardingPipeline = shardingPass;
    }
    if (std::string why; failed(checkCompileOptions(options, "", why)))
      return error(why);
    options.autodiff.microbatches = microbatches;
    TpcOptimizerOptions &o = options.optimizer;
    o.optimizer = optimizer;
    o.lr = lr;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weightDecay = weightDecay;
    o.decayExclude.assign(decayExclude.begin(), decayExclude.end());
    o.momentum = momentum;
    o.gradClip = gradClip;
    o.lrSchedule = lrSchedule;
    o.warmupSteps = warmupSteps;
    o.totalSteps = decaySteps;
    o.minLr = minLr;
    return success();
  }
};

using PhaseBuilder = void (*)(OpPassManager &, const CompileOptions &);

void registerPhase(StringRef name, StringRef description,
                   ArrayRef<PhaseBuilder> phases) {
  SmallVector<PhaseBuilder> builders(phases);
  registerPassPipeline(
      name, description,
      [builders](OpPassManager &pm, StringRef text,
                 function_ref<LogicalResult(const Twine &)> error) {
        CompilePipelineOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        CompileOptions options;
        if (failed(parsed.read(options, error)))
          return failure();
        for (PhaseBuilder build : builders)
          build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(CompilePipelineOptions());
      });
}

} // namespace

void mlir::tpc::registerTpcPipelines() {
  registerPhase("tpc-compile-pipeline",
                "tpc-compile's whole flow: a model's tpc IR to the planned rt "
                "module it serializes (tpc-compile --emit mlir)",
                {buildPrepareForward, buildTrainStep, buildUnrollTrainStep,
                 buildDistribute, buildLowerToExecutable});
  registerPhase("tpc-prepare-forward",
                "Phase 1: dist-pad-vocab and dist-replicate-kv-heads on "
                "@forward with a mesh of tp > 1",
                {buildPrepareForward});
  registerPhase("tpc-build-train-step",
                "Phase 2 (train=true): tpc-autodiff, tpc-optimizer and "
                "tpc-unroll-train-step (@forward dropped)",
                {buildTrainStep, buildUnrollTrainStep});
  registerPhase("tpc-distribute",
                "Phase 3 (a mesh): dist-mesh, dist-annotate-megatron, "
                "dist-propagate, dist-partition",
                {buildDistribute});
  registerPhase("tpc-lower-to-executable",
                "Phase 4: tpc-lower-to-rt (@train_step with train=true, else "
                "@forward) and rt-plan-memory (checked)",
                {buildLowerToExecutable});
}
