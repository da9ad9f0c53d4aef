//===- tpc-measure-hardware.cpp - describe this machine's CPU ------------===//
//
// tpc-measure-hardware -o FILE.json [--ranks N] [--quick]
//
// Measures this machine's CPU as tpc-run's ranks use it and writes a hardware
// description for the compiler's cost model (docs/design/hardware-format.md):
// the fp32 GEMM peak and efficiency curve of the runtime's `linear` kernel,
// the memory bandwidth and the elementwise kernels' share of it, the fused
// attention kernels' efficiency, the per-kernel overhead of the CPU device,
// and all_reduce over N MPI ranks. The N ranks are started as
// `tpc-run --ranks N` starts them (mpiexec, OPENBLAS_NUM_THREADS = cores / N
// unless set) and measure at once, so that each rank's figures are those of
// one rank of a run that fills the machine. Every failure is an
// "error: ..." line on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Comm.h"
#include "tpcrt/CommandLine.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Device.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Launch.h"
#include "tpcrt/Program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sched.h>
#include <unistd.h>

using namespace tpcrt;
using Json = nlohmann::ordered_json;

namespace {

/// The most a kind's fraction of the memory bandwidth may be (a kernel on
/// tensors in a cache passes 1): parseHardware's limit (lib/Analysis/
/// Hardware.cpp), which this tool does not link.
constexpr double kMostKindFraction = 10;

const char kUsage[] =
    R"(usage: tpc-measure-hardware -o FILE.json [--ranks N] [--quick]

Measures this machine's CPU as tpc-run's ranks use it and writes a hardware
description for tpc-compile/tpc-plan --hardware (the format:
docs/design/hardware-format.md). It takes about 20 s with --quick and about
2 minutes without (on 2 cores). Progress lines go to stderr.

The N ranks start as `tpc-run --ranks N` starts them: this program
runs itself under `mpiexec --allow-run-as-root --oversubscribe -n N`
(mpiexec from PATH) with OPENBLAS_NUM_THREADS = cores / N (at least 1)
unless it is set; under mpirun/mpiexec or srun it uses the launcher's ranks.
Every rank runs every measurement at the same time as the others, so that
the figures are one rank's share of the machine (memory bandwidth, caches).
Each is the best of several samples taken in rounds over a group of
measurements; a kernel's figure is the least disturbed rank's, an
all_reduce's the slowest rank's. What it measures, with the
runtime's own fp32 CPU kernels:

  peak_flops.fp32         the best FLOP/s (2*m*n*k) of the `linear` kernel
                          over a ladder of shapes, from tiny to ~2 GFLOP,
                          transformer-like rectangular ones among them
  efficiency.gemm         per shape: its FLOPs and best rate / the peak
  memory_bandwidth        the best of memcpy, a STREAM triad and the `add`
                          kernel (STREAM's add) on arrays far beyond the
                          last-level cache, counting bytes read + written
  efficiency.elementwise_bandwidth
                          the memory-bound kernels add, gelu, layer_norm
                          and softmax on such arrays: all their bytes (read
                          + written) / all their time / memory_bandwidth;
                          and per kind (.kinds) each of those and mul,
                          gelu_grad, silu, silu_grad, the layer and RMS
                          norms' gradients, rms_norm, sum_to, dropout_mask,
                          apply_mask, cross_entropy and its gradient,
                          sum_squares and adamw_update: its bytes / its
                          time / memory_bandwidth
  efficiency.attention    the fused causal `attention` kernel and its
                          gradient (b=1, 4 heads, s=256, d=64 and 16; 128
                          heads, s=32, d=64; on tensors out of the caches,
                          as a step's): the rate of their matrix products
                          / the peak
  efficiency.attention_score_s
                          their time per score beside the products (fitted
                          from the two head dims), and with a dropout of
                          0.1 (drawn per score), and per query row (from a
                          run of 128 heads at s=32); block_rows: the kernels
                          compute blocks of 64 query rows up to each
                          block's last key, the scores both are counted
                          over
  efficiency.kernel_launch_s
                          one `add` on 16 floats through the CPU device
  intra_node, inter_node, efficiency.collective_bus_bandwidth
                          all_reduce (sum, fp32) over the N ranks (MPI) from
                          4 KiB to 64 MiB, and of one float for the latency
  devices_per_node        the CPU cores of this machine
  memory_bytes            MemTotal of /proc/meminfo

Options:
  -o, --output FILE.json  where to write the description (required); written
                          atomically (a temporary file renamed over it). Its
                          directory must exist
  --ranks N               ranks to run (default 2, at least 2: the
                          collectives need two); under a launcher, the
                          launcher's count (--ranks must then agree)
  --quick                 fewer shapes, sizes and repetitions (about 20 s;
                          the test suite's)
  --help                  show this text
)";

struct Options {
  std::string output;
  std::optional<uint64_t> ranks;
  bool quick = false;
  bool help = false;
};

Status parseArguments(int argc, char **argv, Options &options) {
  std::map<std::string, bool> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string flag = arg, value;
    bool hasValue = false;
    if (arg.compare(0, 2, "--") == 0) {
      if (size_t eq = arg.find('='); eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
    } else if (arg != "-o") {
      if (!arg.empty() && arg[0] == '-')
        return Status::error("unknown flag '" + arg + "' (see --help)");
      return Status::error("unexpected argument '" + arg +
                           "' (the output is -o FILE.json; see --help)");
    }
    if (flag == "-o")
      flag = "--output";
    if (flag != "--help" && flag != "--quick" && flag != "--output" &&
        flag != "--ranks")
      return Status::error("unknown flag '" + flag + "' (see --help)");
    if (seen[flag])
      return Status::error(flag + " is given twice");
    seen[flag] = true;
    if (flag == "--help" || flag == "--quick") {
      if (hasValue)
        return Status::error(flag + " takes no value");
      (flag == "--help" ? options.help : options.quick) = true;
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= argc)
        return Status::error(flag + " needs a value");
      value = argv[++i];
    }
    if (value.empty())
      return Status::error(flag + " needs a non-empty value");
    if (flag == "--output") {
      options.output = value;
      continue;
    }
    uint64_t ranks = 0;
    if (Status s = parseUnsigned(flag, value, ranks); !s)
      return s;
    if (ranks < 2)
      return Status::error("--ranks: must be at least 2 (all_reduce needs "
                           "two ranks to measure)");
    if (ranks > 4096)
      return Status::error("--ranks: " + value + " is more than 4096");
    options.ranks = ranks;
  }
  if (options.help)
    return Status::ok();
  if (options.output.empty())
    return Status::error("no output given (usage: tpc-measure-hardware -o "
                         "FILE.json; see --help)");
  return Status::ok();
}

/// Refuses an output the measurement could not be written to, before the
/// measurement: its directory must exist and be writable, and it must not
/// be a directory.
Status checkOutput(const std::string &path) {
  if (isDirectory(path))
    return Status::error("--output " + path + ": is a directory");
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  if (!isDirectory(dir))
    return Status::error("--output " + path + ": no directory " + dir);
  if (::access(dir.c_str(), W_OK) != 0)
    return Status::error("--output " + path + ": cannot write to " + dir +
                         ": " + std::strerror(errno));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Ranks and launchers (as tpc-run starts its ranks)
//===----------------------------------------------------------------------===//

/// This program's ranks (Launch.h): the ranks it starts carry
/// TPCRT_MEASURE_LAUNCHED=1, so that they do not start ranks again.
const RankLauncher kLauncher = {"tpc-measure-hardware",
                                "TPCRT_MEASURE_LAUNCHED"};

//===----------------------------------------------------------------------===//
// The machine
//===----------------------------------------------------------------------===//

/// The value of the first "key : value" line of a /proc file whose key is
/// `key`, or "".
std::string procField(const char *file, const std::string &key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t'))
      name.pop_back();
    if (name != key)
      continue;
    size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

/// MemTotal of /proc/meminfo in bytes, 0 where unknown.
uint64_t memTotalBytes() {
  std::string text = procField("/proc/meminfo", "MemTotal");
  char *end = nullptr;
  unsigned long long kib = std::strtoull(text.c_str(), &end, 10);
  return end == text.c_str() ? 0 : static_cast<uint64_t>(kib) * 1024;
}

/// The largest last-level cache of cpu0 (sysfs), 0 where unknown.
uint64_t lastLevelCacheBytes() {
  uint64_t largest = 0;
  for (int index = 0; index < 16; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream in(dir + "/size");
    std::string text;
    if (!(in >> text))
      break;
    char *end = nullptr;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    uint64_t bytes = value;
    if (*end == 'K')
      bytes *= 1024;
    else if (*end == 'M')
      bytes *= 1024 * 1024;
    largest = std::max(largest, bytes);
  }
  if (largest == 0) {
    long conf = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (conf > 0)
      largest = static_cast<uint64_t>(conf);
  }
  return largest;
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || !name[0])
    return "unknown-host";
  return name;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

/// printf into a std::string.
template <typename... Args> std::string format(const char *fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string text(static_cast<size_t>(std::max(n, 0)), '\0');
  std::snprintf(text.data(), text.size() + 1, fmt, args...);
  return text;
}

std::string bytesText(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0)
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

//===----------------------------------------------------------------------===//
// Timing on every rank at once
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The seconds per call of a body over its samples: this rank's samples,
/// then (Bench::finish) the best sample of one rank.
struct Timing {
  std::vector<double> perCall;
  /// Calls per sample (of the last pass).
  int64_t calls = 0;
  double best = 0.0;
  int samples() const { return static_cast<int>(perCall.size()); }
};

/// The measurement settings of a run (--quick or not).
struct Effort {
  /// Each sample runs the body at least this long (in calls of it).
  double sampleSeconds;
  /// Rounds over a group of measurements (the GEMM ladder, the
  /// memory-bound kernels, the all_reduce sizes): a spell of load from
  /// elsewhere then spoils a sample of each rather than every sample of one.
  int passes;
  /// Samples per pass: compute and memory kernels, collectives; samples of
  /// the kernel launch.
  int kernelSamples, collectiveSamples, launchSamples;
};

/// A body to time, and where its timing goes.
struct Task {
  std::function<Status()> body;
  Timing *timing;
  /// 0: Effort::sampleSeconds.
  double sampleSeconds = 0.0;
};

class Bench {
public:
  Bench(Communicator &world, const Effort &effort)
      : world_(world), effort_(effort) {}

  /// Runs `task` on every rank at once: two warm-up calls (the second timed:
  /// the slowest rank's time sets the calls per sample, the same on every
  /// rank, as a collective body needs), then `samples` samples, each
  /// started together after a barrier. Appends this rank's samples.
  Status sample(const Task &task, int samples) {
    double sampleSeconds =
        task.sampleSeconds > 0.0 ? task.sampleSeconds : effort_.sampleSeconds;
    if (Status s = task.body(); !s)
      return s;
    if (Status s = world_.barrier(); !s)
      return s;
    Clock::time_point start = Clock::now();
    if (Status s = task.body(); !s)
      return s;
    float once = static_cast<float>(since(start));
    if (Status s = world_.allReduceMax(&once, 1); !s)
      return s;
    double calls = std::ceil(sampleSeconds / std::max(1e-9, double(once)));
    Timing &timing = *task.timing;
    timing.calls = static_cast<int64_t>(std::clamp(calls, 1.0, 1e7));
    for (int sample = 0; sample < samples; ++sample) {
      if (Status s = world_.barrier(); !s)
        return s;
      start = Clock::now();
      for (int64_t i = 0; i < timing.calls; ++i)
        if (Status s = task.body(); !s)
          return s;
      timing.perCall.push_back(since(start) / double(timing.calls));
    }
    return Status::ok();
  }

  /// The best sample of `timing` on the rank whose best is the smallest
  /// (`least`: a kernel, which each rank runs alone, is best measured on the
  /// rank that was least disturbed by the rest of the machine) or the largest
  /// (a collective, which ends when its slowest rank does).
  Status finish(Timing &timing, bool least) {
    float sign = least ? -1.0f : 1.0f;
    float best = sign * static_cast<float>(*std::min_element(
                            timing.perCall.begin(), timing.perCall.end()));
    if (Status s = world_.allReduceMax(&best, 1); !s)
      return s;
    timing.best = sign * best;
    return Status::ok();
  }

  /// Effort::passes rounds over `tasks`, `samples` samples of each per
  /// round; then finishes every timing (`least`: see finish). `onPass` (may
  /// be null) is called after each round with its number.
  Status rounds(const std::vector<Task> &tasks, int samples, bool least,
                const std::function<void(int)> &onPass = nullptr) {
    for (int pass = 0; pass < effort_.passes; ++pass) {
      for (const Task &task : tasks)
        if (Status s = sample(task, samples); !s)
          return s;
      if (onPass)
        onPass(pass + 1);
    }
    for (const Task &task : tasks)
      if (Status s = finish(*task.timing, least); !s)
        return s;
    return Status::ok();
  }

private:
  Communicator &world_;
  Effort effort_;
};

/// Deterministic operands in [-1, 1] (zeros would do for the timing, but
/// not for a check by eye).
void fill(std::vector<float> &values, uint32_t seed) {
  uint32_t state = seed * 2654435761u + 1;
  for (float &v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / float(1 << 24) * 2.0f - 1.0f;
  }
}

//===----------------------------------------------------------------------===//
// The measurements
//===----------------------------------------------------------------------===//

struct GemmShape {
  int64_t m, k, n;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

struct GemmResult {
  GemmShape shape;
  Timing timing;
  double rate = 0.0;
};

struct CollectiveResult {
  uint64_t bytes = 0;
  Timing timing;
};

struct Measurements {
  Effort effort{};
  std::vector<GemmResult> gemms;
  double peak = 0.0;
  /// The bytes of each array of the bandwidth measurements.
  uint64_t streamBytes = 0;
  double memcpyRate = 0.0, triadRate = 0.0, addRate = 0.0, bandwidth = 0.0;
  /// Each memory-bound kernel's rate (bytes read and written per second),
  /// and theirs together (all bytes / all time).
  std::vector<std::pair<std::string, double>> elementwise;
  double elementwiseRate = 0.0;
  int bandwidthSamples = 0;
  double attentionForward = 0.0, attentionBackward = 0.0, attention = 0.0;
  int attentionSamples = 0;
  /// The attention kernels' time per score beside their products, forward
  /// and backward, without and with a dropout ([backward][dropout]), and the
  /// best times they were fitted from ([d 64, d 16, d 64 with
  /// dropout][backward]).
  double attentionScoreSeconds[2][2] = {};
  /// Their time per query row beside, forward and backward.
  double attentionRowSeconds[2] = {};
  double attentionTimes[4][2] = {};
  Timing launch;
  /// all_reduce of one float.
  Timing latency;
  std::vector<CollectiveResult> collectives;
};

/// The scores one head of the CPU device's causal attention computes at
/// sequence length `seq`: each block of cpu::kAttentionBlock query rows up
/// to its last row's keys (lib/Analysis/Cost.cpp's attentionScores with
/// that many block rows, which this tool does not link).
double blockScores(int64_t seq) {
  double scores = 0;
  for (int64_t i0 = 0; i0 < seq; i0 += cpu::kAttentionBlock) {
    int64_t rows = std::min(cpu::kAttentionBlock, seq - i0);
    scores += double(rows) * double(i0 + rows);
  }
  return scores;
}

/// The attention runs' best times, as the progress and the source say
/// them.
std::string attentionTimesText(const Measurements &m) {
  return format("forward and gradient at d=64 %.4g and %.4g ms, at d=16 "
                "%.4g and %.4g ms, at d=64 with dropout %.4g and %.4g ms, at "
                "heads=128 s=32 d=64 %.4g and %.4g ms",
                m.attentionTimes[0][0] * 1e3, m.attentionTimes[0][1] * 1e3,
                m.attentionTimes[1][0] * 1e3, m.attentionTimes[1][1] * 1e3,
                m.attentionTimes[2][0] * 1e3, m.attentionTimes[2][1] * 1e3,
                m.attentionTimes[3][0] * 1e3, m.attentionTimes[3][1] * 1e3);
}

class Measurer {
public:
  Measurer(Communicator &world, const Options &options)
      : world_(world), options_(options),
        effort_(options.quick ? Effort{0.02, 3, 2, 4, 7}
                              : Effort{0.1, 5, 3, 5, 21}),
        bench_(world, effort_) {}

  /// Every rank runs it; rank 0 prints the progress.
  Status run(Measurements &m) {
    m.effort = effort_;
    if (Status s = gemms(m); !s)
      return s.withContext("linear");
    if (Status s = bandwidth(m); !s)
      return s.withContext("bandwidth");
    if (Status s = attention(m); !s)
      return s.withContext("attention");
    if (Status s = launch(m); !s)
      return s.withContext("kernel launch");
    if (Status s = collectives(m); !s)
      return s.withContext("all_reduce");
    return Status::ok();
  }

private:
  void progress(const std::string &line) {
    if (world_.rank() != 0)
      return;
    std::fprintf(stderr, "tpc-measure-hardware: %s\n", line.c_str());
    std::fflush(stderr);
  }

  std::function<void(int)> passNote(const char *what) {
    return [this, what](int pass) {
      progress(format("%s: pass %d of %d done", what, pass, effort_.passes));
    };
  }

  Status gemms(Measurements &m) {
    // From a tiny product to ~2 GFLOP: squares and the shapes of a GPT-2
    // small block's linears (hidden 768: qkv 768 -> 2304, MLP 768 -> 3072
    // -> 768) at a few token counts.
    std::vector<GemmShape> shapes =
        options_.quick
            ? std::vector<GemmShape>{{16, 64, 64},     {64, 256, 256},
                                     {256, 768, 768},  {256, 768, 2304},
                                     {512, 3072, 768}, {1024, 1024, 1024}}
            : std::vector<GemmShape>{
                  {8, 64, 64},      {32, 128, 128},    {64, 256, 256},
                  {128, 256, 768},  {256, 256, 256},   {128, 768, 768},
                  {256, 768, 768},  {512, 512, 512},   {128, 768, 3072},
                  {512, 768, 768},  {256, 768, 2304},  {256, 3072, 768},
                  {512, 768, 3072}, {1024, 1024, 1024}};
    struct Operands {
      std::vector<float> x, w, out;
    };
    std::vector<Operands> operands(shapes.size());
    m.gemms.resize(shapes.size());
    std::vector<Task> tasks;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const GemmShape &shape = shapes[i];
      Operands &o = operands[i];
      o.x.resize(size_t(shape.m * shape.k));
      o.w.resize(size_t(shape.n * shape.k));
      o.out.resize(size_t(shape.m * shape.n));
      fill(o.x, 1);
      fill(o.w, 2);
      m.gemms[i].shape = shape;
      tasks.push_back({[&shape, &o] {
                         return cpu::linear(
                             o.x.data(), o.w.data(), nullptr, shape.m, shape.k,
                             shape.n, cpu::WeightLayout::OutIn, o.out.data());
                       },
                       &m.gemms[i].timing});
    }
    if (Status s = bench_.rounds(tasks, effort_.kernelSamples, /*least=*/true,
                                 passNote("linear"));
        !s)
      return s;
    for (GemmResult &g : m.gemms) {
      g.rate = g.shape.flops() / g.timing.best;
      m.peak = std::max(m.peak, g.rate);
      progress(format(
          "linear m=%lld k=%lld n=%lld (%.3g FLOP): %.2f GFLOP/s",
          static_cast<long long>(g.shape.m), static_cast<long long>(g.shape.k),
          static_cast<long long>(g.shape.n), g.shape.flops(), g.rate / 1e9));
    }
    progress(format("peak fp32: %.2f GFLOP/s per rank", m.peak / 1e9));
    return Status::ok();
  }

  Status bandwidth(Measurements &m) {
    // Arrays far beyond the last-level cache (which the ranks share): 4
    // times it, at least 64 MiB, at most an eighth of the memory over the
    // three arrays of every rank.
    uint64_t llc = lastLevelCacheBytes();
    uint64_t bytes = std::max<uint64_t>(uint64_t(64) << 20, 4 * llc);
    uint64_t memory = memTotalBytes();
    if (memory)
      bytes = std::min<uint64_t>(
          bytes, memory / 8 / 3 / static_cast<uint64_t>(world_.size()));
    bytes = std::max<uint64_t>(bytes / (1 << 20), 1) << 20;
    m.streamBytes = bytes;
    size_t count = bytes / sizeof(float);
    // The three arrays one after another in one allocation, `skew` floats
    // apart, as an arena holds a step's tensors. In allocations of their
    // own, in ranks bound to a core (as mpiexec binds them), gelu_grad ran
    // at 8.8 GB/s against 11.2 here and the step's at 0.73 of its price
    // (0.93 since); others moved less and either way (docs/design/
    // cost-model.md, "Kind by kind").
    const size_t skew = 1088;
    std::vector<float> arrays(3 * (count + skew));
    fill(arrays, 3);
    m.bandwidthSamples = effort_.passes * effort_.kernelSamples;
    // memcpy and a STREAM triad, then memory-bound kernels of a transformer
    // step, each counted by the bytes it reads and writes as the cost model
    // counts them (every operand and result: add 2 read, 1 written; gelu 1
    // read, 1 written; a norm's parameters too), rows of 768 (a norm, a
    // bias gradient) or 1024 (softmax). The first four (add, gelu,
    // layer_norm, softmax) give elementwise_bandwidth's value, each kernel
    // its kind's.
    auto elements = static_cast<int64_t>(count);
    const int64_t hidden = 768, keys = 1024;
    const int64_t rows = elements / hidden, inRows = rows * hidden;
    std::vector<float> weight(hidden, 1.0f), bias(hidden, 0.0f),
        weightGrad(hidden), biasGrad(hidden);
    std::vector<double> sums(2 * hidden); // layerNormParamGrad's scratch
    std::vector<uint8_t> mask(count);
    // cross_entropy over rows of a vocabulary of 8192, every label 1.
    const int64_t vocab = 8192, positions = elements / vocab;
    std::vector<int64_t> labels(positions, 1);
    float lossSum = 0;
    int64_t targets = 0;
    double squares = 0;
    // adamw_update on a quarter of the elements each of param, grad and
    // both moments, one after the other in one allocation as the arrays
    // above, the second moment non-negative as a real one is (a negative
    // one takes sqrt's slow path for errno, which a training step never
    // does). In halves of separate arrays instead (each a power of two
    // apart from its pair) a rank bound to a core ran it at 12 GB/s on this
    // machine, where an arena's buffers run at 31-34 and the step's
    // optimizer ran at twice the 12's price.
    const int64_t quarter = elements / 4;
    const int64_t stride = quarter + static_cast<int64_t>(skew);
    std::vector<float> optimizerState(4 * size_t(stride));
    fill(optimizerState, 6);
    float *po = optimizerState.data();
    for (float *v = po + 3 * stride; v < po + 3 * stride + quarter; ++v)
      *v = std::fabs(*v);
    float *pa = arrays.data(), *pb = pa + count + skew, *pc = pb + count + skew;
    uint8_t *pm = mask.data();
    const double n = static_cast<double>(elements),
                 normed = static_cast<double>(inRows), f = sizeof(float),
                 params = static_cast<double>(hidden) * f;
    const float epsilon = 1e-5f;
    const double dropoutRate = 0.1;
    auto tanh = cpu::GeluApproximation::Tanh;
    struct Stream {
      const char *name;
      double bytes;
      std::function<Status()> body;
      Timing timing;
    };
    std::vector<Stream> streams = {
        {"memcpy",
         2.0 * double(bytes),
         [=] {
           std::memcpy(pc, pa, bytes);
           return Status::ok();
         },
         {}},
        {"triad",
         3.0 * double(bytes),
         [=] {
           for (size_t i = 0; i < count; ++i)
             pa[i] = pb[i] + 0.5f * pc[i];
           return Status::ok();
         },
         {}},
        {"add",
         3.0 * double(bytes),
         [=] { return cpu::add(pa, elements, pb, elements, pc); },
         {}},
        {"gelu",
         2.0 * double(bytes),
         [=] { return cpu::gelu(pa, elements, tanh, pc); },
         {}},
        {"layer_norm",
         2 * normed * f + 2 * params,
         [=, &weight, &bias] {
           return cpu::layerNorm(pa, weight.data(), bias.data(), rows, hidden,
                                 epsilon, pc);
         },
         {}},
        {"softmax",
         2.0 * double(elements / keys * keys * 4),
         [=] { return cpu::softmax(pa, 1, elements / keys, keys, false, pc); },
         {}},
        {"mul",
         3 * n * f,
         [=] { return cpu::mul(pa, elements, pb, elements, pc); },
         {}},
        {"gelu_grad",
         3 * n * f,
         [=] { return cpu::geluGrad(pa, pb, elements, tanh, pc); },
         {}},
        {"silu", 2 * n * f, [=] { return cpu::silu(pa, elements, pc); }, {}},
        {"silu_grad",
         3 * n * f,
         [=] { return cpu::siluGrad(pa, pb, elements, pc); },
         {}},
        {"layer_norm_input_grad",
         3 * normed * f + params,
         [=, &weight] {
           return cpu::layerNormInputGrad(pa, pb, weight.data(), rows, hidden,
                                          epsilon, pc);
         },
         {}},
        {"layer_norm_param_grad",
         2 * normed * f + 2 * params,
         [=, &sums, &weightGrad, &biasGrad] {
           return cpu::layerNormParamGrad(pa, pb, rows, hidden, epsilon,
                                          sums.data(), weightGrad.data(),
                                          biasGrad.data());
         },
         {}},
        {"rms_norm",
         2 * normed * f + params,
         [=, &weight] {
           return cpu::rmsNorm(pa, weight.data(), rows, hidden, epsilon, pc);
         },
         {}},
        {"rms_norm_input_grad",
         3 * normed * f + params,
         [=, &weight] {
           return cpu::rmsNormInputGrad(pa, pb, weight.data(), rows, hidden,
                                        epsilon, pc);
         },
         {}},
        {"rms_norm_param_grad",
         2 * normed * f + params,
         [=, &sums, &weightGrad] {
           return cpu::rmsNormParamGrad(pa, pb, rows, hidden, epsilon,
                                        sums.data(), weightGrad.data());
         },
         {}},
        {"sum_to",
         normed * f + params,
         [=, &sums, &biasGrad] {
           return cpu::sumTo(pa, inRows, hidden, sums.data(), biasGrad.data());
         },
         {}},
        {"dropout_mask",
         n,
         [=] { return cpu::dropoutMask(elements, 7, dropoutRate, 0, pm); },
         {}},
        {"apply_mask",
         2 * n * f + n,
         [=] { return cpu::applyMask(pa, pm, elements, dropoutRate, pc); },
         {}},
        {"cross_entropy",
         double(positions) * (vocab * f + 8) + f + 8,
         [=, &labels, &lossSum, &targets] {
           return cpu::crossEntropy(pa, labels.data(), positions, vocab, -100,
                                    &lossSum, &targets);
         },
         {}},
        {"cross_entropy_grad",
         double(positions) * (2 * vocab * f + 8) + f,
         [=, &labels] {
           return cpu::crossEntropyGrad(pa, labels.data(), positions, vocab,
                                        -100, 1e-3f, pc);
         },
         {}},
        {"sum_squares",
         n * f + f,
         [=, &squares] {
           squares = 0;
           return cpu::sumSquares(pa, elements, &squares);
         },
         {}},
        // Read param, grad and both moments (and three scalars), write
        // param and both moments.
        {"adamw_update",
         7 * double(quarter) * f + 3 * f,
         [=] {
           return cpu::adamwUpdate(po, po + stride, po + 2 * stride,
                                   po + 3 * stride, quarter, 1e-4f, 1,
                                   cpu::AdamWOptions{}, 1.0f);
         },
         {}}};
    const size_t meanKinds = 4;
    std::vector<Task> tasks;
    for (Stream &stream : streams)
      tasks.push_back({stream.body, &stream.timing});
    if (Status s = bench_.rounds(tasks, effort_.kernelSamples,
                                 /*least=*/true, passNote("memory bandwidth"));
        !s)
      return s;
    auto rate = [](const Stream &stream) {
      return stream.bytes / stream.timing.best;
    };
    m.memcpyRate = rate(streams[0]);
    m.triadRate = rate(streams[1]);
    m.addRate = rate(streams[2]);
    m.bandwidth = std::max({m.memcpyRate, m.triadRate, m.addRate});
    progress(format("memory bandwidth on arrays of %s: memcpy %.2f, STREAM "
                    "triad %.2f, add %.2f GB/s per rank (read + written)",
                    bytesText(bytes).c_str(), m.memcpyRate / 1e9,
                    m.triadRate / 1e9, m.addRate / 1e9));
    double allBytes = 0.0, allSeconds = 0.0;
    for (size_t i = 2; i < streams.size(); ++i) {
      m.elementwise.push_back({streams[i].name, rate(streams[i])});
      if (i < 2 + meanKinds) {
        allBytes += streams[i].bytes;
        allSeconds += streams[i].timing.best;
      }
      progress(format("%s kernel: %.2f GB/s per rank (%.2f of the bandwidth)",
                      streams[i].name, rate(streams[i]) / 1e9,
                      rate(streams[i]) / m.bandwidth));
    }
    m.elementwiseRate = allBytes / allSeconds;
    return Status::ok();
  }

  /// The fused causal attention and its gradient at b=1: heads=4, s=256
  /// at d = 64 and d = 16 without dropout and at d = 64 with 0.1, and
  /// heads=128, s=32 at d = 64. A kernel's time is its products' (FLOPs at
  /// a rate) plus a time per score (the softmax's exp; with dropout, its
  /// draws) and a time per query row (each row's and each block's fixed
  /// work: its statistics, the block's small GEMMs' calls): the two head
  /// dims give the rate, the two shapes the times per score and per row
  /// (the short one has 4 times the rows for 0.8 times the scores), the
  /// dropout run its time per score.
  Status attention(Measurements &m) {
    const int64_t batch = 1, dims[] = {64, 16};
    // [heads, seq] of the runs: the first three at the first, the last at
    // the second.
    const int64_t shapes[2][2] = {{4, 256}, {128, 32}};
    size_t rows = size_t(batch * std::max(shapes[0][0] * shapes[0][1],
                                          shapes[1][0] * shapes[1][1]));
    size_t tensor = rows * size_t(dims[0]);
    // Each call reads and writes tensors the caches no longer hold, as a
    // step's attention does (its q, k, v and dO were written long before):
    // the calls rotate over copies of every tensor that together pass the
    // last-level cache four times. On one set of warm tensors the kernels
    // had run 13% (forward) and 24% (backward) faster than with the caches
    // flushed, which is how the step ran them (docs/design/cost-model.md).
    const uint64_t llc =
        std::max<uint64_t>(lastLevelCacheBytes(), uint64_t(8) << 20);
    const size_t perCopy = (8 * tensor + rows) * sizeof(float);
    const size_t copies = std::max<size_t>(2, size_t(4 * llc / perCopy) + 1);
    std::vector<float> q(copies * tensor), k(copies * tensor),
        v(copies * tensor), out(copies * tensor), dO(copies * tensor),
        dq(copies * tensor), dk(copies * tensor), dv(copies * tensor),
        lse(copies * rows),
        // The longest sequence's, which the others' fit in.
        scratch(
            size_t(cpu::attentionGradScratchSize(shapes[0][1], shapes[0][1])));
    fill(q, 6);
    fill(k, 7);
    fill(v, 8);
    fill(dO, 9);
    size_t calls = 0;
    cpu::AttentionDropout dropout;
    dropout.key = 0x9e3779b97f4a7c15ull;
    dropout.rate = 0.1;
    // [d 64, d 16, d 64 with dropout, heads 128 s 32] x [forward, backward].
    Timing timings[4][2];
    std::vector<Task> tasks;
    for (int run = 0; run < 4; ++run) {
      const int64_t d = dims[run == 1], heads = shapes[run == 3][0],
                    seq = shapes[run == 3][1];
      const float scale = 1.0f / std::sqrt(float(d));
      const cpu::AttentionDropout *drop = run == 2 ? &dropout : nullptr;
      tasks.push_back({[&, d, heads, seq, scale, drop] {
                         size_t t = calls++ % copies * tensor;
                         return cpu::attention(
                             &q[t], &k[t], &v[t], batch, heads, heads, seq, seq,
                             d, d, /*causal=*/true, scale, scratch.data(),
                             &out[t], drop, AttentionLayout::HeadMajor,
                             &lse[t / tensor * rows]);
                       },
                       &timings[run][0]});
      tasks.push_back({[&, d, heads, seq, scale, drop] {
                         // As tpc-autodiff emits it: given the forward's output
                         // and log-sum-exps.
                         size_t t = calls++ % copies * tensor;
                         return cpu::attentionGrad(
                             &dO[t], &q[t], &k[t], &v[t], batch, heads, heads,
                             seq, seq, d, d, /*causal=*/true, scale,
                             scratch.data(), &dq[t], &dk[t], &dv[t], drop,
                             AttentionLayout::HeadMajor, &out[t],
                             &lse[t / tensor * rows]);
                       },
                       &timings[run][1]});
    }
    if (Status s = bench_.rounds(tasks, effort_.kernelSamples,
                                 /*least=*/true);
        !s)
      return s;
    m.attentionSamples = timings[0][0].samples();
    for (int run = 0; run < 4; ++run)
      for (int backward = 0; backward < 2; ++backward)
        m.attentionTimes[run][backward] = timings[run][backward].best;
    // Counted as the time model charges attention (lib/Analysis:
    // attentionScores with the description's block_rows): Q K^T and P V over
    // the scores the kernels compute, each block of cpu::kAttentionBlock
    // query rows up to its last row's keys (at s = 256, 40960 per head
    // against the 32896 the causal mask leaves), 2*scores*(d + dv) FLOPs;
    // the gradient 2.5 times that (FlashAttention's five products).
    const double scores = batch * shapes[0][0] * blockScores(shapes[0][1]),
                 shortScores = batch * shapes[1][0] * blockScores(shapes[1][1]),
                 queryRows = batch * shapes[0][0] * double(shapes[0][1]),
                 shortRows = batch * shapes[1][0] * double(shapes[1][1]);
    auto flopsAt = [](double over, int64_t d, bool backward) {
      return (backward ? 2.5 : 1.0) * 2.0 * over * 2.0 * double(d);
    };
    double productSeconds = 0;
    for (int backward = 0; backward < 2; ++backward) {
      double wide = m.attentionTimes[0][backward],
             narrow = m.attentionTimes[1][backward],
             dropped = m.attentionTimes[2][backward],
             short_ = m.attentionTimes[3][backward];
      // t(d) = flops(d) / rate + scores * perScore + rows * perRow: the rate
      // from d = 64 and 16, then perScore and perRow from the two shapes;
      // where noise leaves no positive fit, no time per row, then all of
      // it products.
      double rate =
          (flopsAt(scores, 64, backward) - flopsAt(scores, 16, backward)) /
          (wide - narrow);
      double rest = wide - flopsAt(scores, 64, backward) / rate,
             shortRest = short_ - flopsAt(shortScores, 64, backward) / rate;
      double det = scores * shortRows - shortScores * queryRows;
      double perScore = (rest * shortRows - shortRest * queryRows) / det,
             perRow = (scores * shortRest - shortScores * rest) / det;
      if (!(perScore >= 0) || !(perRow >= 0)) {
        perRow = 0;
        perScore = rest / scores;
      }
      if (!(wide > narrow) || !(perScore >= 0)) {
        perScore = perRow = 0;
        rate = flopsAt(scores, 64, backward) / wide;
      }
      productSeconds += flopsAt(scores, 64, backward) / rate;
      m.attentionScoreSeconds[backward][0] = perScore;
      m.attentionScoreSeconds[backward][1] =
          perScore + std::max(0.0, dropped - wide) / scores;
      m.attentionRowSeconds[backward] = perRow;
    }
    m.attentionForward = flopsAt(scores, 64, false) / m.attentionTimes[0][0];
    m.attentionBackward = flopsAt(scores, 64, true) / m.attentionTimes[0][1];
    // The products' rate, fwd and bwd together (the time model prices both
    // at one efficiency), without the times per score and row.
    m.attention = (flopsAt(scores, 64, false) + flopsAt(scores, 64, true)) /
                  productSeconds;
    progress(format("attention (causal, b=1 heads=4 s=256, heads=128 s=32): "
                    "%s: products %.2f GFLOP/s (%.2f of peak), per score "
                    "forward %.3g ns (with dropout %.3g), gradient %.3g ns "
                    "(%.3g); per query row forward %.3g us, gradient %.3g us",
                    attentionTimesText(m).c_str(), m.attention / 1e9,
                    m.attention / m.peak, m.attentionScoreSeconds[0][0] * 1e9,
                    m.attentionScoreSeconds[0][1] * 1e9,
                    m.attentionScoreSeconds[1][0] * 1e9,
                    m.attentionScoreSeconds[1][1] * 1e9,
                    m.attentionRowSeconds[0] * 1e6,
                    m.attentionRowSeconds[1] * 1e6));
    return Status::ok();
  }

  /// One kernel through the CPU device, as the interpreter runs each: an
  /// add of 16 floats.
  Status launch(Measurements &m) {
    const int64_t elements = 16;
    const uint64_t bytes = elements * sizeof(float);
    Program program;
    auto tensor = [&](uint32_t buffer) {
      TensorRef t;
      t.buffer = buffer;
      t.offset = buffer * 64;
      t.bytes = bytes;
      t.dtype = fb::DType::F32;
      t.shape = {elements};
      t.elements = elements;
      return t;
    };
    program.buffers = {tensor(0), tensor(1), tensor(2)};
    program.arenaBytes = 3 * 64;
    KernelCall call;
    call.index = 0;
    call.op = fb::OpCode::Add;
    call.operands = {program.buffers[0], program.buffers[1]};
    call.results = {program.buffers[2]};
    call.count = elements;
    call.rhsCount = elements;
    program.calls = {call};
    std::unique_ptr<Device> device = createCpuDevice();
    if (Status s = device->allocateArena(program.arenaBytes); !s)
      return s;
    if (Status s = device->prepare(program, {}); !s)
      return s;
    StepContext context;
    const KernelCall &prepared = program.calls[0];
    Task task{[&] { return device->execute(prepared, context); }, &m.launch,
              effort_.sampleSeconds / 5};
    if (Status s = bench_.sample(task, effort_.launchSamples); !s)
      return s;
    if (Status s = bench_.finish(m.launch, /*least=*/true); !s)
      return s;
    progress(format("kernel launch (add of 16 floats through the CPU "
                    "device): %.3g us",
                    m.launch.best * 1e6));
    return Status::ok();
  }

  Status collectives(Measurements &m) {
    std::vector<uint64_t> sizes =
        options_.quick
            ? std::vector<uint64_t>{4 << 10, 64 << 10, 1 << 20, 16 << 20,
                                    64 << 20}
            : std::vector<uint64_t>{4 << 10, 16 << 10, 64 << 10, 256 << 10,
                                    1 << 20, 4 << 20,  16 << 20, 64 << 20};
    std::vector<float> data(sizes.back() / sizeof(float), 0.0f);
    int n = world_.size();
    m.collectives.resize(sizes.size());
    std::vector<Task> tasks = {
        {[&] { return world_.allReduceSum(data.data(), 1); }, &m.latency,
         effort_.sampleSeconds / 5}};
    for (size_t i = 0; i < sizes.size(); ++i) {
      m.collectives[i].bytes = sizes[i];
      size_t count = sizes[i] / sizeof(float);
      tasks.push_back({[&data, count, this] {
                         return world_.allReduceSum(data.data(), count);
                       },
                       &m.collectives[i].timing});
    }
    if (Status s = bench_.rounds(tasks, effort_.collectiveSamples,
                                 /*least=*/false, passNote("all_reduce"));
        !s)
      return s;
    progress(format("all_reduce of one float over %d ranks: %.3g us "
                    "(best)",
                    n, m.latency.best * 1e6));
    for (const CollectiveResult &c : m.collectives)
      progress(
          format("all_reduce of %s over %d ranks: %.3g us (best), "
                 "busbw %.2f GB/s",
                 bytesText(c.bytes).c_str(), n, c.timing.best * 1e6,
                 2.0 * (n - 1) / n * double(c.bytes) / c.timing.best / 1e9));
    return Status::ok();
  }

  Communicator &world_;
  const Options &options_;
  Effort effort_;
  Bench bench_;
};

//===----------------------------------------------------------------------===//
// The description
//===----------------------------------------------------------------------===//

/// [x, fraction] pairs: x (bytes, FLOPs) exact, the fraction at most 1.
Json pointsJson(const std::vector<std::pair<uint64_t, double>> &points) {
  Json list = Json::array();
  for (const auto &[x, y] : points)
    list.push_back(Json::array({x, std::min(1.0, y)}));
  return list;
}

/// A number as the description writes it: integers exactly, measured
/// (floating) values to 4 significant digits: measurements, not noise.
std::string numberText(const Json &value) {
  if (!value.is_number_float())
    return value.dump();
  return format("%.4g", value.get<double>());
}

/// `value` on one line.
std::string inlineText(const Json &value) {
  if (value.is_number())
    return numberText(value);
  if (!value.is_structured())
    return value.dump();
  std::string text = value.is_array() ? "[" : "{";
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    text += first ? "" : ", ";
    first = false;
    if (value.is_object())
      text += Json(it.key()).dump() + ": ";
    text += inlineText(*it);
  }
  return text + (value.is_array() ? "]" : "}");
}

/// JSON indented by 2 as usual, except that an array that fits on its line
/// stays on it (a point, a short list of points).
void writeJson(const Json &value, int indent, std::string &out) {
  std::string pad(size_t(indent) + 2, ' ');
  if (value.is_object() && !value.empty()) {
    out += "{\n";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      out += first ? "" : ",\n";
      first = false;
      out += pad + Json(it.key()).dump() + ": ";
      writeJson(*it, indent + 2, out);
    }
    out += "\n" + std::string(size_t(indent), ' ') + "}";
    return;
  }
  if (value.is_array() && !value.empty()) {
    std::string line = inlineText(value);
    if (indent + line.size() <= 72) {
      out += line;
      return;
    }
    out += "[\n";
    bool first = true;
    for (const Json &element : value) {
      out += first ? "" : ",\n";
      first = false;
      out += pad;
      writeJson(element, indent + 2, out);
    }
    out += "\n" + std::string(size_t(indent), ' ') + "]";
    return;
  }
  out += inlineText(value);
}

void describe(const Options &options, const Measurements &m, int ranks,
              std::string &json) {
  std::string host = hostName(), date = utcNow();
  std::string prefix =
      "measured by tpc-measure-hardware on " + host + " at " + date + ": ";
  const char *threadsEnv = std::getenv("OPENBLAS_NUM_THREADS");
  std::string threads = threadsEnv ? threadsEnv : "unset";
  std::string setting =
      format("%d ranks (MPI), each with OPENBLAS_NUM_THREADS=%s, measuring at "
             "once (figures per rank: a kernel's on the least disturbed "
             "rank, all_reduce's on the slowest)",
             ranks, threads.c_str());
  std::string quick = options.quick ? " (--quick)" : "";
  unsigned cores = coreCount();
  std::string model = procField("/proc/cpuinfo", "model name");
  if (model.empty())
    model = "unknown CPU";
  const char *coreType = std::getenv("OPENBLAS_CORETYPE");
  uint64_t memory = memTotalBytes();

  Json root;
  root["name"] = "cpu";
  root["description"] =
      model + ", " + std::to_string(cores) + " cores" +
      (coreType ? std::string(", OPENBLAS_CORETYPE=") + coreType : "") +
      "; one device is one tpc-run rank of " + std::to_string(ranks) +
      " on this machine (OPENBLAS_NUM_THREADS=" + threads + "), fp32 " +
      (cpu::hasOpenBlas() ? "OpenBLAS" : "portable fallback") + " GEMMs";
  root["memory_bytes"] = memory;
  root["memory_source"] =
      prefix + "MemTotal of /proc/meminfo (the machine's, shared by its "
               "ranks)";
  root["devices_per_node"] = cores;

  std::string ladder;
  for (const GemmResult &g : m.gemms)
    ladder += format("%s%lldx%lldx%lld", ladder.empty() ? "" : ", ",
                     static_cast<long long>(g.shape.m),
                     static_cast<long long>(g.shape.k),
                     static_cast<long long>(g.shape.n));
  int gemmSamples = m.gemms.empty() ? 0 : m.gemms.front().timing.samples();
  root["peak_flops"] = {
      {"fp32", m.peak},
      {"source",
       prefix +
           "the best rate (2*m*n*k FLOP/s) of the runtime's `linear` "
           "kernel (" +
           std::string(cpu::hasOpenBlas() ? "OpenBLAS cblas_sgemm"
                                          : "portable fallback GEMM") +
           ", weight [out, in]) over m x k x n = " + ladder + ", best of " +
           std::to_string(gemmSamples) +
           " samples of >= " + format("%g", m.effort.sampleSeconds * 1e3) +
           " ms each, in " + std::to_string(m.effort.passes) +
           " rounds over the shapes" + quick + "; " + setting}};

  root["memory_bandwidth"] = {
      {"bytes_per_s", m.bandwidth},
      {"source",
       prefix +
           format("the best of memcpy (%.4g GB/s, bytes read + written), "
                  "a STREAM triad a = b + s*c (%.4g GB/s) and STREAM's add "
                  "c = a + b by the runtime's `add` kernel (%.4g GB/s) on "
                  "arrays of %s, beyond the last-level cache (%s), best of "
                  "%d samples of >= %g ms each, in %d rounds%s; ",
                  m.memcpyRate / 1e9, m.triadRate / 1e9, m.addRate / 1e9,
                  bytesText(m.streamBytes).c_str(),
                  bytesText(lastLevelCacheBytes()).c_str(), m.bandwidthSamples,
                  m.effort.sampleSeconds * 1e3, m.effort.passes,
                  quick.c_str()) +
           setting}};

  // Collectives: the latency is the all_reduce of one float; the bus
  // bandwidth of a size counts the time past that latency, so that the
  // cost model's latency_s + factor * S / (fraction(S) * bytes_per_s)
  // gives back the measured time of each size.
  int n = ranks;
  double factor = 2.0 * (n - 1) / n;
  double latency = m.latency.best;
  std::vector<std::pair<uint64_t, double>> busbws;
  double maxBusbw = 0.0, maxRawBusbw = 0.0;
  std::string table;
  for (const CollectiveResult &c : m.collectives) {
    double t = c.timing.best;
    double past = std::max(t - latency, 0.1 * t);
    double bw = factor * double(c.bytes) / past;
    double raw = factor * double(c.bytes) / t;
    busbws.push_back({c.bytes, bw});
    maxBusbw = std::max(maxBusbw, bw);
    maxRawBusbw = std::max(maxRawBusbw, raw);
    table += format("%s%s %.3g us", table.empty() ? "" : ", ",
                    bytesText(c.bytes).c_str(), t * 1e6);
  }
  std::vector<std::pair<uint64_t, double>> busPoints;
  for (const auto &[bytes, bw] : busbws)
    busPoints.push_back({bytes, bw / maxBusbw});
  int collectiveSamples =
      m.collectives.empty() ? 0 : m.collectives.front().timing.samples();
  std::string linkSource = format(
      "all_reduce (sum, fp32) over %d ranks through the MPI "
      "communicator tpc-run uses, best of %d samples of >= %g ms "
      "per size, in %d rounds over the sizes%s (the slowest rank's): "
      "latency_s = one float's (%.3g us); bytes_per_s = the largest "
      "bus bandwidth 2(n-1)/n * S / (t(S) - latency_s) over S = 4 "
      "KiB .. 64 MiB (nccl-tests' busbw 2(n-1)/n * S / t(S): at most "
      "%.4g GB/s); times: %s",
      n, collectiveSamples, m.effort.sampleSeconds * 1e3, m.effort.passes,
      quick.c_str(), latency * 1e6, maxRawBusbw / 1e9, table.c_str());
  root["intra_node"] = {{"bytes_per_s", maxBusbw},
                        {"latency_s", latency},
                        {"source", prefix + linkSource}};
  root["inter_node"] = {
      {"bytes_per_s", maxBusbw},
      {"latency_s", latency},
      {"source", prefix +
                     "one machine, no inter-node link: the intra-node "
                     "values, " +
                     linkSource}};

  std::vector<std::pair<uint64_t, double>> gemmPoints;
  {
    std::map<uint64_t, std::vector<double>> byFlops;
    for (const GemmResult &g : m.gemms)
      byFlops[static_cast<uint64_t>(g.shape.flops())].push_back(g.rate /
                                                                m.peak);
    for (const auto &[flops, fractions] : byFlops) {
      double sum = 0.0;
      for (double f : fractions)
        sum += f;
      gemmPoints.push_back({flops, sum / double(fractions.size())});
    }
  }
  Json efficiency;
  efficiency["gemm"] = {
      {"points", pointsJson(gemmPoints)},
      {"source", prefix +
                     "per shape of the peak_flops ladder, its FLOPs "
                     "(2*m*n*k) and its best rate / peak_flops.fp32 (shapes "
                     "of equal FLOPs averaged)" +
                     quick + "; " + setting}};
  efficiency["attention"] = {
      {"value", std::min(1.0, m.attention / m.peak)},
      {"source",
       prefix +
           format("the runtime's fused causal `attention` and "
                  "`attention_grad` kernels at b=1, heads=4, s=256 and d=64 "
                  "and 16 and heads=128, s=32, d=64 (best of %d samples "
                  "each%s; the gradient given the forward's output and "
                  "log-sum-exps; each call on copies of its tensors out "
                  "of the caches, as a step's), each time taken as its "
                  "matrix products' "
                  "FLOPs at a rate plus times per score and per query row "
                  "(efficiency.attention_score_s), the rate fitted from "
                  "the two head dims: the products' FLOPs over the scores "
                  "the kernels compute, 4*scores*d (scores: each block of "
                  "%lld query rows up to its last row's keys, "
                  "attention_score_s.block_rows; 5/8 of the full products "
                  "here) forward and 2.5 times that for the gradient, as "
                  "the time model charges them, together "
                  "at %.4g GFLOP/s, / peak_flops.fp32 (at d=64 with the "
                  "time per score: forward %.4g, gradient %.4g GFLOP/s); ",
                  m.attentionSamples, quick.c_str(),
                  static_cast<long long>(cpu::kAttentionBlock),
                  m.attention / 1e9, m.attentionForward / 1e9,
                  m.attentionBackward / 1e9) +
           setting}};
  efficiency["attention_score_s"] = {
      {"forward", m.attentionScoreSeconds[0][0]},
      {"backward", m.attentionScoreSeconds[1][0]},
      {"forward_dropout", m.attentionScoreSeconds[0][1]},
      {"backward_dropout", m.attentionScoreSeconds[1][1]},
      {"row_forward", m.attentionRowSeconds[0]},
      {"row_backward", m.attentionRowSeconds[1]},
      {"block_rows", cpu::kAttentionBlock},
      {"source",
       prefix +
           format("the same kernels' time per score (of the scores they "
                  "compute: each block of block_rows query rows up to its "
                  "last row's keys) and per query row beside their "
                  "products, t = products(d) / rate + scores * t_score + "
                  "rows * t_row with the rate from d=64 and d=16, t_score "
                  "and t_row from heads=4 s=256 and heads=128 s=32 at d=64 "
                  "(t_row 0, then t_score 0, where noise leaves no positive "
                  "fit), and with an attention dropout (0.1, drawn per "
                  "score) t_score plus the dropout run's extra time over "
                  "d=64's per score (%s%s); ",
                  attentionTimesText(m).c_str(), quick.c_str()) +
           setting}};
  std::string kernels;
  Json kinds = Json::object();
  for (const auto &[name, rate] : m.elementwise) {
    kernels += format("%s%s %.4g GB/s", kernels.empty() ? "" : ", ",
                      name.c_str(), rate / 1e9);
    kinds[name] = std::min(kMostKindFraction, rate / m.bandwidth);
  }
  efficiency["elementwise_bandwidth"] = {
      {"value", std::min(1.0, m.elementwiseRate / m.bandwidth)},
      {"kinds", kinds},
      {"source",
       prefix +
           format("memory-bound kernels of the runtime on tensors of %s, "
                  "each counted by the bytes it reads and writes as the "
                  "cost model counts them (every operand and result: add "
                  "2 read, 1 written; gelu (tanh) 1 read, 1 written; "
                  "norms and bias gradients over rows of 768, softmax over "
                  "rows of 1024, cross_entropy over rows of 8192, dropout "
                  "at 0.1, a mask a byte an element, adamw_update on a "
                  "quarter of the elements each of its four arrays, one "
                  "after the other in one allocation as in an arena), "
                  "best of %d each%s: %s; value: add, gelu, "
                  "layer_norm and softmax, all their bytes / all their "
                  "time (%.4g GB/s) / memory_bandwidth.bytes_per_s; kinds: "
                  "each kernel's rate / memory_bandwidth.bytes_per_s; ",
                  bytesText(m.streamBytes).c_str(), m.bandwidthSamples,
                  quick.c_str(), kernels.c_str(), m.elementwiseRate / 1e9) +
           setting}};
  efficiency["collective_bus_bandwidth"] = {
      {"intra_node",
       {{"points", pointsJson(busPoints)},
        {"source", prefix + "per all_reduce size S, its bus bandwidth past "
                            "the latency (see intra_node) / "
                            "intra_node.bytes_per_s"}}},
      {"inter_node",
       {{"points", pointsJson(busPoints)},
        {"source", prefix + "one machine, no inter-node link: the "
                            "intra-node points"}}}};
  efficiency["kernel_launch_s"] = {
      {"value", m.launch.best},
      {"source",
       prefix +
           format("one `add` kernel of 16 floats run through the CPU device "
                  "(Device::execute, as the interpreter runs each kernel), "
                  "best of %d samples of %lld calls%s; ",
                  m.launch.samples(), static_cast<long long>(m.launch.calls),
                  quick.c_str()) +
           setting}};
  root["efficiency"] = efficiency;
  json.clear();
  writeJson(root, 0, json);
  json += "\n";
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<Communicator> world;
  if (!joinLauncherWorld(kLauncher, world))
    return 1;
  int rank = world ? world->rank() : 0;
  int ranks = world ? world->size() : 1;

  // Checks alike on every rank: only rank 0 reports them.
  Options options;
  Status status = parseArguments(argc, argv, options);
  if (status && !options.help) {
    if (world) {
      if (options.ranks && static_cast<int64_t>(*options.ranks) != ranks)
        status = Status::error("--ranks is " + std::to_string(*options.ranks) +
                               ", but the launcher started " +
                               std::to_string(ranks) + " ranks");
      else if (ranks < 2)
        status = Status::error("the launcher started one rank: all_reduce "
                               "needs two or more (or run it without a "
                               "launcher, with --ranks N)");
    }
    if (status)
      status = checkOutput(options.output);
  }
  if (!status) {
    if (rank == 0)
      reportError(status, 0, 1);
    return 1;
  }
  if (options.help) {
    if (rank == 0)
      std::fputs(kUsage, stdout);
    return 0;
  }
  if (!world) {
    status = relaunch(kLauncher, argc, argv, options.ranks.value_or(2),
                      "this tpc-measure-hardware was built without MPI (the "
                      "runtime found no MPI at configure time): the "
                      "collectives cannot be measured");
    reportError(status, 0, 1);
    return 1;
  }

  Clock::time_point start = Clock::now();
  if (rank == 0) {
    const char *threads = std::getenv("OPENBLAS_NUM_THREADS");
    std::fprintf(stderr,
                 "tpc-measure-hardware: %d ranks, OPENBLAS_NUM_THREADS=%s, "
                 "%u cores%s\n",
                 ranks, threads ? threads : "unset", coreCount(),
                 options.quick ? ", --quick" : "");
  }
  if (rank == 0 && static_cast<unsigned>(ranks) > coreCount())
    std::fprintf(stderr,
                 "tpc-measure-hardware: warning: %d ranks share %u cores: a "
                 "kernel's figure is the least disturbed rank's, which may "
                 "have had a core to itself\n",
                 ranks, coreCount());
  // Open MPI binds each of 2 ranks to one core: more BLAS threads than
  // cores the rank may use share them (as they do in tpc-run).
  if (const char *threads = std::getenv("OPENBLAS_NUM_THREADS")) {
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof(set), &set) == 0 &&
        std::atoi(threads) > CPU_COUNT(&set))
      std::fprintf(stderr,
                   "tpc-measure-hardware: warning: rank %d: "
                   "OPENBLAS_NUM_THREADS=%s but the launcher lets it use %d "
                   "core(s)\n",
                   rank, threads, CPU_COUNT(&set));
  }

  Measurements measurements;
  Measurer measurer(*world, options);
  status = guarded([&] { return measurer.run(measurements); });
  if (!status) {
    reportError(status, rank, ranks);
    world->abort(1);
  }
  if (rank == 0) {
    std::string json;
    status = guarded([&] {
      describe(options, measurements, ranks, json);
      return writeFileAtomically(options.output, {{json.data(), json.size()}});
    });
    if (status)
      std::fprintf(stderr, "tpc-measure-hardware: wrote %s (%.1f s)\n",
                   options.output.c_str(), since(start));
  }
  // Rank 0's outcome decides every rank's exit status.
  float failed = status ? 0.0f : 1.0f;
  if (Status s = world->allReduceMax(&failed, 1); !s) {
    reportError(s, rank, ranks);
    world->abort(1);
  }
  if (failed != 0.0f) {
    if (rank == 0)
      reportError(status, rank, 1);
    return 1;
  }
  return 0;
}
