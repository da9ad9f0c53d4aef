//===- Pipelines.h - the compile flow as pass pipelines ---------*- C++ -*-===//
//
// The flow tpc-compile runs, as phases that add passes to a pass manager,
// and their registration as tpc-opt pipelines (docs/architecture.md):
//
//   prepare-forward       dist-pad-vocab, dist-replicate-kv-heads (tp > 1)
//   build-train-step      tpc-autodiff, tpc-optimizer (--train)
//   unroll-train-step     tpc-unroll-train-step, @forward dropped (--train),
//                         tpc-remat (or tpc-remat-auto: chooseRemat)
//   distribute            dist-mesh, dist-annotate-megatron, dist-propagate,
//                         dist-partition (a mesh)
//   lower-to-executable   tpc-lower-to-rt, rt-plan-memory (checked), the
//                         memory limit (tpc-check-memory-limit)
//
// Each phase is empty where its condition does not hold, so a tool can run
// them one by one (tpc-compile reads the report between them) or all at
// once (tpc-opt --tpc-compile-pipeline), with the same result.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_PIPELINES_PIPELINES_H
#define TPC_PIPELINES_PIPELINES_H

#include "dialects/Rt/Transforms/ReductionBuckets.h"
#include "dialects/Tpc/Transforms/Passes.h"
#include "tpc/Analysis/Report.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <utility>

namespace mlir::tpc {

/// What one compile does: the options shared by tpc-compile (from its
/// flags) and tpc-opt's pipelines (from their option string).
struct CompileOptions {
  /// Build and lower the training step instead of @forward.
  bool train = false;
  TpcAutodiffOptions autodiff;
  TpcOptimizerOptions optimizer;
  /// The mesh axes above size 1, in the order pp, dp, tp (the ranks'
  /// order); empty: one device.
  SmallVector<std::pair<std::string, int64_t>> mesh;
  /// With pp > 1: the pipeline schedule (gpipe, 1f1b, interleaved-1f1b,
  /// zb-h1, zb-v), chunks per rank, their placement (round-robin, v) and
  /// the layers per chunk as given (empty: balanced).
  std::string schedule = "1f1b";
  int64_t virtualStages = 1;
  std::string placement = "round-robin";
  SmallVector<int64_t> stageLayers;
  /// A pass pipeline (text) that annotates the layouts in place of
  /// dist-annotate-megatron (e.g. a plugin's); empty: Megatron's.
  std::string shardingPipeline;
  bool sequenceParallel = false;
  bool vocabParallel = true;
  /// Pad the vocabulary (the LM head's rows and the embedding tables of its
  /// size) to a multiple of this, per tensor-parallel block where the
  /// vocabulary is split (dist-pad-vocab to padVocab x tp): a GEMM whose
  /// rows are an odd 50257 runs at a fraction of tensor-core speed. 1: only
  /// what vocabulary parallelism needs. Target cuda's default is
  /// kCudaVocabPadding.
  int64_t padVocab = 1;
  /// The device the executable is for: cpu or cuda (one .tpcx runs on both;
  /// cuda changes padVocab's default, nothing else).
  std::string target = "cpu";
  /// The dropout seed of the executable.
  uint64_t seed = 0;
  /// Unroll the microbatches into one kernel list (the form before the
  /// executable contract) instead of functions run by actions.
  bool unrollMicrobatches = false;
  /// A forward-only compile keeps the model's dropout (else it evaluates
  /// without, as Hugging Face's model.eval()).
  bool keepDropout = false;
  /// A pipeline template's transfers block where the schedule sends and
  /// receives instead of starting early and being waited for late.
  bool blockingTransfers = false;
  /// Activation rematerialization: tpc-remat's policy (none, selective,
  /// full, uniform:N, block:N, layers:...) or auto (chosen per stage to
  /// fit memoryLimit: chooseRemat).
  std::string remat = "none";
  /// The element type of the gradients' reductions over the ranks: fp32
  /// (the gradients' own), or bf16 (half the bytes on the wire; cast
  /// around each reduction: rt-reduce-gradients-in-bf16).
  std::string gradReduceDType = "fp32";
  /// The most bytes of a run of all_reduces issued as one (tpc-compile
  /// --grad-bucket-mb; rt-bucket-reductions, 0: each alone).
  int64_t gradBucketBytes = rt::kReductionBucketBytes;
  /// The bytes each rank's planned peak must fit (0: no limit).
  int64_t memoryLimit = 0;
  /// How messages name a setting: with "--" and a space before the value
  /// (tpc-compile's flags: `--remat auto`), or bare with '='
  /// (the pipelines' options: `remat=auto`); parseCompileOptions sets it
  /// from its prefix.
  std::string settingPrefix = "--";
  /// What remat auto's progress lines on stderr start with (tpc-compile
  /// sets "tpc-compile: ").
  std::string progressPrefix;

  /// `name` (with `value`) as the user wrote it: `--remat auto` or
  /// `remat=auto`.
  std::string setting(StringRef name, StringRef value = "") const;

  /// Whether the training step compiles to functions run by actions, one
  /// per microbatch (one device with several microbatches, or a pipeline
  /// without dp or tp; not unrolled).
  bool microbatchActions() const;

  /// The size of mesh axis `name` (1 if the mesh lacks it).
  int64_t axisSize(StringRef name) const;
  /// The function that is lowered: @train_step or @forward.
  StringRef loweredFunction() const;
};

/// Reads a byte count: an integer, or a number with a unit (kB, MB, GB, TB:
/// powers of 1000; KiB, MiB, GiB, TiB: of 1024; B), rounded down to whole
/// bytes; nullopt if it is not one (or passes 2^63).
std::optional<int64_t> parseByteCount(StringRef text);

/// Reads `--mesh`-style text (`dp=2,pp=1,tp=4`) into the axes above size 1,
/// in the order pp, dp, tp. On a bad value returns failure with `error`
/// saying why (without the flag's name). `scope` is unused (kept for
/// callers that name what the tool can do).
LogicalResult parseMesh(StringRef text,
                        SmallVector<std::pair<std::string, int64_t>> &axes,
                        std::string &error, StringRef scope = "");

/// The settings of one compile as the user wrote them, by name: tpc-compile's
/// flags and the pipelines' options (`train`, `optimizer`, `lr`, ...,
/// `microbatches`, `mesh`, `sequence-parallel`, `vocab-parallel`,
/// `pad-vocab`,
/// `sharding-pass`, `seed`; README). A setting not given is absent.
using CompileSettings = llvm::StringMap<std::string>;

/// Reads and checks `settings` into `options` (the defaults where absent):
/// each value, and the settings against each other (a training setting needs
/// train, an AdamW setting the adamw optimizer, sequence parallelism tp > 1,
/// a sharding pass a mesh, ...). On the first bad one returns failure with
/// `error` naming it with `prefix` ("--" for flags, "" for pipeline
/// options); `scope` is passed to parseMesh.
LogicalResult parseCompileOptions(const CompileSettings &settings,
                                  StringRef prefix, CompileOptions &options,
                                  std::string &error, StringRef scope = "");

/// Whether `text` is a pass pipeline tpc knows (a plugin's passes once
/// loaded); if not, `error` says why in one line.
LogicalResult checkShardingPipeline(StringRef text, std::string &error);

/// Phase 1: without train (and keepDropout) tpc-strip-dropout, evaluation
/// as Hugging Face's model.eval(); the padding tensor parallelism needs
/// (buildPadShapes), then, with pp > 1, dist-pipeline-split and
/// dist-pipeline-outline.
void buildPrepareForward(OpPassManager &pm, const CompileOptions &options);
/// dist-pad-vocab to a multiple of pad-vocab (x tp with vocabulary
/// parallelism) where that is above 1; with tp > 1 dist-replicate-kv-heads.
void buildPadShapes(OpPassManager &pm, const CompileOptions &options);
void buildTrainStep(OpPassManager &pm, const CompileOptions &options);
void buildUnrollTrainStep(OpPassManager &pm, const CompileOptions &options);
void buildDistribute(OpPassManager &pm, const CompileOptions &options);
void buildLowerToExecutable(OpPassManager &pm, const CompileOptions &options);
/// All of the above, in order.
void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options);

/// What --remat auto chose for one pipeline stage (the whole model without
/// a pipeline), as its compile measured it.
struct RematChoice {
  /// "full 2, selective 0, none 2 of 4 layers" or "uniform:2".
  std::string description;
  int64_t plannedPeak = 0;
  int64_t recomputeFlopsPerMicrobatch = 0;
};

/// --remat auto on `module`, the unrolled training step before tpc-remat:
/// per stage, the candidate with the least recompute FLOPs whose planned
/// peak fits options.memoryLimit, each candidate compiled on a copy of
/// the module (lib/Pipelines/RematSearch.cpp; progress on stderr). Returns
/// tpc-remat's policy for all stages (`layers:...`) and fills `choices`
/// per stage; fails naming the stage and the bytes missing when none fits.
FailureOr<std::string> chooseRemat(ModuleOp module,
                                   const CompileOptions &options,
                                   SmallVectorImpl<RematChoice> &choices);

/// The module attribute where tpc-remat-auto records its choices, one
/// dictionary per stage (`description`, `planned_peak`,
/// `recompute_flops_per_microbatch`): what the report says and what
/// tpc-check-memory-limit holds the plan to.
constexpr llvm::StringLiteral kRematAutoAttrName = "tpc.remat_auto";

/// The choices tpc-remat-auto recorded on `module` (none: empty).
FailureOr<SmallVector<RematChoice>> readRematChoices(ModuleOp module);

/// tpc-remat-auto: chooseRemat on the unrolled step, then tpc-remat with the
/// policy chosen, the choices recorded (kRematAutoAttrName). Added by
/// buildUnrollTrainStep for remat auto (lib/Pipelines/RematAuto.cpp).
std::unique_ptr<Pass> createRematAutoPass(const CompileOptions &options);

/// After rt-plan-memory: every stage's planned peak within
/// options.memoryLimit, and, where tpc-remat-auto chose, equal to the peak it
/// predicted. The error names the stages over and by how much.
LogicalResult checkMemoryLimit(ModuleOp module, const CompileOptions &options);

/// tpc-check-memory-limit: checkMemoryLimit as a pass. Added by
/// buildLowerToExecutable where options.memoryLimit is set
/// (lib/Pipelines/MemoryLimit.cpp).
std::unique_ptr<Pass>
createCheckMemoryLimitPass(const CompileOptions &options);

/// What `module` must satisfy for `options` that the passes cannot see
/// whole: on a mesh with dp > 1, every input's batch divides by dp ×
/// microbatches. The error names the setting.
LogicalResult checkModuleForOptions(ModuleOp module,
                                    const CompileOptions &options);

/// Runs the phases on `module` one by one (the same passes as
/// buildCompilePipeline). With `report`, fills it from the read-only analyses
/// of tpc/Analysis at the phase boundaries: the model before the training
/// step replaces @forward, the stash, FLOPs and collectives of the
/// distributed step before lowering hides them, the memory plan at the end.
/// A forward-only compile stashes nothing for a backward: its stash is 0.
LogicalResult runCompileFlow(ModuleOp module, const CompileOptions &options,
                             CompileReport *report = nullptr);

/// Registers `tpc-compile-pipeline` and its phases with tpc-opt:
/// `tpc-prepare-forward`, `tpc-build-train-step` (the training step built
/// and unrolled), `tpc-distribute`, `tpc-lower-to-executable`; all take the
/// same options.
void registerTpcPipelines();

} // namespace mlir::tpc

#endif // TPC_PIPELINES_PIPELINES_H
