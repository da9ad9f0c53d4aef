//===- RematSearch.cpp - remat auto's search ------------------------------===//
//
// Chooses, per pipeline stage, the rematerialization with the least
// recompute FLOPs whose planned peak fits --memory-limit (issue 14;
// docs/design/remat.md, "auto"). The peaks are not modelled: each
// candidate is compiled (tpc-remat, the distribution, the lowering and
// rt-plan-memory on a copy of the module), so a candidate's peak is the
// one the executable will have, and the stage's schedule (how many
// microbatches it holds at once) is in it. Every stage's peak depends on
// its own layers alone, so one compile measures a candidate of every
// stage at once.
//
// The search space, per stage of L layers (in order, over its chunks):
// `a` full layers, then `b` selective ones (only with unfused attention,
// where selective recomputes something), then none — Megatron's block
// order, which recomputes the layers whose stash lives longest — and, if no
// such choice fits, checkpointed groups of N consecutive layers of a chunk
// (uniform:N). More recomputation never needs more memory, so for each b
// the fewest full layers that fit are found by bisection, and fewer as b
// grows; the least recompute FLOPs over all of them is the choice.
//
//===----------------------------------------------------------------------===//

#include "tpc/Pipelines/Pipelines.h"

#include "dialects/Dist/Transforms/Passes.h"
#include "dialects/Rt/Transforms/PlanMemory.h"
#include "dialects/Tpc/IR/TpcDialect.h"
#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// One stage's candidate: `full` full layers, then `selective` selective
/// ones, the rest none; or with `group` > 0, checkpointed groups of that
/// many layers of each chunk.
struct Candidate {
  int64_t full = 0, selective = 0, group = 0;
  bool operator<(const Candidate &other) const {
    return std::tie(full, selective, group) <
           std::tie(other.full, other.selective, other.group);
  }
};

/// What one compile measured for a stage.
struct Probe {
  int64_t peak = 0;
  int64_t flops = 0;
};

/// The search of one stage (see the file comment).
class StageSearch {
public:
  StageSearch(SmallVector<int64_t> layers, SmallVector<int64_t> chunkSizes,
              bool selectiveHelps, int64_t limit)
      : layers(std::move(layers)), chunkSizes(std::move(chunkSizes)),
        selectiveHelps(selectiveHelps), limit(limit) {}

  /// The next candidate to compile, or nullopt once the search is done.
  std::optional<Candidate> next() {
    while (!done) {
      std::optional<Candidate> candidate = step();
      if (!candidate)
        continue;
      if (!probes.count(*candidate))
        return candidate;
      // Known already: its answer drives the search on.
      observe(*candidate, probes[*candidate]);
    }
    return std::nullopt;
  }

  void observe(Candidate candidate, Probe probe) {
    probes[candidate] = probe;
    bool fits = probe.peak <= limit;
    if (fits && (!best || probe.flops < probes[*best].flops ||
                 (probe.flops == probes[*best].flops &&
                  probe.peak < probes[*best].peak)))
      best = candidate;
    switch (phase) {
    case Phase::None:
      // Nothing recomputed already fits: nothing to gain.
      phase = fits ? Phase::Done : Phase::Bisect;
      if (!fits)
        startBisection(0, numLayers(), /*lastFits=*/false);
      break;
    case Phase::Bisect:
      if (fits)
        high = candidate.full;
      else
        low = candidate.full + 1;
      if (low >= high)
        finishBisection();
      break;
    case Phase::Groups:
      ++groupSize;
      break;
    case Phase::Done:
      break;
    }
    done = phase == Phase::Done;
  }

  /// tpc-remat's entry for each of the stage's layers under `candidate`.
  void entries(Candidate candidate, std::map<int64_t, std::string> &out) const {
    if (candidate.group > 0) {
      size_t at = 0;
      for (int64_t size : chunkSizes) {
        for (int64_t i = 0; i < size; ++i)
          out[layers[at + i]] =
              "g" + std::to_string(layers[at + i / candidate.group *
                                                    candidate.group]);
        at += size;
      }
      return;
    }
    for (auto [i, layer] : llvm::enumerate(layers))
      out[layer] = static_cast<int64_t>(i) < candidate.full ? "f"
                   : static_cast<int64_t>(i) <
                           candidate.full + candidate.selective
                       ? "s"
                       : "n";
  }

  std::string describe(Candidate candidate) const {
    if (candidate.group > 0)
      return "uniform:" + std::to_string(candidate.group);
    return llvm::formatv("full {0}, selective {1}, none {2} of {3} layers",
                         candidate.full, candidate.selective,
                         numLayers() - candidate.full - candidate.selective,
                         numLayers())
        .str();
  }

  std::optional<Candidate> best;
  std::map<Candidate, Probe> probes;
  /// The least peak of any candidate compiled (what a failure reports).
  int64_t leastPeak() const {
    int64_t least = std::numeric_limits<int64_t>::max();
    for (const auto &entry : probes)
      least = std::min(least, entry.second.peak);
    return least;
  }

private:
  enum class Phase { None, Bisect, Groups, Done };

  int64_t numLayers() const { return layers.size(); }

  /// The candidate the current phase asks about next (nullopt when the
  /// phase just ended).
  std::optional<Candidate> step() {
    switch (phase) {
    case Phase::None:
      return Candidate{};
    case Phase::Bisect:
      return Candidate{(low + high) / 2, selective, 0};
    case Phase::Groups: {
      if (groupSize > largestChunk()) {
        phase = Phase::Done;
        done = true;
        return std::nullopt;
      }
      return Candidate{0, 0, groupSize};
    }
    case Phase::Done:
      done = true;
      return std::nullopt;
    }
    return std::nullopt;
  }

  /// The fewest full layers in [from, to] that fit with `selective`
  /// selective layers (to + 1: none does); `lastFits` if `to` is known to.
  void startBisection(int64_t from, int64_t to, bool lastFits) {
    low = from;
    high = lastFits ? to : to + 1;
    limitHigh = to + 1;
    if (low >= high)
      finishBisection();
  }

  void finishBisection() {
    // Fewer full layers are needed as more layers are selective (the
    // fewest so far still fits: one more selective layer recomputes
    // more); once none is, more selective layers only cost more.
    bool found = low < limitHigh;
    if (selectiveHelps && selective < numLayers() && !(found && low == 0)) {
      ++selective;
      int64_t most = numLayers() - selective;
      if (found && low <= most)
        startBisection(0, low, /*lastFits=*/true);
      else
        startBisection(0, most, /*lastFits=*/false);
      return;
    }
    // Every layer recomputed alone and still over: checkpointed groups
    // keep fewer inputs.
    if (!best && largestChunk() > 1) {
      phase = Phase::Groups;
      groupSize = 2;
      return;
    }
    phase = Phase::Done;
  }

  int64_t largestChunk() const {
    return chunkSizes.empty() ? 0 : *llvm::max_element(chunkSizes);
  }

  SmallVector<int64_t> layers, chunkSizes;
  bool selectiveHelps;
  int64_t limit;
  Phase phase = Phase::None;
  bool done = false;
  int64_t selective = 0, low = 0, high = 0, limitHigh = 0, groupSize = 2;
};

/// Each stage's layers, in order, and its chunks' sizes: from
/// dist-pipeline-split's `dist.pipeline`, or every layer on one stage.
LogicalResult stageLayers(ModuleOp module, int64_t numLayers,
                          const CompileOptions &options,
                          SmallVectorImpl<SmallVector<int64_t>> &layers,
                          SmallVectorImpl<SmallVector<int64_t>> &chunkSizes) {
  auto split = module->getAttrOfType<DictionaryAttr>(dist::kPipelineAttrName);
  if (!split) {
    layers.emplace_back();
    for (int64_t layer = 0; layer < numLayers; ++layer)
      layers.back().push_back(layer);
    chunkSizes.push_back({numLayers});
    return success();
  }
  auto ranks = split.getAs<DenseI64ArrayAttr>("ranks");
  auto ranges = split.getAs<DenseI64ArrayAttr>("layers");
  if (!ranks || !ranges || ranges.size() != 2 * ranks.size())
    return module.emitError()
           << options.setting("remat", "auto")
           << ": the module's 'dist.pipeline' has no chunks' ranks and layers";
  int64_t numStages = 0;
  for (int64_t rank : ranks.asArrayRef())
    numStages = std::max(numStages, rank + 1);
  layers.resize(numStages);
  chunkSizes.resize(numStages);
  for (auto [chunk, rank] : llvm::enumerate(ranks.asArrayRef())) {
    int64_t first = ranges[2 * chunk], last = ranges[2 * chunk + 1];
    if (last < first)
      continue;
    for (int64_t layer = first; layer <= last; ++layer)
      layers[rank].push_back(layer);
    chunkSizes[rank].push_back(last - first + 1);
  }
  for (SmallVector<int64_t> &stage : layers)
    llvm::sort(stage);
  return success();
}

/// Compiles `policy` on a copy of `module` (the unrolled step): each
/// stage's planned peak and recompute FLOPs per microbatch.
FailureOr<SmallVector<Probe>> compileCandidate(ModuleOp module,
                                               const CompileOptions &options,
                                               StringRef policy,
                                               size_t numStages) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  MLIRContext *context = module.getContext();
  PassManager distribute(context);
  TpcRematOptions remat;
  remat.policy = policy.str();
  distribute.addPass(createTpcRemat(remat));
  buildDistribute(distribute, options);
  if (failed(distribute.run(*copy)))
    return failure();
  auto step = copy->lookupSymbol<func::FuncOp>(options.loweredFunction());
  if (!step)
    return module.emitError() << options.setting("remat", "auto")
                              << ": no func.func @"
                              << options.loweredFunction();
  bool staged = numStages > 1;
  int64_t unrolled =
      options.microbatchActions() ? 1 : options.autodiff.microbatches;
  SmallVector<Probe> probes(numStages);
  for (auto [stage, probe] : llvm::enumerate(probes))
    probe.flops = countRecomputeFlops(step, staged ? std::optional<int64_t>(
                                                         stage)
                                                   : std::nullopt) /
                  unrolled;
  // The candidate's peak is measured, not held to the limit.
  CompileOptions unlimited = options;
  unlimited.memoryLimit = 0;
  PassManager lower(context);
  buildLowerToExecutable(lower, unlimited);
  if (failed(lower.run(*copy)))
    return failure();
  // The peaks rt-plan-memory wrote (the executable's planned peaks).
  FailureOr<SmallVector<int64_t>> peaks =
      rt::readPlannedPeaks(*copy, numStages);
  if (failed(peaks))
    return failure();
  for (auto [probe, peak] : llvm::zip(probes, *peaks))
    probe.peak = peak;
  return probes;
}

} // namespace

FailureOr<std::string>
mlir::tpc::chooseRemat(ModuleOp module, const CompileOptions &options,
                       SmallVectorImpl<RematChoice> &choices) {
  auto model = module->getAttrOfType<DictionaryAttr>("tpc.model");
  auto numLayers = model ? model.getAs<IntegerAttr>("layers") : nullptr;
  if (!numLayers)
    return module.emitError() << options.setting("remat", "auto")
                              << ": the module has no 'tpc.model' with its "
                                 "layers (tpc-import writes it)";
  SmallVector<SmallVector<int64_t>> layers, chunkSizes;
  if (failed(stageLayers(module, numLayers.getInt(), options, layers,
                         chunkSizes)))
    return failure();
  // Selective recomputes the attention core of unfused attention only.
  bool selectiveHelps = false;
  module.walk([&](BatchMatmulOp op) {
    selectiveHelps |= op->hasAttr(kLayerAttrName);
  });
  std::vector<StageSearch> searches;
  for (auto [stageLayers, sizes] : llvm::zip(layers, chunkSizes))
    searches.emplace_back(stageLayers, sizes, selectiveHelps,
                          options.memoryLimit);

  // The candidates' warnings would repeat the compile's own.
  ScopedDiagnosticHandler quiet(module.getContext(), [](Diagnostic &diag) {
    return success(diag.getSeverity() != DiagnosticSeverity::Error);
  });
  auto policyOf = [&](ArrayRef<std::optional<Candidate>> candidates) {
    std::map<int64_t, std::string> entries;
    for (auto [search, candidate] : llvm::zip(searches, candidates))
      search.entries(candidate.value_or(Candidate{}), entries);
    SmallVector<std::string> list;
    for (int64_t layer = 0; layer < numLayers.getInt(); ++layer)
      list.push_back(entries.count(layer) ? entries[layer] : "n");
    return "layers:" + llvm::join(list, ",");
  };
  for (int compiles = 1;; ++compiles) {
    SmallVector<std::optional<Candidate>> round;
    bool any = false;
    for (StageSearch &search : searches) {
      round.push_back(search.next());
      any |= round.back().has_value();
    }
    if (!any)
      break;
    std::string policy = policyOf(round);
    FailureOr<SmallVector<Probe>> probes =
        compileCandidate(module, options, policy, searches.size());
    if (failed(probes))
      return failure();
    for (auto [stage, search] : llvm::enumerate(searches)) {
      if (!round[stage])
        continue;
      const Probe &probe = (*probes)[stage];
      llvm::errs() << llvm::formatv(
          "{0}{1}: compile {2}: stage {3}: {4}: planned peak {5} bytes ({6} "
          "the limit), recompute {7} FLOPs per microbatch\n",
          options.progressPrefix, options.setting("remat", "auto"), compiles,
          stage, search.describe(*round[stage]), probe.peak,
          probe.peak <= options.memoryLimit ? "within" : "over", probe.flops);
      search.observe(*round[stage], probe);
    }
  }
  SmallVector<std::string> missing;
  for (auto [stage, search] : llvm::enumerate(searches))
    if (!search.best)
      missing.push_back(llvm::formatv("stage {0} needs {1} bytes more (its "
                                      "least planned peak is {2})",
                                      stage,
                                      search.leastPeak() - options.memoryLimit,
                                      search.leastPeak()));
  if (!missing.empty())
    return module.emitError()
           << options.setting("remat", "auto") << ": no policy fits "
           << options.setting("memory-limit",
                              std::to_string(options.memoryLimit))
           << " bytes: " << llvm::join(missing, "; ");
  SmallVector<std::optional<Candidate>> chosen;
  for (StageSearch &search : searches) {
    chosen.push_back(search.best);
    const Probe &probe = search.probes[*search.best];
    choices.push_back({search.describe(*search.best), probe.peak,
                       probe.flops});
  }
  return policyOf(chosen);
}
