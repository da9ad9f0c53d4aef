//===- DeviceCheck.cpp - tpcrt-device-check: every kernel against the CPU -===//
//
// `tpcrt-device-check [--device cuda|cpu]` runs every single-rank opcode of
// Kernels.def (DeviceCheckCases.h: one-kernel executables at sizes where no
// two coincide, one large case per heavy opcode, f32 and bf16 storage) on
// the device under test and on the CPU device, from the same seeded random
// inputs, with every result first poisoned (all bits set: NaN in every float
// storage), so that an element a kernel does not write stays NaN and fails.
// Compared per result: f32 norm-wise ||a - b|| / ||b|| <= 1e-5 (1e-2 for a
// GEMM's with --tf32), bf16 and f16 <= 1e-2, no NaN where the CPU has none,
// and bit for bit for u8 masks, i64 counts, copies, casts, slices,
// transposes, pads and zeros; the CPU's results must be finite (a case that
// is not is broken). The device under test runs every case twice: results
// that differ between the runs are nondeterministic and fail. The optimizer
// cases run three steps and compare params and state after the last.
//
// One line per case (PASS/FAIL, opcode, dtype, sizes, the largest relative
// error); a summary; exit 0 when all pass, 1 on any failure, 77 (skipped)
// when the device under test cannot be created. `--device cpu` compares the
// CPU with itself: every case is a valid executable and the harness runs.
// `--self-test` runs the harness against a broken device (the CPU device
// that skips softmax, perturbs sum_squares' result by 1e-3 and stores a
// byte past gelu_grad's) and exits 0 iff exactly those cases fail. Arena bytes
// no kernel writes must be unchanged after the steps (runOnce): a store out
// of its result's bounds fails the case. The collectives and transfers need
// ranks: runtime.Nccl and the ranks tests check them. Attention runs on the
// CUDA device's own kernels unless TPCRT_CUDA_ATTENTION says otherwise
// (=cudnn: cuDNN where it takes the case).
//
//===----------------------------------------------------------------------===//

#include "DeviceCheckCases.h"
#include "ForwardingDevice.h"
#include "tpcrt/CommandLine.h"
#include "tpcrt/CpuKernels.h"
#include "tpcrt/CudaBackend.h"
#include "tpcrt/Device.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/KernelTable.h"
#include "tpcrt/Random.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace tpcrt;
using namespace tpcrt::devicecheck;

namespace {

constexpr int kExitSkipped = 77;
/// Norm-wise relative tolerances (docs/testing/tolerances.md): f32 within
/// float32 rounding of the CPU's chains; 16-bit storage within one rounding
/// of it; TF32 GEMMs within TF32's 10-bit mantissa.
constexpr double kF32Tolerance = 1e-5;
constexpr double kHalfTolerance = 1e-2;
constexpr double kTf32Tolerance = 1e-2;

/// The broken device of --self-test: skips one opcode's kernel (its results
/// keep their poison), scales another's first result by 1 + 1e-3 and has a
/// third store one byte past its first result.
constexpr Op kSkippedOp = Op::Softmax;
constexpr Op kPerturbedOp = Op::SumSquares;
constexpr double kPerturbation = 1e-3;
constexpr Op kOverrunOp = Op::GeluGrad;

struct Options {
  std::string device = "cuda";
  std::string op;
  std::string dtype = "all";
  uint64_t seed = 1;
  std::string results;
  bool selfTest = false;
  /// --self-test's second pass: the broken device skips every kernel.
  bool skipAll = false;
  bool tf32 = false;
};

cpu::FloatType floatTypeOf(DT dtype) {
  return dtype == DT::BF16  ? cpu::FloatType::BF16
         : dtype == DT::F16 ? cpu::FloatType::F16
                            : cpu::FloatType::F32;
}

/// A CPU device that runs every kernel but kSkippedOp (with `skipAll`:
/// none), perturbs kPerturbedOp's first result and changes the byte after
/// kOverrunOp's: what the harness must catch.
class BrokenDevice final : public test::ForwardingDevice {
public:
  BrokenDevice(std::unique_ptr<Device> inner, bool skipAll)
      : ForwardingDevice(std::move(inner)), skipAll_(skipAll) {}

  const char *name() const override { return "broken-cpu"; }

  Status execute(const KernelCall &call, const StepContext &context) override {
    if (skipAll_ || call.op == kSkippedOp)
      return Status::ok();
    if (Status s = inner().execute(call, context); !s)
      return s;
    if (call.op == kOverrunOp)
      return overrun(call.results[0]);
    return call.op == kPerturbedOp ? perturb(call.results[0]) : Status::ok();
  }

private:
  /// Flips the byte just past `t` (where there is one).
  Status overrun(const TensorRef &t) {
    uint64_t at = t.offset + t.bytes;
    if (at >= inner().arenaBytes())
      return Status::ok();
    uint8_t byte = 0;
    if (Status s = inner().copyFromArena(at, &byte, 1); !s)
      return s;
    byte ^= 0x5a;
    return inner().copyToArena(at, &byte, 1);
  }

  Status perturb(const TensorRef &t) {
    if (!isFloatDType(t.dtype))
      return Status::error("perturb: not a float result");
    std::vector<uint8_t> bytes(t.bytes);
    std::vector<float> values(static_cast<size_t>(t.elements));
    if (Status s = inner().copyFromArena(t.offset, bytes.data(), t.bytes); !s)
      return s;
    cpu::FloatType type = floatTypeOf(t.dtype);
    if (Status s = cpu::cast(bytes.data(), type, t.elements,
                             cpu::FloatType::F32, values.data());
        !s)
      return s;
    for (float &v : values)
      v *= static_cast<float>(1.0 + kPerturbation);
    if (Status s = cpu::cast(values.data(), cpu::FloatType::F32, t.elements,
                             type, bytes.data());
        !s)
      return s;
    return inner().copyToArena(t.offset, bytes.data(), t.bytes);
  }

  bool skipAll_;
};

/// A fresh device under test.
Status makeDevice(const Options &o, std::unique_ptr<Device> &device) {
  if (o.selfTest) {
    device = std::make_unique<BrokenDevice>(createCpuDevice(), o.skipAll);
    return Status::ok();
  }
  if (o.device == "cpu") {
    device = createCpuDevice();
    return Status::ok();
  }
  CudaDeviceOptions options;
  options.allowTf32 = o.tf32;
  return createCudaDevice(options, device);
}

int64_t elementsOf(const fb::BufferT &buffer) {
  int64_t n = 1;
  for (int64_t d : buffer.shape)
    n *= d;
  return n;
}

std::string bufferText(const fb::BufferT &buffer) {
  return std::string(executableDTypeName(buffer.dtype)) +
         shapeText(buffer.shape);
}

/// The bytes `fill` makes for `buffer`, from stream `key`.
Status fillBytes(const fb::BufferT &buffer, const Fill &fill, uint64_t key,
                 std::vector<uint8_t> &bytes) {
  auto n = static_cast<size_t>(elementsOf(buffer));
  using Kind = Fill::Kind;
  const uint64_t second = splitmix64(key ^ kSplitMix64Gamma);
  if (buffer.dtype == DT::I64) {
    if (fill.kind != Kind::Ids && fill.kind != Kind::Labels &&
        fill.kind != Kind::Int)
      return Status::error("an i64 buffer needs ids, labels or a value");
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) {
      if (fill.kind == Kind::Int)
        v[i] = fill.value;
      else if (fill.kind == Kind::Labels &&
               uniformOpenClosed(second, i) <= fill.ignored)
        v[i] = kIgnore;
      else
        v[i] = uniformBelow(key, i, static_cast<uint64_t>(fill.bound));
    }
    bytes.resize(n * sizeof(int64_t));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return Status::ok();
  }
  if (buffer.dtype == DT::U8) {
    if (fill.kind != Kind::Mask)
      return Status::error("a u8 buffer needs a mask");
    bytes.resize(n);
    for (size_t i = 0; i < n; ++i)
      bytes[i] = uniformOpenClosed(key, i) <= 0.9 ? 1 : 0;
    return Status::ok();
  }
  if (!isFloatDType(buffer.dtype))
    return Status::error("no fill for " + bufferText(buffer));
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (fill.kind) {
    case Kind::Normal:
      v[i] = static_cast<float>(fill.scale * standardNormal(key, i));
      break;
    case Kind::Wide:
      v[i] = static_cast<float>(
          standardNormal(key, i) *
          std::pow(10.0, -6.0 + 10.0 * uniformOpenClosed(second, i)));
      break;
    case Kind::Positive:
      v[i] = static_cast<float>(fill.scale * (0.5 + uniformOpenClosed(key, i)));
      break;
    case Kind::Real:
      v[i] = static_cast<float>(fill.real);
      break;
    default:
      return Status::error("a float buffer needs a float fill");
    }
  }
  bytes.resize(n * executableDTypeSize(buffer.dtype));
  return cpu::cast(v.data(), cpu::FloatType::F32, static_cast<int64_t>(n),
                   floatTypeOf(buffer.dtype), bytes.data());
}

using Bytes = std::vector<std::vector<uint8_t>>;

/// The first arena byte that differs between `before` and `after` and that
/// no kernel of `program` writes (results, pooled slots and all), nor the
/// interpreter (the inputs it fills itself, isRuntimeInput: the step): a
/// store out of its result's bounds. Empty when none.
std::string strayStore(const Program &program,
                       const std::vector<uint8_t> &before,
                       const std::vector<uint8_t> &after) {
  std::vector<bool> written(before.size(), false);
  auto mark = [&](const TensorRef &r) {
    uint64_t span = r.bytes + uint64_t(r.poolSlots - 1) * r.poolStride;
    for (uint64_t b = r.offset; b < r.offset + span && b < written.size(); ++b)
      written[b] = true;
  };
  for (const KernelCall &call : program.calls)
    for (const TensorRef &r : call.results)
      mark(r);
  for (const BindingRef &input : program.inputs)
    if (isRuntimeInput(input.name))
      mark(program.buffers[input.buffer]);
  for (size_t b = 0; b < before.size(); ++b) {
    if (written[b] || before[b] == after[b])
      continue;
    std::string where = "between buffers";
    for (size_t i = 0; i < program.buffers.size(); ++i) {
      const TensorRef &t = program.buffers[i];
      if (b >= t.offset && b < t.offset + t.bytes)
        where = "in buffer " + std::to_string(i) + ", which no kernel writes";
    }
    return "arena byte " + std::to_string(b) + " (" + where +
           ") changed: a store out of its result's bounds";
  }
  return {};
}

/// One run of `c` on `device`: sources written, results poisoned, the
/// steps run, the compared buffers read back. Arena bytes that no kernel
/// writes must come out as they went in.
Status runOnce(const Case &c, const LoadedExecutable &exe,
               std::unique_ptr<Device> device, const Bytes &sources,
               Bytes &results) {
  Interpreter interpreter;
  if (Status s =
          Interpreter::create(exe.executable(), std::move(device), interpreter);
      !s)
    return s;
  for (size_t i = 0; i < c.sources.size(); ++i)
    if (Status s = interpreter.writeBuffer(
            c.sources[i].first, sources[i].data(), sources[i].size());
        !s)
      return s;
  results.assign(c.compared.size(), {});
  for (size_t i = 0; i < c.compared.size(); ++i) {
    uint64_t bytes = interpreter.program().buffers[c.compared[i]].bytes;
    results[i].assign(bytes, 0xFF);
    if (c.poisoned[i])
      if (Status s =
              interpreter.writeBuffer(c.compared[i], results[i].data(), bytes);
          !s)
        return s;
  }
  const Program &program = interpreter.program();
  std::vector<uint8_t> before(program.arenaBytes), after(program.arenaBytes);
  if (Status s =
          interpreter.device().copyFromArena(0, before.data(), before.size());
      !s)
    return s;
  for (int step = 0; step < c.steps; ++step)
    if (Status s = interpreter.runStep(); !s)
      return s;
  if (Status s =
          interpreter.device().copyFromArena(0, after.data(), after.size());
      !s)
    return s;
  if (std::string stray = strayStore(program, before, after); !stray.empty())
    return Status::error(stray);
  for (size_t i = 0; i < c.compared.size(); ++i)
    if (Status s = interpreter.readBuffer(c.compared[i], results[i].data(),
                                          results[i].size());
        !s)
      return s;
  return Status::ok();
}

/// The verdict on one case.
struct Verdict {
  bool pass = true;
  /// The largest norm-wise relative error over the compared buffers.
  double error = 0.0;
  /// The loosest tolerance applied (0: bit for bit only).
  double tolerance = 0.0;
  std::string why;

  void fail(const std::string &reason) {
    if (pass)
      why = reason;
    pass = false;
  }
};

/// `got` (the device under test) against `want` (the CPU) for one buffer.
void compareBuffer(const Case &c, size_t index, const fb::BufferT &buffer,
                   const std::vector<uint8_t> &got,
                   const std::vector<uint8_t> &want, bool tf32, Verdict &v) {
  std::string what =
      "result " + std::to_string(index) + " " + bufferText(buffer);
  bool isFloat = isFloatDType(buffer.dtype);
  bool exact = c.exact || !isFloat;
  if (exact && got != want) {
    size_t width = executableDTypeSize(buffer.dtype), first = 0, differ = 0;
    for (size_t i = 0; i * width < got.size(); ++i)
      if (std::memcmp(got.data() + i * width, want.data() + i * width, width)) {
        if (!differ++)
          first = i;
      }
    v.fail(what + ": " + std::to_string(differ) +
           " elements differ bit for bit, the first at " +
           std::to_string(first));
    if (!isFloat)
      v.error = std::max(v.error, 1.0);
  }
  if (!isFloat)
    return;
  double tolerance = buffer.dtype != DT::F32 ? kHalfTolerance
                     : c.gemm && tf32        ? kTf32Tolerance
                                             : kF32Tolerance;
  if (!exact)
    v.tolerance = std::max(v.tolerance, tolerance);
  int64_t n = elementsOf(buffer);
  std::vector<float> g(static_cast<size_t>(n)), w(static_cast<size_t>(n));
  cpu::FloatType type = floatTypeOf(buffer.dtype);
  if (!cpu::cast(got.data(), type, n, cpu::FloatType::F32, g.data()) ||
      !cpu::cast(want.data(), type, n, cpu::FloatType::F32, w.data())) {
    v.fail(what + ": cannot convert");
    return;
  }
  double diff = 0.0, norm = 0.0;
  int64_t badReference = 0, newNaN = 0, firstNaN = -1;
  for (int64_t i = 0; i < n; ++i) {
    double a = g[i], b = w[i];
    if (!std::isfinite(b))
      ++badReference;
    if (std::isnan(a) && !std::isnan(b) && !newNaN++)
      firstNaN = i;
    if (std::isnan(a) && std::isnan(b))
      continue;
    diff += (a - b) * (a - b);
    norm += b * b;
  }
  double error = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
  if (std::isnan(error))
    error = INFINITY;
  v.error = std::max(v.error, error);
  char text[64];
  if (badReference)
    v.fail(what + ": the CPU's result has " + std::to_string(badReference) +
           " values that are not finite (a broken case)");
  if (newNaN)
    v.fail(what + ": " + std::to_string(newNaN) +
           " NaN where the CPU has none (unwritten?), the first at " +
           std::to_string(firstNaN));
  if (!exact && !(error <= tolerance)) {
    std::snprintf(text, sizeof(text), "relative error %.3e > %.0e", error,
                  tolerance);
    v.fail(what + ": " + text);
  }
}

/// Runs one case: the CPU reference, the device under test twice.
/// `c` loaded (the loader checks it) and its sources filled from the seed.
Status loadCase(const Case &c, const Options &o, LoadedExecutable &exe,
                Bytes &sources) {
  std::vector<uint8_t> image = test::fileImage(c.exe);
  if (Status s =
          loadExecutableFromBytes(c.title(), image.data(), image.size(), exe);
      !s)
    return s;
  sources.assign(c.sources.size(), {});
  for (size_t i = 0; i < c.sources.size(); ++i) {
    uint32_t id = c.sources[i].first;
    uint64_t key = namedStreamKey(o.seed, c.title() + "#" + std::to_string(id));
    if (Status s =
            fillBytes(*c.exe.buffers[id], c.sources[i].second, key, sources[i]);
        !s)
      return s.withContext("buffer " + std::to_string(id));
  }
  return Status::ok();
}

Verdict checkCase(const Case &c, const Options &o) {
  Verdict v;
  LoadedExecutable exe;
  Bytes sources;
  if (Status s = loadCase(c, o, exe, sources); !s) {
    v.fail("invalid case: " + s.message());
    return v;
  }
  Bytes want, got, again;
  if (Status s = runOnce(c, exe, createCpuDevice(), sources, want); !s) {
    v.fail("on the CPU: " + s.message());
    return v;
  }
  for (Bytes *out : {&got, &again}) {
    std::unique_ptr<Device> device;
    Status s = makeDevice(o, device);
    if (s)
      s = runOnce(c, exe, std::move(device), sources, *out);
    if (!s) {
      v.fail("on the device: " + s.message());
      return v;
    }
  }
  for (size_t i = 0; i < c.compared.size(); ++i)
    compareBuffer(c, i, *c.exe.buffers[c.compared[i]], got[i], want[i], o.tf32,
                  v);
  for (size_t i = 0; i < c.compared.size(); ++i)
    if (got[i] != again[i]) {
      v.fail("result " + std::to_string(i) +
             " differs between two runs on the device (nondeterministic)");
      break;
    }
  return v;
}

/// Bad data: `c` (an embedding or cross-entropy case) with its ids or labels
/// element 3 set outside the vocabulary must fail on the device as on the
/// CPU, naming the value and the position ("... 999999 at position 3 is
/// outside [0, "). Empty when it did, else why not.
std::string checkRefusal(const Case &c, const Options &o) {
  LoadedExecutable exe;
  Bytes sources;
  if (Status s = loadCase(c, o, exe, sources); !s)
    return "invalid case: " + s.message();
  bool corrupted = false;
  for (size_t i = 0; i < c.sources.size(); ++i) {
    const fb::BufferT &buffer = *c.exe.buffers[c.sources[i].first];
    if (buffer.dtype == DT::I64 && !corrupted &&
        sources[i].size() >= 4 * sizeof(int64_t)) {
      int64_t bad = 999999;
      std::memcpy(sources[i].data() + 3 * sizeof(int64_t), &bad, sizeof(bad));
      corrupted = true;
    }
  }
  if (!corrupted)
    return "the case has no ids";
  const std::string want = " 999999 at position 3 is outside [0, ";
  Bytes results;
  Status cpu = runOnce(c, exe, createCpuDevice(), sources, results);
  if (cpu || cpu.message().find(want) == std::string::npos)
    return "the CPU did not refuse it as expected: " +
           (cpu ? std::string("no error") : cpu.message());
  std::unique_ptr<Device> device;
  Status s = makeDevice(o, device);
  if (s)
    s = runOnce(c, exe, std::move(device), sources, results);
  if (s)
    return "the device ran it without an error (the CPU: " + cpu.message() +
           ")";
  if (s.message().find(want) == std::string::npos)
    return "the device's error does not name the value and position: " +
           s.message();
  return {};
}

/// Writes a line to stdout and, with --results, to the file (flushed).
struct Output {
  FILE *file = nullptr;
  void line(const std::string &text) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    if (file) {
      std::fprintf(file, "%s\n", text.c_str());
      std::fflush(file);
    }
  }
};

std::string caseLine(const Case &c, const Verdict &v, const char *note) {
  char head[160];
  char tolerance[16];
  if (v.tolerance > 0)
    std::snprintf(tolerance, sizeof(tolerance), "%.0e", v.tolerance);
  else
    std::snprintf(tolerance, sizeof(tolerance), "exact");
  std::snprintf(head, sizeof(head), "%s %-22s %-9s err %9.3e tol %-5s  ",
                v.pass ? "PASS" : "FAIL", c.opName().c_str(), c.dtype.c_str(),
                v.error, tolerance);
  std::string text = head + c.sizes;
  if (!v.why.empty())
    text += "  [" + v.why + "]";
  return text + note;
}

/// Every opcode of Kernels.def.
std::vector<Op> allOpcodes() {
  return {
#define TPCX_KERNEL(Name, ...) Op::Name,
#include "tpcrt/Kernels.def"
  };
}

/// Whether `op` needs ranks (a collective, a transfer, a group's block).
bool needsRanks(Op op) {
  KernelKind kind = kernelInfo(op)->kind;
  return kind == KernelKind::Communicates || kind == KernelKind::Local;
}

Status parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return Status::error(arg + " needs a value");
      out = argv[++i];
      return Status::ok();
    };
    Status s;
    std::string text;
    if (arg == "--device") {
      s = value(o.device);
      if (s && o.device != "cpu" && o.device != "cuda")
        s = Status::error("--device: '" + o.device + "' is not cpu or cuda");
    } else if (arg == "--op") {
      s = value(o.op);
    } else if (arg == "--dtype") {
      s = value(o.dtype);
      if (s && o.dtype != "f32" && o.dtype != "bf16" && o.dtype != "all")
        s = Status::error("--dtype: '" + o.dtype + "' is not f32, bf16 or all");
    } else if (arg == "--seed") {
      s = value(text);
      if (s)
        s = parseUnsigned("--seed", text, o.seed);
    } else if (arg == "--results") {
      s = value(o.results);
    } else if (arg == "--self-test") {
      o.selfTest = true;
    } else if (arg == "--tf32") {
      o.tf32 = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: tpcrt-device-check [--device cuda|cpu] [--op NAME]\n"
          "         [--dtype f32|bf16|all] [--seed N] [--results FILE]\n"
          "         [--tf32] [--self-test]\n"
          "Runs every single-rank opcode's cases on the device and on the "
          "CPU and\ncompares them (fp32 1e-5, bf16 1e-2 norm-wise; masks, "
          "copies, layouts bit\nfor bit; two device runs bit for bit; arena "
          "bytes no kernel writes unchanged;\nbad ids refused naming the "
          "value). Exit 0 all pass, 1 a failure, 77 no device.\n"
          "  --device D     the device under test (default cuda; cpu: the "
          "CPU against itself)\n"
          "  --op NAME      only that opcode's cases\n"
          "  --dtype T      only the cases of that float storage (default "
          "all)\n"
          "  --seed N       the inputs' seed (default 1)\n"
          "  --results FILE also write the lines to FILE\n"
          "  --tf32         allow TF32 GEMMs (their f32 bound 1e-2)\n"
          "  --self-test    against a broken CPU device: exactly its cases "
          "must fail\n"
          "Environment: TPCRT_CUDA_BACKEND (the backend library for cuda, "
          "e.g. the\nemulated one), TPCRT_EMULATION_SCHEDULE (its thread "
          "order: docs/runtime/cuda.md).\n");
      std::exit(0);
    } else {
      s = Status::error("unknown argument '" + arg + "' (see --help)");
    }
    if (!s)
      return s;
  }
  return Status::ok();
}

bool selected(const Case &c, const Options &o) {
  return (o.op.empty() || c.opName() == o.op) &&
         (o.dtype == "all" || o.dtype == dtypeName(c.storage));
}

/// --self-test's second pass: with every kernel skipped, every case must
/// fail (each compares something its kernels write). Returns the cases
/// that passed anyway.
int uncaughtWhenSkipped(const std::vector<Case> &cases, Options o,
                        Output &out) {
  o.skipAll = true;
  int uncaught = 0;
  for (const Case &c : cases)
    if (selected(c, o)) {
      Verdict v = checkCase(c, o);
      if (v.pass) {
        out.line(caseLine(c, v, "  <- passes with its kernels skipped"));
        ++uncaught;
      }
    }
  return uncaught;
}

int runChecks(const Options &o, Output &out) {
  std::string device = o.selfTest ? "broken-cpu" : o.device;
  out.line("tpcrt-device-check: " + device + " against cpu, seed " +
           std::to_string(o.seed) + ", dtype " + o.dtype +
           (o.tf32 ? ", tf32" : "") +
           (o.selfTest
                ? std::string(" (self-test: skips ") + opCodeName(kSkippedOp) +
                      ", perturbs " + opCodeName(kPerturbedOp) +
                      " by 1e-3, stores past " + opCodeName(kOverrunOp) + ")"
                : ""));

  // A device that cannot be made skips the whole check.
  {
    std::unique_ptr<Device> probe;
    if (Status s = makeDevice(o, probe); !s) {
      out.line("SKIPPED: no CUDA device: " + s.message());
      return kExitSkipped;
    }
  }

  std::vector<Case> cases = makeCases();
  // Every single-rank opcode has a case; the others need ranks.
  std::set<Op> covered;
  for (const Case &c : cases)
    covered.insert(c.op);
  std::string ranked, missing;
  for (Op op : allOpcodes()) {
    if (needsRanks(op))
      ranked += std::string(ranked.empty() ? "" : ", ") + opCodeName(op);
    else if (!covered.count(op))
      missing += std::string(missing.empty() ? "" : ", ") + opCodeName(op);
  }
  if (!o.op.empty()) {
    bool known = false;
    for (Op op : allOpcodes())
      known |= o.op == opCodeName(op);
    if (!known) {
      out.line("error: --op: '" + o.op + "' is not an opcode of Kernels.def");
      return 1;
    }
    for (Op op : allOpcodes())
      if (o.op == opCodeName(op) && needsRanks(op)) {
        out.line("SKIPPED: " + o.op +
                 " needs ranks: not covered here (runtime.Nccl / ranks "
                 "tests)");
        return kExitSkipped;
      }
  }

  auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0, unexpected = 0, skipCaught = 0, skipCases = 0,
      perturbCaught = 0, perturbCases = 0, overrunCaught = 0, overrunCases = 0;
  for (const Case &c : cases) {
    if (!selected(c, o))
      continue;
    Verdict v = checkCase(c, o);
    bool expectFail =
        o.selfTest &&
        (c.op == kSkippedOp || c.op == kPerturbedOp || c.op == kOverrunOp);
    const char *note = "";
    if (o.selfTest && expectFail)
      note = v.pass ? "  <- NOT caught" : "  (expected: broken device)";
    else if (o.selfTest && !v.pass)
      note = "  <- unexpected";
    out.line(caseLine(c, v, note));
    (v.pass ? passed : failed)++;
    if (v.pass == expectFail)
      ++unexpected;
    if (c.op == kSkippedOp) {
      ++skipCases;
      skipCaught += !v.pass;
    }
    if (c.op == kPerturbedOp) {
      ++perturbCases;
      perturbCaught += !v.pass;
    }
    if (c.op == kOverrunOp) {
      ++overrunCases;
      overrunCaught += !v.pass;
    }
  }
  // Bad ids and labels are refused with the CPU's words (not in the
  // self-test: the broken device is the CPU's, which refuses them anyway).
  if (!o.selfTest)
    for (const Case &c : cases) {
      bool refuses = c.op == Op::Embedding || c.op == Op::EmbeddingGrad ||
                     c.op == Op::CrossEntropy || c.op == Op::CrossEntropyGrad;
      if (!refuses || c.storage != DT::F32 || !selected(c, o))
        continue;
      std::string why = checkRefusal(c, o);
      out.line((why.empty() ? "PASS refusal " : "FAIL refusal ") + c.title() +
               (why.empty() ? ": id 999999 at position 3 refused"
                            : ": " + why));
      (why.empty() ? passed : failed)++;
    }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int total = passed + failed;
  out.line("not covered here (runtime.Nccl / ranks tests): " + ranked);
  if (!missing.empty())
    out.line("error: single-rank opcodes without a case: " + missing);
  char text[256];
  std::snprintf(text, sizeof(text),
                "summary: %s against cpu: %d cases, %d passed, %d failed "
                "(%.1f s)",
                device.c_str(), total, passed, failed, seconds);
  out.line(text);
  int code;
  if (total == 0) {
    out.line("error: no case matched --op/--dtype: nothing was checked");
    code = 1;
  } else if (o.selfTest) {
    int uncaught = uncaughtWhenSkipped(cases, o, out);
    bool ok = unexpected == 0 && skipCases > 0 && perturbCases > 0 &&
              overrunCases > 0 && uncaught == 0;
    std::snprintf(text, sizeof(text),
                  "self-test: caught %d/%d skipped %s, %d/%d perturbed %s, "
                  "%d/%d overrunning %s, %d unexpected verdicts; with every "
                  "kernel skipped %d/%d cases fail: %s",
                  skipCaught, skipCases, opCodeName(kSkippedOp), perturbCaught,
                  perturbCases, opCodeName(kPerturbedOp), overrunCaught,
                  overrunCases, opCodeName(kOverrunOp), unexpected,
                  total - uncaught, total, ok ? "OK" : "FAILED");
    out.line(text);
    code = ok && missing.empty() ? 0 : 1;
  } else {
    code = failed == 0 && missing.empty() ? 0 : 1;
  }
  return code;
}

int run(const Options &o) {
  Output out;
  if (!o.results.empty()) {
    out.file = std::fopen(o.results.c_str(), "w");
    if (!out.file) {
      std::fprintf(stderr, "error: cannot write %s: %s\n", o.results.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  int code = runChecks(o, out);
  if (out.file)
    std::fclose(out.file);
  return code;
}
} // namespace

int main(int argc, char **argv) {
  // The own attention kernels unless the environment names others: the
  // CUDA device's default (auto) races cuDNN against them at every prepare,
  // and the two runs of a case could then run different kernels.
  setenv("TPCRT_CUDA_ATTENTION", "own", /*overwrite=*/0);
  Options o;
  if (Status s = parseOptions(argc, argv, o); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  int code = 1;
  Status s = guarded([&] {
    code = run(o);
    return Status::ok();
  });
  if (!s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return code;
}
