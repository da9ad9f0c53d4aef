//===- CompileOptions.cpp - one parser for the settings of a compile ------===//
//
// tpc-compile's flags and the pipelines' option string carry the same
// settings by the same names; both hand them here as text, so a value is
// read and checked once, with one message (naming the setting with the
// caller's prefix: "--" for flags, nothing for pipeline options).
//
//===----------------------------------------------------------------------===//

#include "tpc/Pipelines/Pipelines.h"

#include "dialects/Tpc/Transforms/Autodiff.h"
#include "tpc/Analysis/Hardware.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tpc;

int64_t CompileOptions::axisSize(StringRef name) const {
  for (const auto &[axis, size] : mesh)
    if (axis == name)
      return size;
  return 1;
}

bool CompileOptions::microbatchActions() const {
  if (!train || unrollMicrobatches)
    return false;
  // A pipeline runs its stages' actions whatever the microbatches.
  return axisSize("pp") > 1 || autodiff.microbatches > 1;
}

StringRef CompileOptions::loweredFunction() const {
  return train ? StringRef(kTrainStepName) : StringRef("forward");
}

std::string CompileOptions::setting(StringRef name, StringRef value) const {
  std::string text = settingPrefix + name.str();
  if (!value.empty())
    text += (settingPrefix.empty() ? "=" : " ") + value.str();
  return text;
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
  // Ranks are ordered pp-major, then dp, then tp (tp fastest, as
  // Megatron), whatever the order given.
  axes.clear();
  for (StringRef name : {"pp", "dp", "tp"})
    if (sizes.lookup(name) > 1)
      axes.push_back({name.str(), sizes.lookup(name)});
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

namespace {

/// Reads the settings in order; the first bad one sets `error`.
class SettingsReader {
public:
  SettingsReader(const CompileSettings &settings, StringRef prefix,
                 std::string &error)
      : settings(settings), prefix(prefix), error(error) {}

  LogicalResult read(CompileOptions &options, StringRef scope);

private:
  /// The kinds of range a number takes.
  enum class Range { Positive, NonNegative, Fraction };

  bool given(StringRef name) const { return settings.count(name); }
  StringRef text(StringRef name, StringRef initial) const {
    auto it = settings.find(name);
    return it == settings.end() ? initial : StringRef(it->second);
  }
  LogicalResult fail(const Twine &message) {
    error = message.str();
    return failure();
  }
  /// `<prefix><name>: '<text>' is not <what>`.
  LogicalResult notA(StringRef name, StringRef initial, const Twine &what) {
    return fail(prefix + name + ": '" + text(name, initial) + "' is not " +
                what);
  }
  LogicalResult readBool(StringRef name, bool initial, bool &value);
  /// A finite number of `range` (Fraction: [0, 1)) at most `max`.
  LogicalResult readNumber(StringRef name, StringRef initial, Range range,
                           double &value,
                           double max = std::numeric_limits<double>::infinity(),
                           StringRef what = "");
  LogicalResult readInteger(StringRef name, StringRef initial, int64_t low,
                            const Twine &what, int64_t &value);
  LogicalResult readTraining(CompileOptions &options);
  LogicalResult readPipeline(CompileOptions &options);

  const CompileSettings &settings;
  StringRef prefix;
  std::string &error;
};

/// The largest pad-vocab multiple accepted.
constexpr int64_t kMostVocabPadding = 1024;

/// The settings that need a pipeline (a mesh with pp > 1).
constexpr StringRef kPipelineSettings[] = {"schedule", "virtual-stages",
                                           "stage-layers",
                                           "blocking-transfers"};

/// The training settings, in the order their checks run.
constexpr StringRef kTrainingSettings[] = {"optimizer",
                                           "lr",
                                           "beta1",
                                           "beta2",
                                           "eps",
                                           "weight-decay",
                                           "decay-exclude",
                                           "momentum",
                                           "grad-clip",
                                           "lr-schedule",
                                           "warmup-steps",
                                           "min-lr",
                                           "decay-steps",
                                           "microbatches",
                                           "unroll-microbatches",
                                           "remat",
                                           "grad-reduce-dtype",
                                           "grad-bucket-mb"};

LogicalResult SettingsReader::readBool(StringRef name, bool initial,
                                       bool &value) {
  StringRef valueText = text(name, initial ? "true" : "false").trim();
  if (valueText == "true" || valueText == "1" || valueText.empty())
    value = true;
  else if (valueText == "false" || valueText == "0")
    value = false;
  else
    return notA(name, "", "true or false");
  return success();
}

LogicalResult SettingsReader::readNumber(StringRef name, StringRef initial,
                                         Range range, double &value,
                                         double max, StringRef what) {
  bool ok = !text(name, initial).trim().getAsDouble(value) &&
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
    return success();
  if (what.empty())
    what = range == Range::Positive      ? "a positive number"
           : range == Range::NonNegative ? "a non-negative number"
                                         : "a number in [0, 1)";
  return notA(name, initial, what);
}

LogicalResult SettingsReader::readInteger(StringRef name, StringRef initial,
                                          int64_t low, const Twine &what,
                                          int64_t &value) {
  if (text(name, initial).trim().getAsInteger(10, value) || value < low)
    return notA(name, initial, what);
  return success();
}

LogicalResult SettingsReader::readTraining(CompileOptions &options) {
  StringRef remat = text("remat", "none").trim();
  if (remat == "auto") {
    if (!given("memory-limit"))
      return fail(prefix + (prefix.empty() ? "remat=auto" : "remat auto") +
                  " needs " + prefix +
                  "memory-limit: the bytes each rank's planned peak must "
                  "fit");
  } else if (!isRematPolicy(remat)) {
    return notA("remat", "none",
                remat.starts_with("uniform:") || remat.starts_with("block:")
                    ? "one of none, selective, full, uniform:N, block:N with "
                      "N a positive integer"
                : remat.starts_with("layers:")
                    ? "layers: followed by one entry per layer, each n, s, "
                      "f or gK (K a group number), separated by commas"
                    : "one of none, selective, full, uniform:N, block:N, "
                      "layers:E,..., auto");
  }
  options.remat = remat.str();
  TpcOptimizerOptions &o = options.optimizer;
  StringRef optimizer = text("optimizer", "adamw");
  if (optimizer != "adamw" && optimizer != "sgd")
    return notA("optimizer", "", "one of adamw, sgd");
  bool adamw = optimizer == "adamw";
  o.optimizer = optimizer.str();
  // Settings of the other optimizer are a mistake, not something to ignore.
  for (StringRef name : {"beta1", "beta2", "eps"})
    if (!adamw && given(name))
      return fail(prefix + name + " is an AdamW setting, but " + prefix +
                  "optimizer is sgd");
  if (adamw && given("momentum"))
    return fail(prefix + "momentum is an SGD setting, but " + prefix +
                "optimizer is adamw");

  double value;
  if (failed(readNumber("lr", "1e-3", Range::NonNegative, o.lr)) ||
      failed(readNumber("beta1", "0.9", Range::Fraction, o.beta1)) ||
      failed(readNumber("beta2", "0.999", Range::Fraction, o.beta2)) ||
      failed(readNumber("eps", "1e-8", Range::Positive, o.eps)))
    return failure();
  if (given("weight-decay")) {
    if (failed(readNumber("weight-decay", "", Range::NonNegative, value)))
      return failure();
    o.weightDecay = value;
  }
  StringRef exclude = text("decay-exclude", "");
  o.decayExclude.clear();
  for (StringRef part : llvm::split(exclude, ',')) {
    part = part.trim();
    if (part.empty()) {
      if (given("decay-exclude"))
        return fail(prefix + "decay-exclude: '" + exclude +
                    "' has an empty name; give comma-separated parts of "
                    "parameter names, e.g. bias,ln_");
      continue;
    }
    o.decayExclude.push_back(part.str());
  }
  if (failed(readNumber("momentum", "0", Range::NonNegative, o.momentum)) ||
      failed(readNumber("grad-clip", "0", Range::NonNegative, o.gradClip,
                        std::numeric_limits<double>::infinity(),
                        "a non-negative number (0: no clipping)")))
    return failure();

  StringRef reduceDType = text("grad-reduce-dtype", "fp32").trim();
  if (reduceDType != "fp32" && reduceDType != "bf16")
    return notA("grad-reduce-dtype", "fp32", "one of fp32, bf16");
  options.gradReduceDType = reduceDType.str();
  double bucketMiB = 25;
  if (failed(readNumber("grad-bucket-mb", "25", Range::NonNegative, bucketMiB,
                        1e9, "a non-negative number of MiB (0: no buckets)")))
    return failure();
  options.gradBucketBytes =
      static_cast<int64_t>(std::llround(bucketMiB * 1048576.0));

  StringRef schedule = text("lr-schedule", "constant");
  if (schedule != "constant" && schedule != "cosine")
    return notA("lr-schedule", "", "one of constant, cosine");
  o.lrSchedule = schedule.str();
  if (schedule == "constant") {
    for (StringRef name : {"warmup-steps", "min-lr", "decay-steps"})
      if (given(name))
        return fail(prefix + name + " needs " + prefix +
                    "lr-schedule cosine (the constant schedule has no "
                    "warm-up or decay)");
  } else {
    int64_t warmup, decay;
    if (failed(readInteger("warmup-steps", "0", 0, "a non-negative integer",
                           warmup)))
      return failure();
    if (!given("decay-steps"))
      return fail(prefix + "lr-schedule cosine needs " + prefix +
                  "decay-steps N: the step at which the rate reaches " +
                  prefix + "min-lr");
    if (failed(readInteger("decay-steps", "", warmup + 1,
                           "an integer greater than " + prefix +
                               "warmup-steps (" + Twine(warmup) + ")",
                           decay)))
      return failure();
    std::string range = ("a number in [0, " + prefix + "lr]").str();
    if (failed(readNumber("min-lr", "0", Range::NonNegative, value, o.lr,
                          range)))
      return failure();
    o.warmupSteps = warmup;
    o.totalSteps = decay;
    o.minLr = value;
  }
  int64_t count;
  if (failed(readInteger("microbatches", "1", 1, "a positive integer", count)))
    return failure();
  if (count > std::numeric_limits<unsigned>::max())
    return fail(prefix + "microbatches: '" + text("microbatches", "") +
                "' is too large");
  options.autodiff.microbatches = static_cast<unsigned>(count);
  return success();
}

LogicalResult SettingsReader::read(CompileOptions &options, StringRef scope) {
  if (failed(readBool("train", false, options.train)))
    return failure();
  if (!options.train) {
    for (StringRef name : kTrainingSettings)
      if (given(name))
        return fail(prefix + name +
                    " is a training setting: it needs " + prefix + "train");
  } else if (failed(readTraining(options))) {
    return failure();
  }
  if (failed(readBool("keep-dropout", false, options.keepDropout)))
    return failure();
  if (options.train && given("keep-dropout"))
    return fail(prefix + "keep-dropout is for a forward-only compile (a "
                "training step keeps its dropout)");
  if (StringRef mesh = text("mesh", ""); !mesh.empty()) {
    std::string why;
    if (failed(parseMesh(mesh, options.mesh, why, scope)))
      return fail(prefix + "mesh: " + why);
  }
  if (failed(readBool("sequence-parallel", false, options.sequenceParallel)) ||
      failed(readBool("vocab-parallel", true, options.vocabParallel)) ||
      failed(readBool("unroll-microbatches", false,
                      options.unrollMicrobatches)))
    return failure();
  StringRef target = text("target", "cpu");
  if (target != "cpu" && target != "cuda")
    return notA("target", "", "one of cpu, cuda");
  options.target = target.str();
  // A CUDA executable's LM head on whole tensor-core tiles. More than a
  // GEMM tile's worth of padding only costs memory and time.
  std::string padDefault =
      std::to_string(target == "cuda" ? kCudaVocabPadding : 1);
  if (failed(readInteger("pad-vocab", padDefault, 1, "a positive integer",
                         options.padVocab)))
    return failure();
  if (options.padVocab > kMostVocabPadding)
    return notA("pad-vocab", "1",
                "a positive integer up to " + Twine(kMostVocabPadding));
  if (options.sequenceParallel && options.axisSize("tp") <= 1)
    return fail(prefix + "sequence-parallel needs tensor parallelism: a " +
                prefix + "mesh with tp > 1");
  options.shardingPipeline = text("sharding-pass", "").str();
  if (!options.shardingPipeline.empty()) {
    if (options.mesh.empty())
      return fail(prefix + "sharding-pass needs a " + prefix +
                  "mesh to shard over");
    std::string why;
    if (failed(checkShardingPipeline(options.shardingPipeline, why)))
      return fail(prefix + "sharding-pass '" + options.shardingPipeline +
                  "': " + why + " (a plugin's pass needs " + prefix +
                  "load-pass-plugin)");
  }
  if (text("seed", "0").trim().getAsInteger(10, options.seed))
    return notA("seed", "0", "an integer in [0, 2^64)");
  if (given("memory-limit")) {
    std::optional<int64_t> bytes = parseByteCount(text("memory-limit", ""));
    if (!bytes || *bytes <= 0)
      return notA("memory-limit", "",
                  "a positive byte count: an integer, or a number with kB, "
                  "MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB "
                  "(powers of 1024), e.g. 80GB or 80GiB");
    options.memoryLimit = *bytes;
  }
  return readPipeline(options);
}

LogicalResult SettingsReader::readPipeline(CompileOptions &options) {
  int64_t stages = options.axisSize("pp");
  if (stages <= 1) {
    for (StringRef name : kPipelineSettings)
      if (given(name))
        return fail(prefix + name + " is a pipeline setting: it needs a " +
                    prefix + "mesh with pp > 1");
    return success();
  }
  if (!options.train)
    return fail(prefix + "mesh: pp=" + Twine(stages) +
                ": pipeline parallelism needs " + prefix +
                "train (a forward-only pipeline is not supported yet)");
  if (!options.shardingPipeline.empty())
    return fail(prefix + "sharding-pass cannot be combined with a pipeline "
                         "(pp > 1) yet");
  StringRef schedule = text("schedule", "1f1b").trim();
  if (!llvm::is_contained({"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                           "zb-v"},
                          schedule))
    return notA("schedule", "1f1b",
                "one of gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v");
  options.schedule = schedule.str();
  if (failed(readBool("blocking-transfers", false,
                      options.blockingTransfers)))
    return failure();
  // ZB-V runs two chunks per rank down and up a V; interleaved 1F1B at
  // least two, round robin; the others one.
  bool zbv = schedule == "zb-v", interleaved = schedule == "interleaved-1f1b";
  int64_t virtualStages;
  if (failed(readInteger("virtual-stages", interleaved || zbv ? "2" : "1", 1,
                         "a positive integer", virtualStages)))
    return failure();
  if (zbv && virtualStages != 2)
    return fail(prefix + "schedule zb-v runs 2 virtual stages per rank, not " +
                prefix + "virtual-stages " + Twine(virtualStages));
  if (interleaved && virtualStages < 2)
    return fail(prefix + "schedule interleaved-1f1b needs " + prefix +
                "virtual-stages 2 or more");
  if (!zbv && !interleaved && virtualStages != 1)
    return fail(prefix + "virtual-stages " + Twine(virtualStages) +
                " needs " + prefix + "schedule interleaved-1f1b (or zb-v)");
  options.virtualStages = virtualStages;
  options.placement = zbv ? "v" : "round-robin";
  if (given("stage-layers")) {
    SmallVector<StringRef> counts;
    text("stage-layers", "").split(counts, ',');
    for (StringRef count : counts) {
      int64_t layers;
      if (count.trim().getAsInteger(10, layers) || layers < 0)
        return notA("stage-layers", "",
                    "a comma-separated list of layer counts (integers >= 0)");
      options.stageLayers.push_back(layers);
    }
  }
  return success();
}

} // namespace

LogicalResult mlir::tpc::parseCompileOptions(const CompileSettings &settings,
                                             StringRef prefix,
                                             CompileOptions &options,
                                             std::string &error,
                                             StringRef scope) {
  options = CompileOptions();
  options.settingPrefix = prefix.str();
  return SettingsReader(settings, prefix, error).read(options, scope);
}

std::optional<int64_t> mlir::tpc::parseByteCount(StringRef text) {
  text = text.trim();
  // The unit: the longest suffix that matches (KiB before B).
  static constexpr std::pair<StringLiteral, double> kUnits[] = {
      {"KiB", 1024.0},
      {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"B", 1.0}};
  double scale = 1;
  for (const auto &[unit, factor] : kUnits)
    if (text.consume_back(unit)) {
      scale = factor;
      break;
    }
  text = text.trim();
  int64_t whole;
  if (scale == 1 && !text.getAsInteger(10, whole))
    return whole;
  double value;
  if (text.empty() || text.getAsDouble(value) || !std::isfinite(value) ||
      value < 0 || value * scale >= 9.2e18)
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
}
