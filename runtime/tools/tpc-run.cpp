//===- tpc-run.cpp - run a compiled tpc executable ------------------------===//
//
// tpc-run model.tpcx (--weights W [--init-seed S] | --init-seed S |
//                     --load-checkpoint C)
//         (--inputs B [--labels shifted|unshifted] | --synthetic-seed S |
//          --data TOKENS.bin) [--steps K]
//         [--eval-data TOKENS.bin --eval-every N] [--dump-grads G]
//         [--save-checkpoint C] [--dump-outputs OUT] [--trace TRACE.json]
//         (a checkpoint is a Hugging Face model directory plus tpc's
//         training state, or one file for a path ending in .safetensors)
//         [--ranks N]
//
// Runs an executable on CPU ranks: the forward pass and loss, or, for an
// executable compiled with --train, training steps. Prints one line per step
// and the measured peak of every rank. An executable compiled for a mesh runs
// on as many ranks: under mpirun/mpiexec or srun on the launcher's, else
// `--ranks N` starts them by running itself under mpiexec. Every failure
// is an "error: ..." line on stderr and exit status 1; on several ranks, a
// failing rank takes the others down (MPI_Abort). See docs/runtime/tpc-run.md.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Checkpoint.h"
#include "tpcrt/Comm.h"
#include "tpcrt/CommandLine.h"
#include "tpcrt/CudaBackend.h"
#include "tpcrt/Device.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/KernelTable.h"
#include "tpcrt/Launch.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/TokenData.h"
#include "tpcrt/Watchdog.h"
#include "tpcrt/Weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

using namespace tpcrt;

namespace {

const char kUsage[] =
    R"(usage: tpc-run model.tpcx (--weights W [--init-seed S] | --init-seed S |
                             --load-checkpoint C)
               (--inputs BATCH [--labels shifted|unshifted] |
                --synthetic-seed S | --data TOKENS.bin) [options]

Runs a tpc executable (tpc-compile's .tpcx) on CPU ranks: its forward pass
and loss, or training steps when it was compiled with --train. Prints
`step <k> loss <float> tokens_per_s <float>` per step (training:
`step <k> loss <float> grad_norm <float> lr <float> tokens_per_s <float>`,
the loss of step k computed before update k) and, at the end, one line
`rank <r> peak_bytes <int> planned_peak_bytes <int>` per rank (and on
stderr `tpc-run: rank <r> device_bytes <int> (arena .., workspace ..)` where
the device allocated more than the arena, and `tpc-run: rank <r>
device_in_use_bytes before_steps <int> after_step_1 <int> after_step_<K>
<int>`, the driver's count of the GPU's memory in use (the libraries' and
other processes' too): --device cuda).

Ranks: an executable compiled for a mesh (tpc-compile --mesh) runs on exactly
its number of ranks. Under mpirun/mpiexec or srun, tpc-run uses the
launcher's ranks; otherwise --ranks N runs it under
`mpiexec --allow-run-as-root --oversubscribe -n N` (mpiexec from PATH) and
waits as `tpc-launcher`: signals sent to it go on to the ranks, and a mpiexec
still there 10 s after its last rank ended is stopped (status 1). Rank 0
prints the step and eval lines and writes every file (dumps, checkpoints);
--trace writes one file per rank. Weights, inputs, dumps and checkpoints are
whole Hugging Face tensors whatever the mesh. On a pipeline (a mesh axis pp)
each rank runs its stage's kernels; the loss comes to rank 0 from the last.

Weights (one of):
  --weights PATH          a .safetensors file, a sharded checkpoint's
                          model.safetensors.index.json, or a Hugging Face
                          model directory holding either (the index first);
                          tensors are matched by Hugging Face name, with or
                          without the "transformer." / "model." prefix (a base
                          model's file: GPT2Model, LlamaModel, ...); extra
                          tensors are ignored
  --init-seed S           made-up weights: each param by its init kind
                          (normal with its init_std, zeros, ones), a function
                          of S and the param's name. With --weights: draws
                          only the params the file lacks (e.g. the
                          lm_head.weight of a base model), named on stderr
  --load-checkpoint C     resume from what --save-checkpoint wrote (a
                          checkpoint directory, or a single .safetensors
                          file): params, optimizer state, step, seeds, data
                          positions; steps are numbered on from the
                          checkpoint's

Inputs (exactly one):
  --inputs BATCH          a .safetensors file with input_ids and labels
                          (I64 or I32, the executable's [batch, seq]); the
                          same batch every step
  --labels shifted|unshifted
                          how the labels of --inputs line up (default
                          shifted): shifted, labels[b, i] is the target of
                          position i (the next token); unshifted, Hugging
                          Face's convention (labels aligned with input_ids,
                          often equal to them): each row is shifted left on
                          load and its last position ignored (-100). Under
                          shifted, labels equal to input_ids get a warning.
                          Only for --inputs: --synthetic-seed and --data make
                          their labels themselves
  --synthetic-seed S      ids and labels drawn uniformly below the
                          vocabulary, a function of S
  --data TOKENS.bin       a flat file of token ids (nanoGPT's train.bin);
                          each step draws batch sequences at random starts i:
                          input_ids = tokens[i, i+seq), labels =
                          tokens[i+1, i+seq+1)

Options:
  --steps K               run K steps (default 1)
  --data-dtype T          uint16 or uint32: the token files' element type
                          (default: uint16 when the vocabulary fits, as
                          nanoGPT writes GPT-2 data, else uint32)
  --data-seed S           seed of the batch draws (default 0; a resumed run
                          keeps its checkpoint's)
  --eval-data TOKENS.bin  evaluation data: every --eval-every N steps, prints
  --eval-every N          `eval <k> loss <float> batches <n>`, the mean loss
  --eval-batches B        of B batches (default 1) of the forward pass alone,
                          without dropout
  --dump-grads G          write the gradients of the first step under the
                          params' Hugging Face names and shapes (safetensors)
  --save-checkpoint C     write a checkpoint after the last step: to a
                          directory that Hugging Face's from_pretrained
                          loads (config.json, model.safetensors, sharded
                          above 5 GB as save_pretrained does, with
                          model.safetensors.index.json), with tpc's
                          training state (optimizer state, step, seeds,
                          data positions) in training_state.safetensors;
                          a path ending in .safetensors writes all of it to
                          that one file instead. Each file is written
                          atomically
  --device cpu|cuda       where to run (default cpu). cuda: the CUDA backend
                          (libtpcrt-cuda.so, opened at run time), one GPU
                          per rank, chosen by the rank's local rank among
                          the visible devices (CUDA_VISIBLE_DEVICES); NCCL
                          between ranks (found at run time, or
                          TPCRT_NCCL_LIBRARY). Fails with the reason where
                          there is no backend, driver or GPU. Attention
                          runs through cuDNN's fused attention where it
                          covers the kernel (bf16/f16, no dropout; cuDNN
                          found at run time, or TPCRT_CUDNN_LIBRARY) and
                          measured faster at prepare than the own kernels
                          (said on stderr), else on them: on Hopper
                          (compute capability 9.0) wgmma, else mma.sync
                          or fp32 FMA. TPCRT_CUDA_ATTENTION in the
                          environment pins it: =own the own kernels,
                          =cudnn cuDNN wherever it covers the kernel,
                          =mma mma.sync on Hopper too, =generic the fp32
                          FMA kernels. TPCRT_CUDA_FUSIONS picks the
                          device's load-time fusions: =all (default),
                          =kernels its own fused kernels only (exact:
                          the unfused results bit for bit), =none
                          (docs/runtime/cuda.md)
  --dump-outputs OUT      write the outputs of the last step (loss, and
                          logits when the executable returns them) to the
                          safetensors file OUT, atomically
  --trace TRACE.json      write a Chrome/Perfetto trace: one complete event
                          per kernel and step (ts and dur in microseconds,
                          pid = rank); on N > 1 ranks rank r writes
                          TRACE.r.json (TRACE.json.r for another suffix).
                          Rank 0 prints each rank's compute, transfer and
                          collective (waiting included), and other time
                          to stderr. On the CPU each kernel is timed to
                          its end; on CUDA by events on the compute
                          stream, nothing waited for between kernels, so
                          fusions and batches run as untimed: a fused
                          group's time is its last member's, a batch's
                          the run's that launched it ("tpcTiming" in the
                          file: "synchronized" or "device")
  --ranks N               ranks to run: the executable's mesh size (default
                          1; see Ranks above)
  --timeout SECONDS       bound every wait for other ranks (each collective,
                          send, receive and transfer wait) to SECONDS
                          (default 600, decimals allowed; 0: no bound). A
                          rank whose wait makes no progress that long ends
                          with `error: rank R: step S, kernel K (NAME)
                          OPERATION over [AXES]: no progress for T s` and
                          exit status 1, and the launcher ends the others: a
                          stopped or stuck rank never hangs the run
  --help                  show this text

Testing aid (fault injection): TPCRT_FAIL_RANK=r TPCRT_FAIL_STEP=k in the
environment make rank r fail at the start of step k with an error
(TPCRT_FAIL_KIND=crash: abort with SIGABRT instead; a rank other than 0
first waits half a second, so that rank 0 has printed step k-1 and waits
for it in step k's collectives); every rank must then exit with an error
within seconds.

Testing aid (sharding): TPCRT_CHECKPOINT_SHARD_BYTES=B in the environment
shards a checkpoint directory's params above B bytes instead of 5 GB
(save_pretrained's max_shard_size).
)";

/// As PyTorch's NCCL watchdog: generous, so that only a stall trips it.
constexpr double kDefaultTimeoutSeconds = 600;

struct Options {
  std::string model;
  std::optional<std::string> weights, inputs, data, evalData, dumpOutputs,
      dumpGrads, saveCheckpoint, loadCheckpoint, trace, dataDType, labelsText;
  LabelShift labels = LabelShift::Shifted;
  std::optional<uint64_t> initSeed, syntheticSeed, dataSeed, ranks;
  uint64_t steps = 1, evalEvery = 0, evalBatches = 1;
  /// --timeout: seconds a wait for other ranks may last (0: unbounded).
  double timeout = kDefaultTimeoutSeconds;
  /// A checkpoint directory's shard size (TPCRT_CHECKPOINT_SHARD_BYTES).
  CheckpointOptions checkpoint;
  std::string device = "cpu";
  bool help = false;
};

/// Of `given` alternative flags, exactly one must be set.
Status exactlyOne(int given, const char *exclusive, const char *missing) {
  if (given > 1)
    return Status::error(exclusive);
  if (given == 0)
    return Status::error(missing);
  return Status::ok();
}

Status parseArguments(int argc, char **argv, Options &options) {
  std::map<std::string, bool> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (!arg.empty() && arg[0] == '-' && arg != "-")
        return Status::error("unknown flag '" + arg + "' (see --help)");
      if (!options.model.empty())
        return Status::error("more than one executable given ('" +
                             options.model + "', '" + arg + "')");
      options.model = arg;
      continue;
    }
    std::string flag = arg, value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    if (flag == "--help") {
      options.help = true;
      continue;
    }
    static const char *const kFlags[] = {"--weights",
                                         "--init-seed",
                                         "--inputs",
                                         "--labels",
                                         "--synthetic-seed",
                                         "--data",
                                         "--data-dtype",
                                         "--data-seed",
                                         "--eval-data",
                                         "--eval-every",
                                         "--eval-batches",
                                         "--steps",
                                         "--dump-outputs",
                                         "--dump-grads",
                                         "--save-checkpoint",
                                         "--load-checkpoint",
                                         "--trace",
                                         "--device",
                                         "--ranks",
                                         "--timeout"};
    bool known = false;
    for (const char *name : kFlags)
      known |= flag == name;
    if (!known)
      return Status::error("unknown flag '" + flag + "' (see --help)");
    if (seen[flag])
      return Status::error(flag + " is given twice");
    seen[flag] = true;
    if (!hasValue) {
      if (i + 1 >= argc)
        return Status::error(flag + " needs a value");
      value = argv[++i];
    }
    if (value.empty())
      return Status::error(flag + " needs a non-empty value");

    std::map<std::string, std::optional<std::string> *> paths = {
        {"--weights", &options.weights},
        {"--inputs", &options.inputs},
        {"--labels", &options.labelsText},
        {"--data", &options.data},
        {"--data-dtype", &options.dataDType},
        {"--eval-data", &options.evalData},
        {"--dump-outputs", &options.dumpOutputs},
        {"--dump-grads", &options.dumpGrads},
        {"--save-checkpoint", &options.saveCheckpoint},
        {"--load-checkpoint", &options.loadCheckpoint},
        {"--trace", &options.trace}};
    if (auto it = paths.find(flag); it != paths.end())
      *it->second = value;
    else if (flag == "--device")
      options.device = value;
    else if (flag == "--timeout") {
      char *end = nullptr;
      double seconds = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || !std::isfinite(seconds) ||
          seconds < 0 || seconds > 1e9)
        return Status::error("--timeout: '" + value +
                             "' is not a number of seconds in [0, 1e9] "
                             "(0: no timeout)");
      options.timeout = seconds;
    } else {
      uint64_t number = 0;
      if (Status s = parseUnsigned(flag, value, number); !s)
        return s;
      bool positive = flag == "--steps" || flag == "--eval-every" ||
                      flag == "--eval-batches" || flag == "--ranks";
      if (positive && number == 0)
        return Status::error(flag + ": must be at least 1");
      if (flag == "--init-seed")
        options.initSeed = number;
      else if (flag == "--synthetic-seed")
        options.syntheticSeed = number;
      else if (flag == "--data-seed")
        options.dataSeed = number;
      else if (flag == "--steps")
        options.steps = number;
      else if (flag == "--eval-every")
        options.evalEvery = number;
      else if (flag == "--eval-batches")
        options.evalBatches = number;
      else // --ranks
        options.ranks = number;
    }
  }
  if (options.help)
    return Status::ok();
  if (options.model.empty())
    return Status::error("no executable given (usage: tpc-run model.tpcx "
                         "...; see --help)");
  // --init-seed with --weights draws what the file lacks.
  if (options.loadCheckpoint && (options.weights || options.initSeed))
    return Status::error(std::string("--load-checkpoint and ") +
                         (options.weights ? "--weights" : "--init-seed") +
                         " exclude each other (the checkpoint holds every "
                         "param)");
  if (!options.weights && !options.initSeed && !options.loadCheckpoint)
    return Status::error("no weights: give --weights W.safetensors, "
                         "--init-seed S or --load-checkpoint C");
  if (Status s = exactlyOne(options.inputs.has_value() +
                                options.syntheticSeed.has_value() +
                                options.data.has_value(),
                            "--inputs, --synthetic-seed and --data exclude "
                            "each other",
                            "no inputs: give --inputs BATCH.safetensors, "
                            "--synthetic-seed S or --data TOKENS.bin");
      !s)
    return s;
  if (options.labelsText) {
    if (!options.inputs)
      return Status::error("--labels needs --inputs (--synthetic-seed and "
                           "--data make their labels themselves, shifted)");
    if (Status s = parseLabelShift(*options.labelsText, options.labels); !s)
      return s;
  }
  if (options.evalData.has_value() != (options.evalEvery != 0))
    return Status::error("--eval-data and --eval-every go together");
  if (options.evalBatches != 1 && !options.evalData)
    return Status::error("--eval-batches needs --eval-data");
  if (options.dataDType && !options.data && !options.evalData)
    return Status::error("--data-dtype needs --data or --eval-data");
  if (options.dataSeed && !options.data && !options.evalData)
    return Status::error("--data-seed needs --data or --eval-data");
  if (options.device != "cpu" && options.device != "cuda")
    return Status::error("--device '" + options.device +
                         "': expected cpu or cuda");
  return Status::ok();
}

/// The safetensors spelling of an executable dtype.
DType safetensorsDType(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::F32:
    return DType::F32;
  case fb::DType::BF16:
    return DType::BF16;
  case fb::DType::F16:
    return DType::F16;
  case fb::DType::I32:
    return DType::I32;
  case fb::DType::I64:
    return DType::I64;
  case fb::DType::U8:
    return DType::U8;
  }
  return DType::U8;
}

/// Writes the outputs (whole on the ranks owning them) on rank 0, each read
/// there or sent to it by the first rank owning it (a pipeline's loss lives
/// on its last stage). Collective: every rank calls it.
Status dumpOutputs(const std::string &path, Interpreter &interpreter) {
  const Program &program = interpreter.program();
  std::map<std::string, std::vector<uint8_t>> data;
  std::map<std::string, TensorToWrite> tensors;
  for (const BindingRef &output : program.outputs) {
    const TensorRef &buffer = program.buffers[output.buffer];
    std::vector<uint8_t> &bytes = data[output.name];
    bytes.resize(buffer.bytes);
    if (Status s = readOnRankZero(interpreter, output.buffer, bytes.data(),
                                  bytes.size());
        !s)
      return s;
    tensors[output.name] = {safetensorsDType(buffer.dtype), buffer.shape,
                            bytes.data(), bytes.size()};
  }
  if (interpreter.rank() != 0)
    return Status::ok();
  return writeSafetensors(path, tensors);
}

struct TraceEvent {
  /// The kernel's index in the file and its opcode.
  uint32_t kernel;
  fb::OpCode op;
  uint64_t step;
  KernelTiming timing;
  /// With stage_actions, the run's action (an index into the rank's action
  /// list) and its microbatch; -1 without.
  int64_t action = -1;
  uint32_t microbatch = 0;
};

std::string jsonEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

/// Collectives and transfers (send, recv, their starts and the waits on
/// them: Kernels.def's Communicates) are "comm" events, other kernels
/// "kernel" ones.
bool isCollective(fb::OpCode op) {
  const KernelInfo *info = kernelInfo(op);
  return info && info->kind == KernelKind::Communicates;
}

/// Rank r of several writes TRACE.json as TRACE.r.json (TRACE.x as
/// TRACE.x.r): one file per rank, side by side.
std::string tracePathOf(const std::string &path, int64_t rank, int64_t ranks) {
  if (ranks == 1)
    return path;
  std::string suffix = "." + std::to_string(rank);
  const std::string json = ".json";
  if (path.size() > json.size() &&
      path.compare(path.size() - json.size(), json.size(), json) == 0)
    return path.substr(0, path.size() - json.size()) + suffix + json;
  return path + suffix;
}

/// `timedByDevice`: the device's run marks timed the kernels
/// (Device::markRuns), else a synchronize after each; the file says which
/// ("tpcTiming": "device" or "synchronized").
Status writeTrace(const std::string &path, const Program &program,
                  const std::string &model,
                  const std::vector<TraceEvent> &events, bool timedByDevice) {
  unsigned long long rank = static_cast<unsigned long long>(program.rank);
  char line[256];
  std::snprintf(line, sizeof(line),
                "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%llu,"
                "\"args\":{\"name\":\"rank %llu (",
                rank, rank);
  std::string json = "{\"traceEvents\":[\n";
  json += line + jsonEscape(model) + ")\"}}";
  for (const TraceEvent &event : events) {
    std::snprintf(
        line, sizeof(line),
        ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\","
        "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%llu,\"tid\":0,"
        "\"args\":{\"kernel\":%u,\"step\":%llu",
        opCodeName(event.op), isCollective(event.op) ? "comm" : "kernel",
        event.timing.startNs / 1000.0, event.timing.durationNs / 1000.0, rank,
        event.kernel, static_cast<unsigned long long>(event.step));
    json += line;
    if (event.action >= 0) {
      std::snprintf(line, sizeof(line), ",\"action\":%lld,\"microbatch\":%u",
                    static_cast<long long>(event.action), event.microbatch);
      json += line;
    }
    json += "}}";
  }
  json += "\n],\"displayTimeUnit\":\"ms\",\"tpcTiming\":\"";
  json += timedByDevice ? "device" : "synchronized";
  json += "\"}\n";
  return writeFileAtomically(path, {{json.data(), json.size()}});
}

/// Reads an f32 scalar output on rank 0, from the first rank owning it (a
/// pipeline's loss lives on its last stage). Collective: every rank calls
/// it; `value` is set on rank 0.
Status readScalar(Interpreter &interpreter, const BindingRef &output,
                  float &value) {
  return readOnRankZero(interpreter, output.buffer, &value, sizeof(value));
}

/// Where each step's inputs come from: a fixed batch or token data.
struct InputSource {
  HostInputs fixed;
  TokenFile file;
  std::optional<TokenSampler> sampler;

  Status copyTo(Interpreter &interpreter, uint64_t &position) {
    if (!sampler)
      return fixed.copyTo(interpreter);
    if (Status s = sampler->sample(position++); !s)
      return s;
    return sampler->inputs().copyTo(interpreter);
  }
  int64_t tokens() const {
    return sampler ? sampler->inputs().tokens : fixed.tokens;
  }
};

/// Opens a token file and its sampler for the stream `name`.
Status openTokens(const std::string &path, TokenDType dtype, uint64_t seed,
                  const char *name, const Program &program,
                  InputSource &source) {
  if (Status s = TokenFile::open(path, dtype, source.file); !s)
    return s;
  TokenSampler sampler;
  if (Status s =
          TokenSampler::create(source.file, seed, name, program, sampler);
      !s)
    return s;
  source.sampler = std::move(sampler);
  return Status::ok();
}

/// The fault-injection testing aid: TPCRT_FAIL_RANK, TPCRT_FAIL_STEP and
/// TPCRT_FAIL_KIND (error or crash) from the environment.
struct FaultInjection {
  std::optional<uint64_t> rank, step;
  bool crash = false;

  static Status fromEnvironment(FaultInjection &out) {
    FaultInjection fault;
    const char *rank = std::getenv("TPCRT_FAIL_RANK");
    const char *step = std::getenv("TPCRT_FAIL_STEP");
    const char *kind = std::getenv("TPCRT_FAIL_KIND");
    if (!rank && !step && !kind) {
      out = fault;
      return Status::ok();
    }
    if (!rank || !step)
      return Status::error("fault injection needs both TPCRT_FAIL_RANK and "
                           "TPCRT_FAIL_STEP");
    uint64_t value = 0;
    if (Status s = parseUnsigned("TPCRT_FAIL_RANK", rank, value); !s)
      return s;
    fault.rank = value;
    if (Status s = parseUnsigned("TPCRT_FAIL_STEP", step, value); !s)
      return s;
    fault.step = value;
    std::string kindText = kind ? kind : "error";
    if (kindText != "error" && kindText != "crash")
      return Status::error("TPCRT_FAIL_KIND '" + kindText +
                           "': expected error or crash");
    fault.crash = kindText == "crash";
    out = fault;
    return Status::ok();
  }

  /// Fails (or crashes) when this is the chosen rank and step. A rank
  /// other than 0 first lets rank 0 print the step before and enter this
  /// one's collectives (half a second), so that the failure finds the
  /// others waiting for it mid-step, as the aid means, rather than racing
  /// rank 0's step line out before the launcher ends it.
  Status check(int64_t thisRank, uint64_t thisStep) const {
    if (!rank || *rank != static_cast<uint64_t>(thisRank) || *step != thisStep)
      return Status::ok();
    if (thisRank != 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (crash) {
      std::fflush(stdout);
      std::abort();
    }
    return Status::error(
        "injected failure (TPCRT_FAIL_RANK=" + std::to_string(*rank) +
        " TPCRT_FAIL_STEP=" + std::to_string(*step) + ")");
  }
};

/// Every rank's `mine`, in rank order (N per rank), gathered over the world
/// (this rank's alone without one); `what` names them in an error.
template <typename T, size_t N>
Status gatherRanks(Interpreter &interpreter, const T (&mine)[N],
                   std::vector<T> &all, const char *what) {
  Communicator *world = interpreter.world();
  all.resize(N * static_cast<size_t>(world ? world->size() : 1));
  if (!world) {
    std::copy(mine, mine + N, all.begin());
    return Status::ok();
  }
  if (Status s = world->allGather(mine, all.data(), sizeof(mine)); !s)
    return s.withContext(std::string("gathering the ") + what);
  return Status::ok();
}

/// The device's memory in use (Device::deviceMemoryInUse) before the steps,
/// after the first and after the last; zeros where the device has no count.
struct MemoryInUse {
  uint64_t beforeSteps = 0, afterFirstStep = 0, afterLastStep = 0;
};

/// Rank 0 prints every rank's peak line, in rank order (each rank's numbers
/// gathered over the world); where a device allocated more than the arena
/// (the CUDA device's workspace), its whole allocation too, and where it
/// counts its memory in use, that count around the steps, on stderr.
Status printPeaks(Interpreter &interpreter, const MemoryInUse &inUse,
                  uint64_t steps) {
  const Device &device = interpreter.device();
  constexpr size_t kFields = 7;
  uint64_t mine[kFields] = {
      interpreter.peakBytes(), interpreter.program().plannedPeakBytes,
      device.allocatedBytes(), device.arenaBytes(),
      inUse.beforeSteps,       inUse.afterFirstStep,
      inUse.afterLastStep};
  std::vector<uint64_t> all;
  if (Status s = gatherRanks(interpreter, mine, all, "peaks"); !s)
    return s;
  if (interpreter.rank() != 0)
    return Status::ok();
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  for (size_t r = 0; r < all.size() / kFields; ++r) {
    const uint64_t *rank = &all[kFields * r];
    std::printf("rank %zu peak_bytes %llu planned_peak_bytes %llu\n", r,
                u(rank[0]), u(rank[1]));
    if (rank[2] > rank[3])
      std::fprintf(stderr,
                   "tpc-run: rank %zu device_bytes %llu (arena %llu, "
                   "workspace %llu)\n",
                   r, u(rank[2]), u(rank[3]), u(rank[2] - rank[3]));
    if (rank[4] && rank[5] && rank[6])
      std::fprintf(stderr,
                   "tpc-run: rank %zu device_in_use_bytes before_steps %llu "
                   "after_step_1 %llu after_step_%llu %llu\n",
                   r, u(rank[4]), u(rank[5]),
                   static_cast<unsigned long long>(steps), u(rank[6]));
  }
  std::fflush(stdout);
  return Status::ok();
}

/// With --trace: each rank's time over the steps, on rank 0's stderr
/// (stdout keeps the step lines of the contract), one line per rank: the
/// steps' span (first kernel's start to last kernel's end, per step), the
/// time in computing kernels, in transfers and collectives (waiting for the
/// peers included, in a blocking transfer or the wait on a started one: a
/// pipeline's bubble shows there), and the rest (between kernels).
Status printTimes(Interpreter &interpreter,
                  const std::vector<TraceEvent> &events) {
  double mine[4] = {0, 0, 0, 0}; // span, compute, comm, other
  std::map<uint64_t, std::pair<int64_t, int64_t>> spans; // step -> [start, end)
  for (const TraceEvent &event : events) {
    int64_t start = event.timing.startNs;
    int64_t end = start + event.timing.durationNs;
    auto it = spans.try_emplace(event.step, start, end).first;
    it->second.first = std::min(it->second.first, start);
    it->second.second = std::max(it->second.second, end);
    (isCollective(event.op) ? mine[2] : mine[1]) +=
        static_cast<double>(event.timing.durationNs) * 1e-9;
  }
  for (const auto &[step, span] : spans)
    mine[0] += static_cast<double>(span.second - span.first) * 1e-9;
  // Not below 0: runs timed back to back (device marks) leave no gap, and
  // the sums' rounding must not print -0.000000.
  mine[3] = std::max(0.0, mine[0] - mine[1] - mine[2]);
  std::vector<double> all;
  if (Status s = gatherRanks(interpreter, mine, all, "times"); !s)
    return s;
  if (interpreter.rank() != 0)
    return Status::ok();
  for (size_t r = 0; r < all.size() / 4; ++r) {
    const double *t = &all[4 * r];
    std::fprintf(stderr,
                 "tpc-run: trace: rank %zu steps_s %.6f compute_s %.6f comm_s "
                 "%.6f other_s %.6f comm_fraction %.4f\n",
                 r, t[0], t[1], t[2], t[3], t[0] > 0 ? t[2] / t[0] : 0.0);
  }
  std::fflush(stderr);
  return Status::ok();
}

/// Whether an executable applies dropout: a kernel with a rate above 0.
static bool appliesDropout(const Program &program) {
  return std::any_of(
      program.fileCalls().begin(), program.fileCalls().end(),
      [](const KernelCall &call) { return call.dropoutRate > 0.0; });
}

/// The steps, evaluations and files of a run on this rank's interpreter.
Status runSteps(const Options &options, const FaultInjection &fault,
                Interpreter &interpreter) {
  const Program &program = interpreter.program();
  bool printer = interpreter.rank() == 0;
  const BindingRef *loss = program.findOutput("loss");
  if (!loss)
    return Status::error(options.model +
                         ": the executable has no 'loss' output");
  const BindingRef *gradNorm = program.findOutput("grad_norm");
  const BindingRef *lr = program.findOutput("lr");
  bool training = gradNorm && lr;

  RunCounters counters;
  counters.dataSeed = options.dataSeed.value_or(0);
  if (options.loadCheckpoint) {
    if (Status s =
            loadCheckpoint(*options.loadCheckpoint, interpreter, counters);
        !s)
      return s;
    bool drewData = counters.dataPosition > 0 || counters.evalPosition > 0;
    if (options.dataSeed && *options.dataSeed != counters.dataSeed && drewData)
      return Status::error("--data-seed " + std::to_string(*options.dataSeed) +
                           ": the checkpoint drew its batches with seed " +
                           std::to_string(counters.dataSeed));
    if (options.dataSeed)
      counters.dataSeed = *options.dataSeed;
  } else if (options.weights) {
    LoadWeightsOptions load;
    load.initSeed = options.initSeed;
    std::vector<std::string> drawn;
    if (Status s = loadWeights(*options.weights, interpreter, load, &drawn); !s)
      return s;
    if (printer && !drawn.empty()) {
      std::string names;
      for (const std::string &name : drawn)
        names += (names.empty() ? "'" : ", '") + name + "'";
      std::fprintf(
          stderr,
          "warning: --weights %s: drew %zu tensor%s the file lacks "
          "with --init-seed %llu: %s\n",
          options.weights->c_str(), drawn.size(), drawn.size() == 1 ? "" : "s",
          static_cast<unsigned long long>(*options.initSeed), names.c_str());
      std::fflush(stderr);
    }
  } else if (Status s = initWeights(*options.initSeed, interpreter); !s) {
    return s;
  }

  const BindingRef *ids = program.findInput("input_ids");
  TokenDType dtype = defaultTokenDType(ids ? ids->valueBound : 0);
  if (options.dataDType)
    if (Status s = parseTokenDType(*options.dataDType, dtype); !s)
      return s;
  InputSource train, eval;
  if (options.inputs) {
    bool labelsEqualIds = false;
    if (Status s = readInputs(*options.inputs, program, train.fixed,
                              options.labels, &labelsEqualIds);
        !s)
      return s;
    if (printer && labelsEqualIds && options.labels == LabelShift::Shifted) {
      std::fprintf(stderr,
                   "warning: --inputs %s: 'labels' equals 'input_ids' "
                   "(Hugging Face's convention); tpc-run reads labels "
                   "pre-shifted: pass --labels unshifted to shift them as "
                   "Hugging Face does\n",
                   options.inputs->c_str());
      std::fflush(stderr);
    }
  } else if (options.syntheticSeed) {
    if (Status s =
            syntheticInputs(*options.syntheticSeed, program, train.fixed);
        !s)
      return s.withContext(options.model);
  } else if (Status s = openTokens(*options.data, dtype, counters.dataSeed,
                                   "data", program, train);
             !s) {
    return s;
  }
  if (options.evalData)
    if (Status s = openTokens(*options.evalData, dtype, counters.dataSeed,
                              "eval", program, eval);
        !s)
      return s;

  // A forward pass says whether it evaluates (no dropout, as Hugging
  // Face's model.eval(); tpc-compile's default) or keeps the model's.
  if (!training && printer)
    std::fprintf(stderr, "%s\n",
                 appliesDropout(program)
                     ? "tpc-run: the forward pass applies the model's dropout "
                       "(compiled with --keep-dropout)"
                     : "tpc-run: the forward pass evaluates without dropout, "
                       "as Hugging Face's model.eval()");

  std::vector<TraceEvent> events;
  if (options.trace) {
    interpreter.setTiming(true);
    events.reserve(options.steps * program.numRuns);
  }
  MemoryInUse inUse;
  inUse.beforeSteps = interpreter.device().deviceMemoryInUse();
  uint64_t first = interpreter.step();
  for (uint64_t k = 1; k <= options.steps; ++k) {
    uint64_t step = first + k;
    std::string context = "step " + std::to_string(step);
    if (Status s = fault.check(interpreter.rank(), step); !s)
      return s.withContext(context);
    auto start = std::chrono::steady_clock::now();
    if (Status s = train.copyTo(interpreter, counters.dataPosition); !s)
      return s.withContext(context);
    if (Status s = interpreter.runStep(); !s)
      return s.withContext(context);
    float lossValue = 0.0f, normValue = 0.0f, lrValue = 0.0f;
    if (Status s = readScalar(interpreter, *loss, lossValue); !s)
      return s;
    if (training) {
      if (Status s = readScalar(interpreter, *gradNorm, normValue); !s)
        return s;
      if (Status s = readScalar(interpreter, *lr, lrValue); !s)
        return s;
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    // After the step's time (a query of the driver, not the step's work).
    inUse.afterLastStep = interpreter.device().deviceMemoryInUse();
    if (k == 1)
      inUse.afterFirstStep = inUse.afterLastStep;
    double rate =
        seconds > 0 ? static_cast<double>(train.tokens()) / seconds : 0.0;
    if (printer) {
      if (training)
        std::printf("step %llu loss %.6f grad_norm %.7g lr %.7g tokens_per_s "
                    "%.1f\n",
                    static_cast<unsigned long long>(step), lossValue, normValue,
                    lrValue, rate);
      else
        std::printf("step %llu loss %.6f tokens_per_s %.1f\n",
                    static_cast<unsigned long long>(step), lossValue, rate);
      std::fflush(stdout);
    }
    // Every kernel run: with actions a kernel runs once per microbatch.
    if (options.trace)
      for (const RunTiming &run : interpreter.runTimings()) {
        TraceEvent event{run.kernel, program.fileCalls()[run.kernel].op, step,
                         run.timing};
        if (program.hasActions()) {
          event.action = run.action;
          event.microbatch = program.actions[run.action].microbatch;
        }
        events.push_back(event);
      }
    if (k == 1 && options.dumpGrads)
      if (Status s = writeGrads(*options.dumpGrads, interpreter); !s)
        return s;
    // Outputs are whole on every rank that owns them: gathered on rank 0.
    if (k == options.steps && options.dumpOutputs)
      if (Status s = dumpOutputs(*options.dumpOutputs, interpreter); !s)
        return s;

    if (options.evalEvery && step % options.evalEvery == 0) {
      double sum = 0.0;
      for (uint64_t b = 0; b < options.evalBatches; ++b) {
        float value = 0.0f;
        Status s = eval.copyTo(interpreter, counters.evalPosition);
        if (s)
          s = interpreter.evaluate();
        if (s)
          s = readScalar(interpreter, *loss, value);
        if (!s)
          return s.withContext("evaluation after " + context);
        sum += value;
      }
      if (printer) {
        std::printf("eval %llu loss %.6f batches %llu\n",
                    static_cast<unsigned long long>(step),
                    sum / static_cast<double>(options.evalBatches),
                    static_cast<unsigned long long>(options.evalBatches));
        std::fflush(stdout);
      }
    }
  }

  if (options.saveCheckpoint)
    if (Status s = saveCheckpoint(*options.saveCheckpoint, interpreter,
                                  counters, options.checkpoint);
        !s)
      return s;
  if (options.trace) {
    if (Status s = writeTrace(tracePathOf(*options.trace, interpreter.rank(),
                                          program.mesh.worldSize()),
                              program, options.model, events,
                              interpreter.timedByDevice());
        !s)
      return s;
    if (Status s = printTimes(interpreter, events); !s)
      return s;
  }
  return printPeaks(interpreter, inUse, options.steps);
}

//===----------------------------------------------------------------------===//
// Ranks and launchers
//===----------------------------------------------------------------------===//

/// tpc-run's ranks (Launch.h): the ranks `--ranks N` starts carry
/// TPCRT_RUN_LAUNCHED=1, so that they do not start ranks again.
const RankLauncher kLauncher = {"tpc-run", "TPCRT_RUN_LAUNCHED"};

/// The mesh of the executable as tpc-compile's --mesh spells it
/// ("dp=2,tp=2"), and its number of ranks.
std::string meshText(const fb::Executable &exe, int64_t &ranks) {
  ranks = 1;
  std::string text;
  if (exe.mesh())
    for (const fb::MeshAxis *axis : *exe.mesh()) {
      ranks *= axis->size();
      if (!text.empty())
        text += ",";
      text += (axis->name() ? axis->name()->str() : "?") + "=" +
              std::to_string(axis->size());
    }
  return text;
}

/// "model.tpcx was compiled for a mesh dp=2,tp=2 (4 ranks)".
std::string compiledFor(const Options &options, const fb::Executable &exe) {
  int64_t ranks = 1;
  std::string mesh = meshText(exe, ranks);
  if (mesh.empty())
    return options.model + " was compiled for one rank (no mesh)";
  return options.model + " was compiled for a mesh " + mesh + " (" +
         std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)");
}

/// Runs the executable on this rank; `world` holds every rank of the mesh
/// (null for one rank).
Status run(const Options &options, const fb::Executable &exe,
           const FaultInjection &fault, Communicator *world) {
  Interpreter interpreter;
  std::unique_ptr<Device> device;
  if (options.device == "cuda") {
    CudaDeviceOptions cuda;
    localRankFromEnvironment(cuda.localRank, cuda.localRanks);
    if (Status s = createCudaDevice(cuda, device); !s)
      return s.withContext("--device cuda");
  } else {
    device = createCpuDevice();
  }
  if (Status s =
          Interpreter::create(exe, std::move(device), interpreter, world);
      !s)
    return s.withContext(options.model);
  Status status = runSteps(options, fault, interpreter);
  // A step that failed may leave started transfers in flight (send_start,
  // recv_start), whose requests wait for their peers when the interpreter
  // goes, and the peers may wait for this rank: end every rank first.
  if (!status && world && world->size() > 1) {
    reportError(status, world->rank(), world->size());
    world->abort(1);
  }
  return status;
}

/// Everything before the run: the flags, the fault injection, the
/// executable, and the ranks against its mesh. Outside a launcher, --ranks N >
/// 1 runs tpc-run under mpiexec here (returning only on failure). Under
/// a launcher `world` is the launcher's world; `runOnWorld` says whether the
/// run needs it.
Status prepare(int argc, char **argv, Communicator *world, Options &options,
               FaultInjection &fault, LoadedExecutable &loaded,
               bool &runOnWorld) {
  if (Status s = parseArguments(argc, argv, options); !s)
    return s;
  if (options.help)
    return Status::ok();
  if (Status s = FaultInjection::fromEnvironment(fault); !s)
    return s;
  if (Status s = loadExecutable(options.model, loaded); !s)
    return s;
  const fb::Executable &exe = loaded.executable();
  int64_t meshRanks = 1;
  meshText(exe, meshRanks);
  // A checkpoint directory needs the executable's Hugging Face config:
  // refused now rather than after the steps.
  if (options.saveCheckpoint) {
    std::string hfConfig = exe.hf_config() ? exe.hf_config()->str() : "";
    if (Status s = checkCheckpointTarget(*options.saveCheckpoint, hfConfig);
        !s)
      return Status::error("--save-checkpoint " + s.message());
  }
  const char *shard = std::getenv("TPCRT_CHECKPOINT_SHARD_BYTES");
  if (options.saveCheckpoint && shard) {
    if (Status s = parseUnsigned("TPCRT_CHECKPOINT_SHARD_BYTES", shard,
                                 options.checkpoint.maxShardBytes);
        !s)
      return s;
  }
  // A Hugging Face model directory stands for its checkpoint file.
  if (options.weights) {
    std::string file;
    if (Status s = resolveWeightsPath(*options.weights, file); !s)
      return Status::error("--weights " + s.message());
    options.weights = file;
  }

  if (world) {
    int64_t size = world->size();
    if (options.ranks && static_cast<int64_t>(*options.ranks) != size)
      return Status::error("--ranks is " + std::to_string(*options.ranks) +
                           ", but the launcher started " +
                           std::to_string(size) + " ranks");
    if (size != meshRanks)
      return Status::error(compiledFor(options, exe) +
                           "; the launcher started " + std::to_string(size) +
                           (size == 1 ? " rank" : " ranks"));
    runOnWorld = size > 1 || meshRanks > 1;
    return Status::ok();
  }
  if (!options.ranks && meshRanks > 1)
    return Status::error(compiledFor(options, exe) + ": pass --ranks " +
                         std::to_string(meshRanks) +
                         " (or start it under mpirun/srun)");
  uint64_t ranks = options.ranks.value_or(1);
  if (static_cast<int64_t>(ranks) != meshRanks)
    return Status::error(compiledFor(options, exe) + "; --ranks is " +
                         std::to_string(ranks));
  runOnWorld = false;
  if (ranks == 1)
    return Status::ok();
  return relaunch(kLauncher, argc, argv, ranks,
                  "--ranks " + std::to_string(ranks) +
                      ": this tpc-run was built without MPI (the runtime "
                      "found no MPI at configure time)");
}

/// After prepare() on every rank of `world`: which rank reports a failure.
/// A failure there is alike on every rank (the same flags and files), so
/// only the lowest failing rank prints it and every rank exits with status 1,
/// without aborting anyone. Returns -1 when every rank succeeded.
Status firstFailure(Communicator &world, bool failed, int &first) {
  std::vector<uint8_t> flags(static_cast<size_t>(world.size()));
  uint8_t mine = failed ? 1 : 0;
  if (Status s = world.allGather(&mine, flags.data(), 1); !s)
    return s;
  first = -1;
  for (size_t r = 0; r < flags.size() && first < 0; ++r)
    if (flags[r])
      first = static_cast<int>(r);
  return Status::ok();
}

/// This process's rank for the interruption message (-1: alone).
volatile sig_atomic_t interruptedRank = -1;
/// Set once this rank has failed and is on its way out: a signal then (the
/// launcher ending the ranks of a failed run) ends it without a second
/// message.
volatile sig_atomic_t failing = 0;

/// Appends `text` to `out` (async-signal-safe: no allocation).
void appendText(char *out, size_t &length, size_t size, const char *text) {
  while (*text && length + 1 < size)
    out[length++] = *text++;
}

void appendNumber(char *out, size_t &length, size_t size, uint64_t value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value);
  while (n && length + 1 < size)
    out[length++] = digits[--n];
}

/// SIGINT and SIGTERM: one line and exit status 1, never death by the
/// signal. A checkpoint being written is left out of place (its directory
/// is exchanged with the previous one only once whole, a file renamed only
/// once complete), so the previous one stays whole; the launcher ends the
/// other ranks, as when one fails.
extern "C" void onInterrupt(int signal) {
  if (failing)
    ::_exit(1);
  char text[256];
  size_t length = 0;
  appendText(text, length, sizeof(text), "error: ");
  if (interruptedRank >= 0) {
    appendText(text, length, sizeof(text), "rank ");
    appendNumber(text, length, sizeof(text),
                 static_cast<uint64_t>(interruptedRank));
    appendText(text, length, sizeof(text), ": ");
  }
  appendText(text, length, sizeof(text), signalPhrase(signal));
  if (uint64_t step = watchdogStep()) {
    appendText(text, length, sizeof(text), " in step ");
    appendNumber(text, length, sizeof(text), step);
  }
  appendText(text, length, sizeof(text),
             ": stopped; a checkpoint not yet complete was not written (the "
             "previous one is whole)\n");
  (void)!::write(2, text, length);
  ::_exit(1);
}

void handleInterrupts(int rank) {
  interruptedRank = rank;
  struct sigaction action = {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

} // namespace

int main(int argc, char **argv) {
  // Before MPI starts: a signal while it does is delivered once it has.
  handleInterrupts(underLauncher(kLauncher) ? static_cast<int>(launcherRank())
                                            : -1);
  std::unique_ptr<Communicator> world;
  if (!joinLauncherWorld(kLauncher, world))
    return 1;
  int rank = world ? world->rank() : 0;
  int ranks = world ? world->size() : 1;
  // Bounded from the start (loading waits for the others too); --timeout,
  // once read, replaces the default.
  if (ranks > 1)
    startWatchdog(kDefaultTimeoutSeconds, rank);
  interruptedRank = ranks > 1 ? rank : -1;

  Options options;
  FaultInjection fault;
  LoadedExecutable loaded;
  bool runOnWorld = false;
  Status status = guarded([&] {
    return prepare(argc, argv, world.get(), options, fault, loaded, runOnWorld);
  });
  if (ranks > 1) {
    int first = -1;
    if (Status s = firstFailure(*world, !status, first); !s) {
      reportError(s, rank, ranks);
      world->abort(1);
    }
    if (first >= 0) {
      failing = 1;
      if (first == rank)
        reportError(status, rank, 1);
      return 1;
    }
  } else if (!status) {
    reportError(status, rank, 1);
    return 1;
  }
  if (options.help) {
    if (rank == 0)
      std::fputs(kUsage, stdout);
    return 0;
  }
  if (ranks > 1)
    startWatchdog(options.timeout, rank);

  status = guarded([&] {
    return run(options, loaded.executable(), fault,
               runOnWorld ? world.get() : nullptr);
  });
  if (status)
    return 0;
  failing = 1;
  reportError(status, rank, ranks);
  // The others may be waiting for this rank in a collective: end them all.
  if (ranks > 1)
    world->abort(1);
  return 1;
}
