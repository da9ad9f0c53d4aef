//===- Pipelines.cpp - the compile flow as pass pipelines -----------------===//
//
// See include/tpc/Pipelines/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#include "tpc/Pipelines/Pipelines.h"

#include "dialects/Dist/IR/DistOps.h"
#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Rt/Transforms/Passes.h"
#include "dialects/Rt/Transforms/PlanMemory.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/Transforms/Autodiff.h"
#include "tpc/Conversion/TpcToRt.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::tpc;

void mlir::tpc::buildPrepareForward(OpPassManager &pm,
                                    const CompileOptions &options) {
  // Attention in the projections' layout: no transposes around it.
  pm.addPass(createTpcFoldAttentionTransposes());
  // Evaluation, as Hugging Face's model.eval(): without dropout.
  if (!options.train && !options.keepDropout)
    pm.addPass(createTpcStripDropout());
  buildPadShapes(pm, options);
  // Pipeline parallelism: the layers go to chunks, each chunk a function
  // that tpc-autodiff differentiates on its own.
  int64_t stages = options.axisSize("pp");
  if (stages <= 1)
    return;
  dist::DistPipelineSplitOptions split;
  split.stages = stages;
  split.virtualStages = options.virtualStages;
  split.placement = options.placement;
  split.stageLayers = options.stageLayers;
  pm.addPass(dist::createDistPipelineSplit(split));
  pm.addPass(dist::createDistPipelineOutline());
}

void mlir::tpc::buildPadShapes(OpPassManager &pm,
                               const CompileOptions &options) {
  // On the forward pass, so that the training step is built padded: the
  // vocabulary to pad-vocab rows (a tensor-core GEMM's tile), per block
  // where tensor parallelism splits it. Fewer grouped-query kv-heads than
  // devices: each device computes the kv-head its query heads read, from a
  // copy of it.
  int64_t tensorParallel = options.axisSize("tp");
  int64_t multiple =
      options.padVocab * (options.vocabParallel ? tensorParallel : 1);
  if (multiple > 1) {
    dist::DistPadVocabOptions pad;
    pad.multiple = multiple;
    pm.addPass(dist::createDistPadVocab(pad));
  }
  if (tensorParallel <= 1)
    return;
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
  unroll.tagMicrobatches = options.axisSize("pp") > 1;
  // One device, several microbatches: a one-microbatch template that the
  // executable runs once per microbatch.
  unroll.firstMicrobatchOnly = options.microbatchActions();
  pm.addPass(createTpcUnrollTrainStep(unroll));
  if (options.remat == "auto") {
    // Compiles candidates on copies of the unrolled step (chooseRemat).
    pm.addPass(createRematAutoPass(options));
  } else if (options.remat != "none") {
    TpcRematOptions remat;
    remat.policy = options.remat;
    pm.addPass(createTpcRemat(remat));
  }
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
  if (options.axisSize("pp") > 1) {
    dist::DistPipelineStagesOptions stages;
    stages.schedule = options.schedule;
    stages.functions = options.microbatchActions();
    stages.asyncTransfers = !options.blockingTransfers;
    pm.addPass(dist::createDistPipelineStages(stages));
  }
}

void mlir::tpc::buildLowerToExecutable(OpPassManager &pm,
                                       const CompileOptions &options) {
  TpcLowerToRtOptions lower;
  lower.function = options.loweredFunction().str();
  lower.seed = options.seed;
  lower.actions = options.microbatchActions();
  pm.addPass(createTpcLowerToRt(lower));
  pm.addPass(rt::createRtFoldPadSums());
  pm.addPass(rt::createRtPackAttentionQkv());
  pm.addPass(rt::createRtAccumulateWeightGrads());
  // The input gradients' reductions' overlap first: the parameter
  // gradients' reductions issued early would otherwise bound the windows
  // of kernels they can run behind (their weight gradients). Again after
  // the gathers and reductions move, the first run's kernels staying.
  rt::RtOverlapCollectivesOptions marking;
  marking.mark = true;
  pm.addPass(rt::createRtOverlapCollectives(marking));
  pm.addPass(rt::createRtIssueReductionsEarly());
  pm.addPass(rt::createRtPrefetchGathers());
  rt::RtBucketReductionsOptions buckets;
  buckets.bucketBytes = options.gradBucketBytes;
  pm.addPass(rt::createRtBucketReductions(buckets));
  pm.addPass(rt::createRtOverlapCollectives());
  if (options.gradReduceDType == "bf16")
    pm.addPass(rt::createRtReduceGradientsInBf16());
  rt::RtPlanMemoryOptions plan;
  plan.check = true;
  pm.addPass(rt::createRtPlanMemory(plan));
  if (options.memoryLimit)
    pm.addPass(createCheckMemoryLimitPass(options));
}

void mlir::tpc::buildCompilePipeline(OpPassManager &pm,
                                     const CompileOptions &options) {
  buildPrepareForward(pm, options);
  buildTrainStep(pm, options);
  buildUnrollTrainStep(pm, options);
  buildDistribute(pm, options);
  buildLowerToExecutable(pm, options);
}

LogicalResult mlir::tpc::checkModuleForOptions(ModuleOp module,
                                               const CompileOptions &options) {
  // A data-parallel rank takes an equal part of every microbatch.
  int64_t dataParallel = options.axisSize("dp");
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal() || dataParallel <= 1)
    return success();
  int64_t microbatches = options.train ? options.autodiff.microbatches : 1;
  int64_t parts = dataParallel * microbatches;
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0 ||
        !forward.getArgAttr(arg.getArgNumber(), kInputAttrName) ||
        type.getDimSize(0) % parts == 0)
      continue;
    return module.emitError()
           << "mesh: the global batch (" << type.getDimSize(0)
           << ") is not divisible by dp x microbatches (" << dataParallel
           << " x " << microbatches << " = " << parts << ")";
  }
  return success();
}

/// The layers of each pipeline stage, from dist-pipeline-split's
/// `dist.pipeline`: the first and last of its chunks'.
static LogicalResult readStageLayers(ModuleOp module, CompileReport &report) {
  auto split = module->getAttrOfType<DictionaryAttr>(dist::kPipelineAttrName);
  auto ranks = split ? split.getAs<DenseI64ArrayAttr>("ranks") : nullptr;
  auto layers = split ? split.getAs<DenseI64ArrayAttr>("layers") : nullptr;
  if (!ranks || !layers || layers.size() != 2 * ranks.size())
    return module.emitError("report: the module has no 'dist.pipeline' "
                            "with the chunks' ranks and layers");
  for (StageFigures &figures : report.stages) {
    figures.firstLayer = report.layers;
    figures.lastLayer = -1;
  }
  for (auto [chunk, rank] : llvm::enumerate(ranks.asArrayRef())) {
    if (rank < 0 || rank >= static_cast<int64_t>(report.stages.size()))
      return module.emitError() << "report: chunk " << chunk << " is on rank "
                                << rank << ", outside the pipeline";
    StageFigures &figures = report.stages[rank];
    figures.firstLayer = std::min(figures.firstLayer, layers[2 * chunk]);
    figures.lastLayer = std::max(figures.lastLayer, layers[2 * chunk + 1]);
    figures.chunkLayers.push_back({layers[2 * chunk], layers[2 * chunk + 1]});
  }
  return success();
}

LogicalResult mlir::tpc::runCompileFlow(ModuleOp module,
                                        const CompileOptions &options,
                                        CompileReport *report) {
  if (failed(checkModuleForOptions(module, options)))
    return failure();
  MLIRContext *context = module.getContext();
  if (!options.mesh.empty())
    context->loadDialect<dist::DistDialect>();
  auto runPhase = [&](void (*build)(OpPassManager &, const CompileOptions &)) {
    PassManager pm(context);
    build(pm, options);
    return pm.run(module);
  };
  if (failed(runPhase(buildPrepareForward)))
    return failure();

  // The model, before the training step replaces @forward.
  int64_t microbatches = options.train ? options.autodiff.microbatches : 1;
  if (report) {
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal())
      return module.emitError("report: no func.func @forward");
    if (failed(readModelInfo(module, forward, microbatches, *report)))
      return failure();
    report->dataParallel = options.axisSize("dp");
    report->pipelineParallel = options.axisSize("pp");
    report->tensorParallel = options.axisSize("tp");
    report->sequenceParallel = options.sequenceParallel;
    report->remat = options.train ? options.remat : "none";
    report->stages.resize(report->pipelineParallel);
    report->stages.front().lastLayer = report->layers - 1;
    if (report->pipelineParallel > 1) {
      report->schedule = options.schedule;
      report->virtualStages = options.virtualStages;
      if (failed(readStageLayers(module, *report)))
        return failure();
    }
    // As Megatron's micro_batch_size: what one data-parallel rank computes
    // (checkModuleForOptions made it divide).
    report->microbatchSize /= report->dataParallel;
  }

  if (failed(runPhase(buildTrainStep)) ||
      failed(runPhase(buildUnrollTrainStep)))
    return failure();
  // What remat auto chose per stage, if it ran.
  FailureOr<SmallVector<RematChoice>> rematChoices = readRematChoices(module);
  if (failed(rematChoices))
    return failure();
  if (report)
    for (auto [i, figures] : llvm::enumerate(report->stages))
      figures.remat = i < rematChoices->size()
                          ? "auto: " + (*rematChoices)[i].description
                          : report->remat;
  if (failed(runPhase(buildDistribute)))
    return failure();

  // One device's step (local shapes on a mesh), before lowering hides its
  // stash marks and collectives.
  if (report) {
    auto step = module.lookupSymbol<func::FuncOp>(options.loweredFunction());
    if (!step)
      return module.emitError() << "report: no func.func @"
                                << options.loweredFunction();
    // A template of actions holds one microbatch of the step.
    int64_t unrolled = options.microbatchActions() ? 1 : microbatches;
    FailureOr<SmallVector<int64_t>> stash =
        countStashBytesByLayer(step, unrolled, report->layers);
    if (failed(stash))
      return failure();
    report->activationBytesPerLayer = stash->empty() ? 0 : stash->front();
    // Selective recomputes an unfused attention core; the fused attention's
    // backward recomputes its scores already.
    if (report->remat == "selective" && !step->walk([](Operation *op) {
          return op->hasAttr(kRecomputeAttrName) ? WalkResult::interrupt()
                                                 : WalkResult::advance();
        }).wasInterrupted())
      report->remat = "selective (built into fused attention)";
    bool staged = report->stages.size() > 1;
    for (auto [i, figures] : llvm::enumerate(report->stages)) {
      figures.flopsPerMicrobatch =
          (staged ? countStageMatmulFlops(step, i) : countMatmulFlops(step)) /
          unrolled;
      std::optional<int64_t> stage =
          staged ? std::optional<int64_t>(i) : std::nullopt;
      figures.recomputeFlopsPerMicrobatch =
          countRecomputeFlops(step, stage) / unrolled;
      figures.maskedFlopsPerMicrobatch =
          countMaskedFlops(step, stage) / unrolled;
      // Its chunks' layers (with virtual stages, not one range).
      SmallVector<std::pair<int64_t, int64_t>> ranges(figures.chunkLayers);
      if (ranges.empty())
        ranges.push_back({figures.firstLayer, figures.lastLayer});
      if (staged)
        figures.stashBytesPerMicrobatch +=
            countReceivedStashBytes(step, unrolled, i);
      for (auto [first, last] : ranges)
        for (int64_t layer = first; layer <= last; ++layer)
          figures.stashBytesPerMicrobatch += (*stash)[layer];
      if (!options.mesh.empty() &&
          failed(countCommBytes(
              step, unrolled, figures.commPerMicrobatch,
              figures.commPerStep,
              staged ? std::optional<int64_t>(i) : std::nullopt)))
        return failure();
    }
  }

  if (failed(runPhase(buildLowerToExecutable)))
    return failure();
  return success(!report || (succeeded(readMemoryFigures(module, *report)) &&
                             succeeded(readPoolFigures(module, *report))));
}

namespace {

/// The pipelines' option string: tpc-compile's flags, by the same names.
/// Values are kept as text for parseCompileOptions, which reads and checks
/// them as it does tpc-compile's; the switches are booleans, so that a bare
/// `train` or `sequence-parallel` means true.
struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  using Text = Option<std::string>;
  using Switch = Option<bool>;

  Switch train{*this, "train",
               llvm::cl::desc("Compile the training step (tpc-compile "
                              "--train)")};
  Text mesh{*this, "mesh",
            llvm::cl::desc("Device mesh, e.g. dp=2,tp=2 (as tpc-compile "
                           "--mesh)")};
  Switch sequenceParallel{*this, "sequence-parallel",
                          llvm::cl::desc("Sequence parallelism over tp")};
  Switch vocabParallel{
      *this, "vocab-parallel",
      llvm::cl::desc("Split the embedding and LM head over tp (default)")};
  Text padVocab{*this, "pad-vocab",
                llvm::cl::desc("Pad the vocabulary to a multiple of this, "
                               "per tp block (default 1; as tpc-compile "
                               "--pad-vocab)")};
  Switch unrollMicrobatches{
      *this, "unroll-microbatches",
      llvm::cl::desc("Unroll the microbatches into one kernel list instead "
                     "of functions run by actions")};
  Switch keepDropout{
      *this, "keep-dropout",
      llvm::cl::desc("Without train: keep the model's dropout (as "
                     "tpc-compile --keep-dropout)")};
  Switch blockingTransfers{
      *this, "blocking-transfers",
      llvm::cl::desc("With pp > 1: a template's transfers block where the "
                     "schedule sends and receives (as tpc-compile "
                     "--blocking-transfers)")};
  Text shardingPass{
      *this, "sharding-pass",
      llvm::cl::desc("The pass that annotates the layouts in place of "
                     "dist-annotate-megatron (as tpc-compile --sharding-pass)")};
  Text seed{*this, "seed", llvm::cl::desc("The dropout seed (default 0)")};
  Text schedule{*this, "schedule",
                llvm::cl::desc("With pp > 1: gpipe, 1f1b (default), "
                               "interleaved-1f1b, zb-h1 or zb-v")};
  Text virtualStages{*this, "virtual-stages",
                     llvm::cl::desc("With pp > 1: chunks per rank (default 1; "
                                    "2 for interleaved-1f1b and zb-v)")};
  Text stageLayers{*this, "stage-layers",
                   llvm::cl::desc("With pp > 1: layers per chunk, "
                                  "comma-separated (default: balanced)")};
  Text microbatches{*this, "microbatches",
                    llvm::cl::desc("Microbatches (default 1)")};
  Text optimizer{*this, "optimizer", llvm::cl::desc("adamw (default) or sgd")};
  Text lr{*this, "lr", llvm::cl::desc("Peak learning rate (default 1e-3)")};
  Text beta1{*this, "beta1", llvm::cl::desc("AdamW beta1 (default 0.9)")};
  Text beta2{*this, "beta2", llvm::cl::desc("AdamW beta2 (default 0.999)")};
  Text eps{*this, "eps", llvm::cl::desc("AdamW epsilon (default 1e-8)")};
  Text weightDecay{*this, "weight-decay",
                   llvm::cl::desc("Default: 0.01 for adamw, 0 for sgd")};
  Text decayExclude{
      *this, "decay-exclude",
      llvm::cl::desc("No weight decay where the parameter's name contains one "
                     "of these comma-separated strings")};
  Text momentum{*this, "momentum", llvm::cl::desc("SGD momentum (default 0)")};
  Text gradClip{*this, "grad-clip",
                llvm::cl::desc("Clip the global gradient norm (default 0: "
                               "none)")};
  Text lrSchedule{*this, "lr-schedule",
                  llvm::cl::desc("constant (default) or cosine")};
  Text warmupSteps{*this, "warmup-steps",
                   llvm::cl::desc("Cosine: steps of linear warm-up")};
  Text decaySteps{*this, "decay-steps",
                  llvm::cl::desc("Cosine: the step the rate reaches min-lr")};
  Text minLr{*this, "min-lr", llvm::cl::desc("Cosine: the final rate")};
  Text gradReduceDType{
      *this, "grad-reduce-dtype",
      llvm::cl::desc("Element type of the gradients' reductions over the "
                     "ranks: fp32 (default) or bf16")};
  Text gradBucketMiB{
      *this, "grad-bucket-mb",
      llvm::cl::desc("MiB of gradients reduced as one NCCL group on the CUDA "
                     "device (default 25; 0: each alone)")};
  Text remat{*this, "remat",
             llvm::cl::desc("Activation rematerialization: none (default), "
                            "selective, full, uniform:N, block:N, "
                            "layers:E,... or auto (the least recompute that "
                            "fits memory-limit, each candidate compiled; as "
                            "tpc-compile --remat)")};
  Text memoryLimit{*this, "memory-limit",
                   llvm::cl::desc("The bytes each rank's planned peak must "
                                  "fit, e.g. 80GB or 80GiB (as tpc-compile "
                                  "--memory-limit); checked after the memory "
                                  "plan")};
  Text target{*this, "target",
              llvm::cl::desc("cpu (default) or cuda: cuda pads the "
                             "vocabulary to a multiple of 64 unless pad-vocab "
                             "is given (as tpc-compile --target)")};

  /// The options given, as text by their names.
  CompileSettings given() const {
    CompileSettings settings;
    for (const Switch *option :
         {&train, &sequenceParallel, &vocabParallel, &unrollMicrobatches,
          &blockingTransfers, &keepDropout})
      if (option->hasValue())
        settings[option->ArgStr] = option->getValue() ? "true" : "false";
    for (const Text *option : {&mesh,        &padVocab,        &shardingPass,
                               &seed,        &schedule,        &virtualStages,
                               &stageLayers, &microbatches,    &optimizer,
                               &lr,          &beta1,           &beta2,
                               &eps,         &weightDecay,     &decayExclude,
                               &momentum,    &gradClip,        &lrSchedule,
                               &warmupSteps, &decaySteps,      &minLr,
                               &remat,       &gradReduceDType, &gradBucketMiB,
                               &memoryLimit, &target})
      if (option->hasValue())
        settings[option->ArgStr] = option->getValue();
    return settings;
  }
};

using PhaseBuilder = void (*)(OpPassManager &, const CompileOptions &);

/// Registers `phases` as pipeline `name`; `train` (tpc-train-pipeline)
/// implies the option train.
void registerPhase(StringRef name, StringRef description,
                   ArrayRef<PhaseBuilder> phases, bool train = false) {
  SmallVector<PhaseBuilder> builders(phases);
  std::string pipeline = name.str();
  registerPassPipeline(
      name, description,
      [builders, train, pipeline](
          OpPassManager &pm, StringRef text,
          function_ref<LogicalResult(const Twine &)> error) {
        CompilePipelineOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        CompileSettings settings = parsed.given();
        if (train) {
          if (settings.lookup("train") == "false")
            return error(pipeline + " compiles a training step: train=false "
                                    "is tpc-compile-pipeline's");
          settings["train"] = "true";
        }
        CompileOptions options;
        std::string why;
        if (failed(parseCompileOptions(settings, "", options, why)))
          return error(why);
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
  registerPhase("tpc-train-pipeline",
                "tpc-compile --train's whole flow (tpc-compile-pipeline with "
                "train implied): the training step's planned rt module",
                {buildPrepareForward, buildTrainStep, buildUnrollTrainStep,
                 buildDistribute, buildLowerToExecutable},
                /*train=*/true);
  registerPhase("tpc-prepare-forward",
                "Phase 1: without train (and keep-dropout), "
                "tpc-strip-dropout (evaluation); dist-pad-vocab and "
                "dist-replicate-kv-heads on @forward with a mesh of tp > 1; "
                "dist-pipeline-split and dist-pipeline-outline with pp > 1",
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
