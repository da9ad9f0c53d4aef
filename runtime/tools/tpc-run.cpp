//===- tpc-run.cpp - run a compiled tpc executable ------------------------===//
//
// tpc-run model.tpcx (--weights W | --init-seed S | --load-checkpoint C)
//         (--inputs B | --synthetic-seed S | --data TOKENS.bin) [--steps K]
//         [--eval-data TOKENS.bin --eval-every N] [--dump-grads G]
//         [--save-checkpoint C] [--dump-outputs OUT] [--trace TRACE.json]
//
// Runs an executable on one CPU rank: the forward pass and loss, or, for an
// executable compiled with --train, training steps. Prints one line per step
// and the measured peak. Every failure is an "error: ..." line on stderr and
// exit status 1. See docs/runtime/tpc-run.md.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Checkpoint.h"
#include "tpcrt/Device.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Safetensors.h"
#include "tpcrt/TokenData.h"
#include "tpcrt/Weights.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace tpcrt;

namespace {

const char kUsage[] =
    R"(usage: tpc-run model.tpcx (--weights W | --init-seed S | --load-checkpoint C)
               (--inputs BATCH | --synthetic-seed S | --data TOKENS.bin) [options]

Runs a tpc executable (tpc-compile's .tpcx) on one CPU rank: its forward pass
and loss, or training steps when it was compiled with --train. Prints
`step <k> loss <float> tokens_per_s <float>` per step (training:
`step <k> loss <float> grad_norm <float> lr <float> tokens_per_s <float>`,
the loss of step k computed before update k) and
`rank 0 peak_bytes <int> planned_peak_bytes <int>` at the end.

Weights (exactly one):
  --weights PATH          a .safetensors file, or a sharded checkpoint's
                          model.safetensors.index.json; tensors are matched by
                          Hugging Face name, with or without the
                          "transformer." prefix; extra tensors are ignored
  --init-seed S           made-up weights: each param by its init kind
                          (normal with its init_std, zeros, ones), a function
                          of S and the param's name
  --load-checkpoint C     resume from a --save-checkpoint file: params,
                          optimizer state, step, data positions; steps are
                          numbered on from the checkpoint's

Inputs (exactly one):
  --inputs BATCH          a .safetensors file with input_ids and labels
                          (I64 or I32, the executable's [batch, seq]); the
                          same batch every step
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
  --save-checkpoint C     write a checkpoint after the last step, atomically
  --device cpu|cuda       where to run (default cpu; cuda is not available
                          yet)
  --dump-outputs OUT      write the outputs of the last step (loss, and
                          logits when the executable returns them) to the
                          safetensors file OUT, atomically
  --trace TRACE.json      write a Chrome/Perfetto trace: one complete event
                          per kernel and step (ts and dur in microseconds,
                          pid = rank)
  --ranks N               ranks to run (only 1 is supported yet)
  --help                  show this text
)";

struct Options {
  std::string model;
  std::optional<std::string> weights, inputs, data, evalData, dumpOutputs,
      dumpGrads, saveCheckpoint, loadCheckpoint, trace, dataDType;
  std::optional<uint64_t> initSeed, syntheticSeed, dataSeed;
  uint64_t steps = 1, evalEvery = 0, evalBatches = 1;
  std::string device = "cpu";
  bool help = false;
};

Status parseUnsigned(const std::string &flag, const std::string &text,
                     uint64_t &value) {
  auto bad = [&] {
    return Status::error(flag + ": '" + text +
                         "' is not a non-negative integer below 2^64");
  };
  if (text.empty() || text.size() > 20)
    return bad();
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return bad();
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value))
      return bad();
  }
  return Status::ok();
}

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
                                         "--ranks"};
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
    else {
      uint64_t number = 0;
      if (Status s = parseUnsigned(flag, value, number); !s)
        return s;
      bool positive = flag == "--steps" || flag == "--eval-every" ||
                      flag == "--eval-batches";
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
      else if (number != 1) { // --ranks
        return Status::error("--ranks " + value +
                             ": more than one rank is not supported yet");
      }
    }
  }
  if (options.help)
    return Status::ok();
  if (options.model.empty())
    return Status::error("no executable given (usage: tpc-run model.tpcx "
                         "...; see --help)");
  if (Status s = exactlyOne(options.weights.has_value() +
                                options.initSeed.has_value() +
                                options.loadCheckpoint.has_value(),
                            "--weights, --init-seed and --load-checkpoint "
                            "exclude each other",
                            "no weights: give --weights W.safetensors, "
                            "--init-seed S or --load-checkpoint C");
      !s)
    return s;
  if (Status s = exactlyOne(options.inputs.has_value() +
                                options.syntheticSeed.has_value() +
                                options.data.has_value(),
                            "--inputs, --synthetic-seed and --data exclude "
                            "each other",
                            "no inputs: give --inputs BATCH.safetensors, "
                            "--synthetic-seed S or --data TOKENS.bin");
      !s)
    return s;
  if (options.evalData.has_value() != (options.evalEvery != 0))
    return Status::error("--eval-data and --eval-every go together");
  if (options.evalBatches != 1 && !options.evalData)
    return Status::error("--eval-batches needs --eval-data");
  if (options.dataDType && !options.data && !options.evalData)
    return Status::error("--data-dtype needs --data or --eval-data");
  if (options.dataSeed && !options.data && !options.evalData)
    return Status::error("--data-seed needs --data or --eval-data");
  if (options.device == "cuda")
    return Status::error("--device cuda: the CUDA backend is not available "
                         "yet; use --device cpu");
  if (options.device != "cpu")
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

Status dumpOutputs(const std::string &path, Interpreter &interpreter) {
  const Program &program = interpreter.program();
  std::map<std::string, std::vector<uint8_t>> data;
  std::map<std::string, TensorToWrite> tensors;
  for (const BindingRef &output : program.outputs) {
    const TensorRef &buffer = program.buffers[output.buffer];
    std::vector<uint8_t> &bytes = data[output.name];
    bytes.resize(buffer.bytes);
    if (Status s =
            interpreter.readBuffer(output.buffer, bytes.data(), bytes.size());
        !s)
      return s;
    tensors[output.name] = {safetensorsDType(buffer.dtype), buffer.shape,
                            bytes.data(), bytes.size()};
  }
  return writeSafetensors(path, tensors);
}

struct TraceEvent {
  uint32_t kernel;
  uint64_t step;
  KernelTiming timing;
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

Status writeTrace(const std::string &path, const Program &program,
                  const std::string &model,
                  const std::vector<TraceEvent> &events) {
  std::string json = "{\"traceEvents\":[\n";
  json += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{"
          "\"name\":\"rank 0 (" +
          jsonEscape(model) + ")\"}}";
  char line[256];
  for (const TraceEvent &event : events) {
    const KernelCall &call = program.calls[event.kernel];
    std::snprintf(line, sizeof(line),
                  ",\n{\"name\":\"%s\",\"cat\":\"kernel\",\"ph\":\"X\","
                  "\"ts\":%.3f,\"dur\":%.3f,\"pid\":0,\"tid\":0,\"args\":{"
                  "\"kernel\":%u,\"step\":%llu}}",
                  opCodeName(call.op), event.timing.startNs / 1000.0,
                  event.timing.durationNs / 1000.0, event.kernel,
                  static_cast<unsigned long long>(event.step));
    json += line;
  }
  json += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return writeFileAtomically(path, {{json.data(), json.size()}});
}

/// Reads an f32 scalar output.
Status readScalar(Interpreter &interpreter, const BindingRef &output,
                  float &value) {
  return interpreter.readBuffer(output.buffer, &value, sizeof(value));
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

Status run(const Options &options) {
  LoadedExecutable loaded;
  if (Status s = loadExecutable(options.model, loaded); !s)
    return s;
  const fb::Executable &exe = loaded.executable();
  int64_t ranks = 1;
  if (exe.mesh())
    for (const fb::MeshAxis *axis : *exe.mesh())
      ranks *= axis->size();
  if (ranks != 1)
    return Status::error(options.model + ": the executable's mesh has " +
                         std::to_string(ranks) +
                         " ranks; more than one rank is not supported yet");

  Interpreter interpreter;
  if (Status s = Interpreter::create(exe, createCpuDevice(), interpreter); !s)
    return s.withContext(options.model);
  const Program &program = interpreter.program();
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
    if (Status s = loadWeights(*options.weights, interpreter); !s)
      return s;
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
    if (Status s = readInputs(*options.inputs, program, train.fixed); !s)
      return s;
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

  std::vector<TraceEvent> events;
  if (options.trace) {
    interpreter.setTiming(true);
    events.reserve(options.steps * program.calls.size());
  }
  uint64_t first = interpreter.step();
  for (uint64_t k = 1; k <= options.steps; ++k) {
    uint64_t step = first + k;
    std::string context = "step " + std::to_string(step);
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
    double rate =
        seconds > 0 ? static_cast<double>(train.tokens()) / seconds : 0.0;
    if (training)
      std::printf("step %llu loss %.6f grad_norm %.7g lr %.7g tokens_per_s "
                  "%.1f\n",
                  static_cast<unsigned long long>(step), lossValue, normValue,
                  lrValue, rate);
    else
      std::printf("step %llu loss %.6f tokens_per_s %.1f\n",
                  static_cast<unsigned long long>(step), lossValue, rate);
    std::fflush(stdout);
    if (options.trace)
      for (const KernelCall &call : program.calls)
        events.push_back({call.index, step, interpreter.timings()[call.index]});
    if (k == 1 && options.dumpGrads)
      if (Status s = writeGrads(*options.dumpGrads, interpreter); !s)
        return s;
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
      std::printf("eval %llu loss %.6f batches %llu\n",
                  static_cast<unsigned long long>(step),
                  sum / static_cast<double>(options.evalBatches),
                  static_cast<unsigned long long>(options.evalBatches));
      std::fflush(stdout);
    }
  }

  if (options.saveCheckpoint)
    if (Status s =
            saveCheckpoint(*options.saveCheckpoint, interpreter, counters);
        !s)
      return s;
  if (options.trace)
    if (Status s = writeTrace(*options.trace, program, options.model, events);
        !s)
      return s;
  std::printf("rank 0 peak_bytes %llu planned_peak_bytes %llu\n",
              static_cast<unsigned long long>(interpreter.peakBytes()),
              static_cast<unsigned long long>(program.plannedPeakBytes));
  return Status::ok();
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options options;
    Status s = parseArguments(argc, argv, options);
    if (s && options.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (s)
      s = run(options);
    if (!s) {
      std::fflush(stdout);
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    return 0;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "error: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
