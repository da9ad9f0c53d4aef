//===- tpc-run.cpp - run a compiled tpc executable ------------------------===//
//
// tpc-run model.tpcx (--weights W | --init-seed S)
//         (--inputs B | --synthetic-seed S) [--steps K] [--device cpu]
//         [--dump-outputs OUT.safetensors] [--trace TRACE.json]
//
// Runs the forward pass (and loss) of an executable on one CPU rank and
// prints one line per step and the measured peak. Every failure is an
// "error: ..." line on stderr and exit status 1. See docs/runtime/tpc-run.md.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Device.h"
#include "tpcrt/Executable.h"
#include "tpcrt/FileIO.h"
#include "tpcrt/Inputs.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Safetensors.h"
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

const char kUsage[] = R"(usage: tpc-run model.tpcx (--weights W | --init-seed S)
               (--inputs BATCH | --synthetic-seed S) [options]

Runs the forward pass and the loss of a tpc executable (tpc-compile's .tpcx)
on one CPU rank. Prints `step <k> loss <float> tokens_per_s <float>` per step
and `rank 0 peak_bytes <int> planned_peak_bytes <int>` at the end.

Weights (exactly one):
  --weights PATH          a .safetensors file, or a sharded checkpoint's
                          model.safetensors.index.json; tensors are matched by
                          Hugging Face name, with or without the
                          "transformer." prefix; extra tensors are ignored
  --init-seed S           made-up weights: each param by its init kind
                          (normal with its init_std, zeros, ones), a function
                          of S and the param's name

Inputs (exactly one):
  --inputs BATCH          a .safetensors file with input_ids and labels
                          (I64 or I32, the executable's [batch, seq]); the
                          same batch every step
  --synthetic-seed S      ids and labels drawn uniformly below the
                          vocabulary, a function of S

Options:
  --steps K               run K steps (default 1); the forward pass only, so
                          the steps differ only in their dropout masks
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

Not supported yet: --data, --eval-data, --eval-every, --dump-grads,
--save-checkpoint, --load-checkpoint, and more than one rank.
)";

/// Flags of the tpc-run contract (INTERFACE.md) that this version refuses.
const char *const kNotYet[] = {"--data",           "--eval-data",
                               "--eval-every",     "--dump-grads",
                               "--save-checkpoint", "--load-checkpoint"};

struct Options {
  std::string model;
  std::optional<std::string> weights, inputs, dumpOutputs, trace;
  std::optional<uint64_t> initSeed, syntheticSeed;
  uint64_t steps = 1;
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
    for (const char *name : kNotYet)
      if (flag == name)
        return Status::error(flag +
                             " is not supported yet (this tpc-run runs the "
                             "forward pass on one rank)");
    static const char *const kFlags[] = {
        "--weights", "--init-seed",    "--inputs", "--synthetic-seed",
        "--steps",   "--dump-outputs", "--trace",  "--device",
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

    if (flag == "--weights")
      options.weights = value;
    else if (flag == "--inputs")
      options.inputs = value;
    else if (flag == "--dump-outputs")
      options.dumpOutputs = value;
    else if (flag == "--trace")
      options.trace = value;
    else if (flag == "--device")
      options.device = value;
    else {
      uint64_t number = 0;
      if (Status s = parseUnsigned(flag, value, number); !s)
        return s;
      if (flag == "--init-seed")
        options.initSeed = number;
      else if (flag == "--synthetic-seed")
        options.syntheticSeed = number;
      else if (flag == "--steps") {
        if (number == 0)
          return Status::error("--steps: must be at least 1");
        options.steps = number;
      } else if (number != 1) { // --ranks
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
  if (options.weights && options.initSeed)
    return Status::error("--weights and --init-seed exclude each other");
  if (!options.weights && !options.initSeed)
    return Status::error("no weights: give --weights W.safetensors or "
                         "--init-seed S");
  if (options.inputs && options.syntheticSeed)
    return Status::error("--inputs and --synthetic-seed exclude each other");
  if (!options.inputs && !options.syntheticSeed)
    return Status::error("no inputs: give --inputs BATCH.safetensors or "
                         "--synthetic-seed S");
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
    if (Status s = interpreter.readBuffer(output.buffer, bytes.data(),
                                          bytes.size());
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

  if (options.weights) {
    if (Status s = loadWeights(*options.weights, interpreter); !s)
      return s;
  } else if (Status s = initWeights(*options.initSeed, interpreter); !s) {
    return s;
  }
  HostInputs inputs;
  if (options.inputs) {
    if (Status s = readInputs(*options.inputs, program, inputs); !s)
      return s;
  } else if (Status s = syntheticInputs(*options.syntheticSeed, program,
                                        inputs);
             !s) {
    return s.withContext(options.model);
  }

  std::vector<TraceEvent> events;
  if (options.trace) {
    interpreter.setTiming(true);
    events.reserve(options.steps * program.calls.size());
  }
  for (uint64_t k = 1; k <= options.steps; ++k) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = inputs.copyTo(interpreter); !s)
      return s;
    if (Status s = interpreter.runStep(); !s)
      return s.withContext("step " + std::to_string(k));
    float value = 0.0f;
    if (Status s = interpreter.readBuffer(loss->buffer, &value, sizeof(value));
        !s)
      return s;
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    std::printf("step %llu loss %.6f tokens_per_s %.1f\n",
                static_cast<unsigned long long>(k), value,
                seconds > 0 ? static_cast<double>(inputs.tokens) / seconds
                            : 0.0);
    std::fflush(stdout);
    if (options.trace)
      for (const KernelCall &call : program.calls)
        events.push_back({call.index, k, interpreter.timings()[call.index]});
  }

  if (options.dumpOutputs)
    if (Status s = dumpOutputs(*options.dumpOutputs, interpreter); !s)
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
