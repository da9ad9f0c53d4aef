//===- tpc-cuda-bench.cpp - time single kernels on the GPU ----------------===//
//
// tpc-cuda-bench [--iters N] [--warmup W] [--device cuda|cpu] CASE...
//
// Each CASE is an executable of one kernel, repeated, built in memory and
// run through the interpreter (Interpreter::runStep), its operands filled
// with random bf16 values once:
//
//   gemm:M,K,N[,in_out|out_in]   a bf16 `linear` [M, K] x weight -> [M, N]
//                                (in_out: weight [K, N], torch.matmul's
//                                A @ B, the default; out_in: [N, K],
//                                F.linear's A @ W^T); 2·M·N·K FLOPs
//   attn:B,H,S,D[,KV][,causal|full][,dropout]
//                                a bf16 `attention` forward, q [B, H, S, D],
//                                k and v [B, KV, S, D] (KV = H unless
//                                given), scale 1/sqrt(D), no dropout
//                                (`dropout`: 0.1, the MFU model's);
//                                FlashAttention's count 4·B·H·S²·D, halved
//                                when causal (the default)
//   attn_grad:B,H,S,D[,KV][,causal|full][,dropout][,recompute]
//                                the same shapes' bf16 `attention_grad`
//                                as tpc-autodiff emits it (dO, q, k, v and
//                                the forward's output and f32 log-sum-exps
//                                -> dq, dk, dv); with `recompute` without
//                                the last two (it reruns the forward for
//                                the statistics); FlashAttention's count
//                                for the backward, 2.5 times the forward's
//
// The executable runs its kernel W + N times back to back in one step
// (W warm-up runs, default 3; N timed, default 20), each run timed by the
// device's events as tpc-run --trace times kernels (Device::markRuns: no
// run waits for the host, as torch's CUDA events time its calls; until
// 2026-12-07 each run was a step of its own, timed with the host's clock
// around the step's synchronize, which charged a GEMM tens of microseconds
// that torch's timing does not see). It prints one JSON line per case: the
// mean and the fastest run in milliseconds, TFLOP/s from the mean and how
// the runs were timed ("timing": on the CPU device a synchronize after each)
// (benchmarks/cuda/gemm_attention_torch.py prints the same keys for torch).
// Attention runs on the device's own kernels ("tool": "tpc"; the bench sets
// TPCRT_CUDA_ATTENTION=own where it is unset). With =cudnn in the
// environment the device runs it through cuDNN's fused attention ("tpc-cudnn");
// with =auto through the faster of the two as measured at prepare
// ("tpc-auto", the device says which on stderr); with =mma a Hopper device
// runs the mma.sync kernels instead of the wgmma ones ("tpc-mma").
// GEMMs run cuBLASLt's heuristic's first algorithm ("tpc"); with
// TPCRT_CUDA_GEMM_ALGO=N its N-th ("tpc-algoN"), to see what the others
// reach on the same shapes.
//
// Without a CUDA device (no backend library, driver or GPU) it prints why and
// exits 77, as the tests' skip status. --device cpu runs the same cases on
// the CPU device (a check of the executables on small shapes). Errors are
// "error: ..." on stderr and exit status 1; a case that fails does not stop
// the next.
//
//===----------------------------------------------------------------------===//

#include "AttentionChoice.h"
#include "TestExecutables.h"

#include "tpcrt/CommandLine.h"
#include "tpcrt/CudaBackend.h"
#include "tpcrt/Device.h"
#include "tpcrt/Devices.h"
#include "tpcrt/Executable.h"
#include "tpcrt/Interpreter.h"
#include "tpcrt/Random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace tpcrt;

namespace {

constexpr int kSkipped = 77;

const char kUsage[] =
    "usage: tpc-cuda-bench [--iters N] [--warmup W] [--device cuda|cpu] "
    "CASE...\n"
    "  gemm:M,K,N[,in_out|out_in]\n"
    "  attn:B,H,S,D[,KV][,causal|full][,dropout]\n"
    "  attn_grad:B,H,S,D[,KV][,causal|full][,dropout][,recompute]\n"
    "Runs each case's kernel W (default 3) + N (default 20) times back to "
    "back, times the last N by the device's events; prints a JSON line per "
    "case.\n"
    "TPCRT_CUDA_ATTENTION=own (unset: own here)|auto|cudnn|mma|generic picks "
    "the attention kernels\n";

struct Case {
  std::string text;
  bool gemm = true;
  // attention: attention_grad instead of the forward; without the
  // forward's output and log-sum-exps
  bool grad = false, recompute = false;
  // gemm
  int64_t m = 0, k = 0, n = 0;
  bool outIn = false;
  // attention
  int64_t batch = 0, heads = 0, seq = 0, dim = 0, kvHeads = 0;
  bool causal = true;
  /// The attention dropout rate (`dropout`: kBenchDropout).
  double dropout = 0.0;
};

/// Splits "a,b,c" at commas.
std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t comma = text.find(',', begin);
    parts.push_back(text.substr(begin, comma - begin));
    if (comma == std::string::npos)
      return parts;
    begin = comma + 1;
  }
}

Status parseSize(const std::string &what, const std::string &text,
                 int64_t &out) {
  uint64_t value = 0;
  if (!parseDecimal(text, value) || value == 0 || value > (1ull << 31))
    return Status::error(what + ": '" + text +
                         "' is not a size in [1, 2^31]");
  out = static_cast<int64_t>(value);
  return Status::ok();
}

/// An attention case's dropout rate with `dropout`: the MFU model's
/// attn_pdrop (GPT-2's 0.1).
constexpr double kBenchDropout = 0.1;

Status parseCase(const std::string &text, Case &c) {
  c.text = text;
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    return Status::error("case '" + text +
                         "': expected gemm:..., attn:... or attn_grad:...");
  std::string kind = text.substr(0, colon);
  std::vector<std::string> parts = splitCommas(text.substr(colon + 1));
  if (kind == "gemm") {
    c.gemm = true;
    if (parts.size() < 3 || parts.size() > 4)
      return Status::error("case '" + text + "': gemm:M,K,N[,layout]");
    for (auto [i, field] :
         {std::pair<int, int64_t *>{0, &c.m}, {1, &c.k}, {2, &c.n}})
      if (Status s = parseSize("case '" + text + "'", parts[i], *field); !s)
        return s;
    if (parts.size() == 4) {
      if (parts[3] != "in_out" && parts[3] != "out_in")
        return Status::error("case '" + text +
                             "': layout is in_out or out_in");
      c.outIn = parts[3] == "out_in";
    }
    return Status::ok();
  }
  if (kind != "attn" && kind != "attn_grad")
    return Status::error("case '" + text +
                         "': expected gemm:..., attn:... or attn_grad:...");
  c.gemm = false;
  c.grad = kind == "attn_grad";
  // The options after the sizes, in any order.
  while (!parts.empty()) {
    const std::string &last = parts.back();
    if (c.grad && last == "recompute")
      c.recompute = true;
    else if (last == "causal" || last == "full")
      c.causal = last == "causal";
    else if (last == "dropout")
      c.dropout = kBenchDropout;
    else
      break;
    parts.pop_back();
  }
  if (parts.size() < 4 || parts.size() > 5)
    return Status::error("case '" + text + "': " + kind +
                         ":B,H,S,D[,KV][,causal|full][,dropout]" +
                         (c.grad ? "[,recompute]" : ""));
  for (auto [i, field] : {std::pair<int, int64_t *>{0, &c.batch},
                          {1, &c.heads},
                          {2, &c.seq},
                          {3, &c.dim}})
    if (Status s = parseSize("case '" + text + "'", parts[i], *field); !s)
      return s;
  c.kvHeads = c.heads;
  if (parts.size() == 5)
    if (Status s = parseSize("case '" + text + "'", parts[4], c.kvHeads); !s)
      return s;
  if (c.heads % c.kvHeads != 0)
    return Status::error("case '" + text + "': H must be a multiple of KV");
  return Status::ok();
}

double flopsOf(const Case &c) {
  if (c.gemm)
    return 2.0 * c.m * c.n * c.k;
  double full = 4.0 * c.batch * c.heads * double(c.seq) * c.seq * c.dim;
  double forward = c.causal ? full / 2 : full;
  return c.grad ? 2.5 * forward : forward;
}

/// The executable of `c`: its kernel `runs` times over the same buffers,
/// one after the other in one step; its bf16 operands in `operands`, an
/// attention_grad's log-sum-exps (f32) in `lse`.
fb::ExecutableT buildCase(const Case &c, int runs,
                          std::vector<uint32_t> &operands, uint32_t &lse) {
  test::ExecutableBuilder b;
  using fb::DType;
  auto input = [&](const std::string &name, std::vector<int64_t> shape) {
    uint32_t id = b.buffer(DType::BF16, std::move(shape));
    b.exe.inputs.push_back(test::makeBinding(name, id));
    operands.push_back(id);
    return id;
  };
  if (c.gemm) {
    uint32_t x = input("x", {c.m, c.k});
    uint32_t w = c.outIn ? input("w", {c.n, c.k}) : input("w", {c.k, c.n});
    uint32_t y = b.buffer(DType::BF16, {c.m, c.n});
    for (int run = 0; run < runs; ++run)
      b.kernel(fb::OpCode::Linear, {x, w}, {y}, {}, {}, c.outIn ? 1 : 0);
    b.output("y", y);
  } else {
    uint32_t q = input("q", {c.batch, c.heads, c.seq, c.dim});
    uint32_t k = input("k", {c.batch, c.kvHeads, c.seq, c.dim});
    uint32_t v = input("v", {c.batch, c.kvHeads, c.seq, c.dim});
    // int_attrs [dropout stream]; float_attrs [scale, dropout rate].
    const std::vector<int64_t> ints = {0};
    const std::vector<double> floats = {1.0 / std::sqrt(double(c.dim)),
                                        c.dropout};
    if (c.grad) {
      uint32_t dO = input("dO", {c.batch, c.heads, c.seq, c.dim});
      uint32_t dq = b.buffer(DType::BF16, {c.batch, c.heads, c.seq, c.dim});
      uint32_t dk = b.buffer(DType::BF16, {c.batch, c.kvHeads, c.seq, c.dim});
      uint32_t dv = b.buffer(DType::BF16, {c.batch, c.kvHeads, c.seq, c.dim});
      std::vector<uint32_t> in = {dO, q, k, v};
      if (!c.recompute) {
        in.push_back(input("o", {c.batch, c.heads, c.seq, c.dim}));
        lse = b.buffer(DType::F32, {c.batch, c.heads, c.seq});
        b.exe.inputs.push_back(test::makeBinding("lse", lse));
        in.push_back(lse);
      }
      for (int run = 0; run < runs; ++run)
        b.kernel(fb::OpCode::AttentionGrad, in, {dq, dk, dv}, ints, floats,
                 c.causal ? 1 : 0);
      b.output("dq", dq);
      b.output("dk", dk);
      b.output("dv", dv);
    } else {
      uint32_t o = b.buffer(DType::BF16, {c.batch, c.heads, c.seq, c.dim});
      for (int run = 0; run < runs; ++run)
        b.kernel(fb::OpCode::Attention, {q, k, v}, {o}, ints, floats,
                 c.causal ? 1 : 0);
      b.output("o", o);
    }
  }
  return b.finish();
}

/// Round to nearest even, as the kernels store bf16.
uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// Uniform values in [-1, 1) from a xorshift stream: random data, not zeros
/// (a GPU multiplies zeros faster: less power, higher clocks).
void fillRandom(std::vector<uint16_t> &data, uint64_t seed) {
  uint64_t state = seed * kSplitMix64Gamma + 1;
  for (uint16_t &x : data) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    float u = static_cast<float>(state >> 40) / float(1u << 24);
    x = toBf16(2.0f * u - 1.0f);
  }
}

struct Timing {
  double meanMs = 0, minMs = 0;
  /// Whether the device's events timed the runs (else a synchronize after
  /// each).
  bool byDevice = false;
};

Status runCase(const Case &c, const std::string &deviceName, int warmup,
               int iters, Timing &timing) {
  std::vector<uint32_t> operands;
  uint32_t lse = UINT32_MAX;
  fb::ExecutableT exe = buildCase(c, warmup + iters, operands, lse);
  std::vector<uint8_t> image = test::fileImage(exe);
  LoadedExecutable loaded;
  if (Status s =
          loadExecutableFromBytes(c.text, image.data(), image.size(), loaded);
      !s)
    return s;
  std::unique_ptr<Device> device;
  if (deviceName == "cpu") {
    device = createCpuDevice();
  } else if (Status s = createCudaDevice(CudaDeviceOptions{}, device); !s) {
    return s;
  }
  Interpreter interpreter;
  if (Status s = Interpreter::create(loaded.executable(), std::move(device),
                                     interpreter);
      !s)
    return s.withContext(c.text);
  const Program &program = interpreter.program();
  uint64_t seed = 1;
  for (uint32_t id : operands) {
    std::vector<uint16_t> data(program.buffers[id].bytes / 2);
    fillRandom(data, seed++);
    if (Status s = interpreter.writeBuffer(id, data.data(), data.size() * 2);
        !s)
      return s.withContext(c.text);
  }
  // About what scores of unit spread over S keys give: e^(s - lse) is a
  // probability's size.
  if (lse != UINT32_MAX) {
    std::vector<float> rows(program.buffers[lse].bytes / 4,
                            std::log(static_cast<float>(c.seq)) + 1.0f);
    if (Status s = interpreter.writeBuffer(lse, rows.data(), rows.size() * 4);
        !s)
      return s.withContext(c.text);
  }
  // One step runs the kernel warmup + iters times back to back; the
  // device's events (Interpreter::setTiming, Device::markRuns) time each
  // run, none waiting for the host, as torch's CUDA events time its calls.
  interpreter.setTiming(true);
  if (Status s = interpreter.runStep(); !s)
    return s.withContext(c.text);
  const std::vector<RunTiming> &runs = interpreter.runTimings();
  if (runs.size() != static_cast<size_t>(warmup + iters))
    return Status::error(c.text + ": " + std::to_string(runs.size()) +
                         " runs timed of " + std::to_string(warmup + iters));
  double total = 0, fastest = 1e300;
  for (size_t run = warmup; run < runs.size(); ++run) {
    double ms = static_cast<double>(runs[run].timing.durationNs) * 1e-6;
    total += ms;
    fastest = std::min(fastest, ms);
  }
  timing.meanMs = total / iters;
  timing.minMs = fastest;
  timing.byDevice = interpreter.timedByDevice();
  return Status::ok();
}

/// "tpc-cudnn" when TPCRT_CUDA_ATTENTION=cudnn has the CUDA device run
/// attention through cuDNN, "tpc-auto" when =auto lets it measure which,
/// "tpc-mma" when =mma keeps a Hopper device's attention on mma.sync (not
/// wgmma), "tpc-generic" for the fp32 FMA kernels, else "tpc".
const char *attentionTool() {
  switch (cuda::attentionChoice()) {
  case cuda::AttentionChoice::Cudnn:
    return "tpc-cudnn";
  case cuda::AttentionChoice::Auto:
    return "tpc-auto";
  case cuda::AttentionChoice::Mma:
    return "tpc-mma";
  case cuda::AttentionChoice::Generic:
    return "tpc-generic";
  case cuda::AttentionChoice::Own:
    break;
  }
  return "tpc";
}

/// "tpc-algoN" when TPCRT_CUDA_GEMM_ALGO=N (N > 0) has the CUDA device run
/// cuBLASLt's heuristic's N-th algorithm instead of its first, else "tpc".
std::string gemmTool() {
  const char *algo = std::getenv("TPCRT_CUDA_GEMM_ALGO");
  if (!algo || !*algo || std::string(algo) == "0")
    return "tpc";
  return std::string("tpc-algo") + algo;
}

void printJson(const Case &c, const std::string &device, int warmup, int iters,
               const Timing &t) {
  double tflops = flopsOf(c) / (t.meanMs * 1e-3) / 1e12;
  if (c.gemm)
    std::printf("{\"tool\": \"%s\", \"kind\": \"gemm\", \"case\": \"%s\", "
                "\"m\": %lld, \"k\": %lld, \"n\": %lld, \"layout\": \"%s\", ",
                gemmTool().c_str(), c.text.c_str(), static_cast<long long>(c.m),
                static_cast<long long>(c.k), static_cast<long long>(c.n),
                c.outIn ? "out_in" : "in_out");
  else
    std::printf(
        "{\"tool\": \"%s\", \"kind\": \"%s\", \"case\": \"%s\", "
        "\"b\": %lld, \"h\": %lld, \"kv\": %lld, \"s\": %lld, "
        "\"d\": %lld, \"causal\": %s, \"dropout\": %g, ",
        attentionTool(), c.grad ? "attn_grad" : "attn", c.text.c_str(),
        static_cast<long long>(c.batch), static_cast<long long>(c.heads),
        static_cast<long long>(c.kvHeads), static_cast<long long>(c.seq),
        static_cast<long long>(c.dim), c.causal ? "true" : "false", c.dropout);
  std::printf("\"dtype\": \"bf16\", \"device\": \"%s\", \"warmup\": %d, "
              "\"iters\": %d, \"timing\": \"%s\", \"flop\": %.6g, "
              "\"ms\": %.6g, \"ms_min\": %.6g, \"tflops\": %.6g}\n",
              device.c_str(), warmup, iters,
              t.byDevice ? "device events, runs back to back"
                         : "synchronized per run",
              flopsOf(c), t.meanMs, t.minMs, tflops);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  // The own kernels unless the environment says otherwise: the device's
  // default (auto) would time whichever won its race under the label "tpc".
  setenv("TPCRT_CUDA_ATTENTION", "own", /*overwrite=*/0);
  uint64_t iters = 20, warmup = 3;
  std::string device = "cuda";
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--iters" || arg == "--warmup" || arg == "--device") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", arg.c_str());
        return 1;
      }
      std::string value = argv[++i];
      if (arg == "--device") {
        if (value != "cuda" && value != "cpu") {
          std::fprintf(stderr, "error: --device is cuda or cpu\n");
          return 1;
        }
        device = value;
        continue;
      }
      uint64_t &field = arg == "--iters" ? iters : warmup;
      if (Status s = parseUnsigned(arg, value, field);
          !s || (arg == "--iters" && field == 0) || field > 100000) {
        std::fprintf(stderr, "error: %s: '%s' is not a count in [%d, 1e5]\n",
                     arg.c_str(), value.c_str(), arg == "--iters" ? 1 : 0);
        return 1;
      }
      continue;
    }
    Case c;
    if (Status s = parseCase(arg, c); !s) {
      std::fprintf(stderr, "error: %s\n%s", s.message().c_str(), kUsage);
      return 1;
    }
    cases.push_back(c);
  }
  if (cases.empty()) {
    std::fprintf(stderr, "error: no case given\n%s", kUsage);
    return 1;
  }
  if (device == "cuda") {
    std::string reason;
    if (cudaDeviceCount(&reason) == 0) {
      std::printf("no CUDA device (%s): skipped\n",
                  reason.empty() ? "none visible" : reason.c_str());
      return kSkipped;
    }
  }
  // A failing case is reported and the others still run.
  int status = 0;
  for (const Case &c : cases) {
    Timing timing;
    if (Status s = runCase(c, device, static_cast<int>(warmup),
                           static_cast<int>(iters), timing);
        !s) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      status = 1;
      continue;
    }
    printJson(c, device, static_cast<int>(warmup), static_cast<int>(iters),
              timing);
  }
  return status;
}
