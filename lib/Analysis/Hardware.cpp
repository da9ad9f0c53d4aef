//===- Hardware.cpp - reading hardware descriptions -----------------------===//
//
// Strict: a missing key, an unknown key (a typo must not fall back to a
// default) or a value out of range is an error naming the file and the key.
//
//===----------------------------------------------------------------------===//

#include "tpc/Analysis/Hardware.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cmath>

using namespace mlir::tpc;
namespace json = llvm::json;

double EfficiencyCurve::at(double size) const {
  if (points.empty())
    return 1.0;
  if (size <= points.front().first)
    return points.front().second;
  if (size >= points.back().first)
    return points.back().second;
  for (size_t i = 1; i < points.size(); ++i) {
    auto [x1, y1] = points[i];
    if (size > x1)
      continue;
    auto [x0, y0] = points[i - 1];
    double t = (std::log(size) - std::log(x0)) / (std::log(x1) - std::log(x0));
    return y0 + t * (y1 - y0);
  }
  return points.back().second;
}

int64_t Hardware::vocabPadding() const {
  return runtimeDevice == "cuda" ? kCudaVocabPadding : 1;
}

double Hardware::peakFlops(llvm::StringRef dtype) const {
  if (dtype == "bf16")
    return peakBf16;
  if (dtype == "fp16")
    return peakFp16;
  if (dtype == "fp32")
    return peakFp32;
  return 0;
}

namespace {

/// Reads one object's keys, remembering which were read so that the rest
/// can be refused as unknown.
class Reader {
public:
  Reader(const json::Object &object, std::string where, std::string &error)
      : object(object), where(std::move(where)), error(error) {}

  bool ok() const { return error.empty(); }

  const json::Value *get(llvm::StringRef key, bool optional = false) {
    seen.insert(key);
    const json::Value *value = object.get(key);
    if (!value && !optional)
      fail("missing key '" + key.str() + "'");
    return value;
  }

  std::string string(llvm::StringRef key, bool optional = false) {
    const json::Value *value = get(key, optional);
    if (!value)
      return {};
    if (auto s = value->getAsString())
      return s->str();
    fail("'" + key.str() + "' must be a string");
    return {};
  }

  /// A positive number (or, with allowZero, non-negative).
  double number(llvm::StringRef key, bool allowZero = false,
                bool optional = false) {
    const json::Value *value = get(key, optional);
    if (!value)
      return 0;
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number) || *number < 0 ||
        (*number == 0 && !allowZero)) {
      fail("'" + key.str() + "' must be a " +
           (allowZero ? "non-negative" : "positive") + " number");
      return 0;
    }
    return *number;
  }

  /// A number in (0, 1].
  double fraction(llvm::StringRef key) {
    double value = number(key);
    if (ok() && value > 1)
      fail("'" + key.str() + "' must be a fraction in (0, 1], not " +
           std::to_string(value));
    return value;
  }

  const json::Object *object_(llvm::StringRef key, bool optional = false) {
    const json::Value *value = get(key, optional);
    if (!value)
      return nullptr;
    if (const json::Object *o = value->getAsObject())
      return o;
    fail("'" + key.str() + "' must be an object");
    return nullptr;
  }

  /// Every key read; anything else is a typo.
  void finish() {
    if (!ok())
      return;
    for (const auto &entry : object)
      if (!seen.contains(entry.first)) {
        fail("unknown key '" + entry.first.str() + "'");
        return;
      }
  }

  void fail(const std::string &message) {
    if (error.empty())
      error = where + ": " + message;
  }

  const std::string &path() const { return where; }

private:
  const json::Object &object;
  std::string where;
  std::string &error;
  llvm::StringSet<> seen;
};

/// `{"value": X, "source": "..."}` with X a fraction or, for times, a
/// non-negative number.
double readSourced(Reader &parent, llvm::StringRef key, bool isFraction,
                   std::string &error) {
  const json::Object *object = parent.object_(key);
  if (!object)
    return 0;
  Reader reader(*object, parent.path() + "." + key.str(), error);
  double value = isFraction ? reader.fraction("value")
                            : reader.number("value", /*allowZero=*/true);
  reader.string("source");
  reader.finish();
  return value;
}

EfficiencyCurve readCurve(Reader &parent, llvm::StringRef key,
                          std::string &error) {
  EfficiencyCurve curve;
  const json::Object *object = parent.object_(key);
  if (!object)
    return curve;
  std::string where = parent.path() + "." + key.str();
  Reader reader(*object, where, error);
  reader.string("source");
  if (const json::Value *points = reader.get("points")) {
    const json::Array *array = points->getAsArray();
    if (!array || array->empty())
      reader.fail("'points' must be a non-empty array of [size, fraction]");
    for (size_t i = 0; array && i < array->size() && reader.ok(); ++i) {
      const json::Array *pair = (*array)[i].getAsArray();
      std::optional<double> x, y;
      if (pair && pair->size() == 2) {
        x = (*pair)[0].getAsNumber();
        y = (*pair)[1].getAsNumber();
      }
      std::string at = "points[" + std::to_string(i) + "]";
      if (!x || !y)
        reader.fail(at + " must be [size, fraction]");
      else if (!(*x > 0))
        reader.fail(at + ": size must be positive");
      else if (!(*y > 0 && *y <= 1))
        reader.fail(at + ": fraction " + std::to_string(*y) +
                    " is not in (0, 1]");
      else if (!curve.points.empty() && *x <= curve.points.back().first)
        reader.fail(at + ": sizes must ascend");
      else
        curve.points.emplace_back(*x, *y);
    }
  }
  reader.finish();
  return curve;
}

/// Whether `kind` names kernels of Kernels.def as the replay names a kind:
/// a mnemonic, mnemonics joined by '+' (a fused group), or mnemonics
/// joined by ',' and then " batch" (a batch); else the part that is none.
std::optional<std::string> unknownKernelIn(llvm::StringRef kind) {
  static const llvm::StringSet<> mnemonics = [] {
    llvm::StringSet<> names;
#define TPCX_KERNEL(Name, Value, Mnemonic, ...) names.insert(Mnemonic);
#include "tpcrt/Kernels.def"
    return names;
  }();
  char separator = '+';
  if (kind.consume_back(" batch"))
    separator = ',';
  llvm::SmallVector<llvm::StringRef> parts;
  kind.split(parts, separator);
  for (llvm::StringRef part : parts)
    if (!mnemonics.contains(part))
      return part.str();
  return std::nullopt;
}

/// Whether the replay prices a kind headed by `kernel` otherwise than by
/// its bytes (PlanSimulation's Pricer::price): by FLOPs (a matrix product
/// and its epilogue group, attention) or as communication.
bool pricedByOtherTerms(llvm::StringRef kernel) {
  return llvm::is_contained({"linear",
                             "linear_input_grad",
                             "linear_weight_grad",
                             "linear_weight_grad_accumulate",
                             "batch_matmul",
                             "attention",
                             "attention_lse",
                             "attention_grad",
                             "attention_qkv",
                             "attention_qkv_lse",
                             "attention_qkv_grad",
                             "all_reduce",
                             "all_gather",
                             "reduce_scatter",
                             "all_to_all",
                             "send",
                             "recv",
                             "send_start",
                             "recv_start",
                             "wait"},
                            kernel);
}

/// `key`: `{"value": X, "kinds": {KIND: X, ...}, "source": "..."}`, kinds
/// optional (into `kinds`): the value a fraction, each kind's a positive
/// number up to `mostKindFraction` (a fraction of `ofWhat`), each kind's
/// name checked by `refusal` (why it is refused, or nullopt). Returns the
/// value (0 where the object is optional and absent).
double readValueAndKinds(
    Reader &parent, llvm::StringRef key, bool optional,
    llvm::function_ref<std::optional<std::string>(llvm::StringRef)> refusal,
    double mostKindFraction, llvm::StringRef ofWhat,
    std::map<std::string, double> &kinds, std::string &error) {
  const json::Object *object = parent.object_(key, optional);
  if (!object)
    return 0;
  std::string where = parent.path() + "." + key.str();
  Reader reader(*object, where, error);
  double value = reader.fraction("value");
  reader.string("source");
  if (const json::Object *perKindObject =
          reader.object_("kinds", /*optional=*/true)) {
    Reader perKind(*perKindObject, where + ".kinds", error);
    for (const auto &entry : *perKindObject) {
      llvm::StringRef kind = entry.first;
      if (std::optional<std::string> why = refusal(kind)) {
        perKind.fail("'" + kind.str() + "'" + *why);
        break;
      }
      double fraction = perKind.number(kind);
      if (perKind.ok() && fraction > mostKindFraction)
        perKind.fail("'" + kind.str() + "' must be a fraction of " +
                     ofWhat.str() + " in (0, " +
                     std::to_string(int(mostKindFraction)) + "], not " +
                     std::to_string(fraction));
      if (!perKind.ok())
        break;
      kinds[kind.str()] = fraction;
    }
    perKind.finish();
  }
  reader.finish();
  return value;
}

/// `elementwise_bandwidth`: kinds as the replay names them, memory-bound;
/// their fractions may pass 1 (a kind whose tensors stay in a cache).
void readElementwise(Reader &parent, Hardware &hw, std::string &error) {
  auto refusal = [](llvm::StringRef kind) -> std::optional<std::string> {
    if (std::optional<std::string> unknown = unknownKernelIn(kind))
      return ": '" + *unknown + "' is not a kernel of docs/runtime/opcodes.md";
    llvm::StringRef head = kind.take_until(
        [](char c) { return c == '+' || c == ',' || c == ' '; });
    if (pricedByOtherTerms(head))
      return ": " + head.str() +
             " is priced by its FLOPs or as communication, not by the "
             "memory bandwidth";
    return std::nullopt;
  };
  hw.elementwiseEfficiency = readValueAndKinds(
      parent, "elementwise_bandwidth", /*optional=*/false, refusal,
      /*mostKindFraction=*/10, "the memory bandwidth", hw.elementwiseKinds,
      error);
}

/// `gemm_unaligned` (optional): kinds by a matrix product's opcode.
void readGemmUnaligned(Reader &parent, Hardware &hw, std::string &error) {
  auto refusal = [](llvm::StringRef kind) -> std::optional<std::string> {
    if (llvm::is_contained({"linear", "linear_input_grad", "linear_weight_grad",
                            "linear_weight_grad_accumulate", "batch_matmul"},
                           kind))
      return std::nullopt;
    return std::string(" is not a matrix product's opcode (linear, "
                       "linear_input_grad, linear_weight_grad, "
                       "linear_weight_grad_accumulate, batch_matmul)");
  };
  hw.gemmUnaligned = readValueAndKinds(
      parent, "gemm_unaligned", /*optional=*/true, refusal,
      /*mostKindFraction=*/1, "the peak", hw.gemmUnalignedKinds, error);
}

Link readLink(Reader &parent, llvm::StringRef key, std::string &error) {
  Link link;
  const json::Object *object = parent.object_(key);
  if (!object)
    return link;
  Reader reader(*object, parent.path() + "." + key.str(), error);
  link.bytesPerSecond = reader.number("bytes_per_s");
  link.latencySeconds = reader.number("latency_s", /*allowZero=*/true);
  reader.string("source");
  reader.finish();
  return link;
}

} // namespace

llvm::Expected<Hardware> mlir::tpc::parseHardware(llvm::StringRef text,
                                                  llvm::StringRef path) {
  auto fail = [&](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fail(path.str() + ": not JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(path.str() + ": the description must be a JSON object");

  std::string error;
  Hardware hw;
  hw.path = path.str();
  Reader reader(*root, path.str(), error);
  hw.name = reader.string("name");
  hw.description = reader.string("description");
  hw.memoryBytes = static_cast<int64_t>(reader.number("memory_bytes"));
  reader.string("memory_source");
  double perNode = reader.number("devices_per_node");
  if (reader.ok() && perNode != std::floor(perNode))
    reader.fail("'devices_per_node' must be an integer");
  hw.devicesPerNode = static_cast<int64_t>(perNode);
  std::string device = reader.string("runtime_device", /*optional=*/true);
  if (!device.empty()) {
    if (device != "cuda" && device != "cpu")
      reader.fail("'runtime_device' must be \"cuda\" or \"cpu\", not \"" +
                  device + "\"");
    hw.runtimeDevice = device;
  }

  if (const json::Object *peak = reader.object_("peak_flops")) {
    Reader peaks(*peak, path.str() + ".peak_flops", error);
    hw.peakBf16 = peaks.number("bf16", false, /*optional=*/true);
    hw.peakFp16 = peaks.number("fp16", false, /*optional=*/true);
    hw.peakFp32 = peaks.number("fp32", false, /*optional=*/true);
    peaks.string("source");
    if (peaks.ok() && !hw.peakBf16 && !hw.peakFp16 && !hw.peakFp32)
      peaks.fail("no peak for any of bf16, fp16, fp32");
    peaks.finish();
  }
  if (const json::Object *memory = reader.object_("memory_bandwidth")) {
    Reader bandwidth(*memory, path.str() + ".memory_bandwidth", error);
    hw.memoryBytesPerSecond = bandwidth.number("bytes_per_s");
    bandwidth.string("source");
    bandwidth.finish();
  }
  hw.intraNode = readLink(reader, "intra_node", error);
  hw.interNode = readLink(reader, "inter_node", error);
  if (const json::Object *efficiency = reader.object_("efficiency")) {
    Reader fractions(*efficiency, path.str() + ".efficiency", error);
    hw.gemm = readCurve(fractions, "gemm", error);
    readGemmUnaligned(fractions, hw, error);
    hw.attentionEfficiency = readSourced(fractions, "attention", true, error);
    if (const json::Object *own =
            fractions.object_("attention_own_kernels", /*optional=*/true)) {
      Reader kernels(*own, path.str() + ".efficiency.attention_own_kernels",
                     error);
      hw.ownAttentionForward = kernels.fraction("forward");
      hw.ownAttentionBackward = kernels.fraction("backward");
      hw.ownAttentionForwardDropout = kernels.fraction("forward_dropout");
      hw.ownAttentionBackwardDropout = kernels.fraction("backward_dropout");
      kernels.string("source");
      kernels.finish();
    }
    if (const json::Object *perScore =
            fractions.object_("attention_score_s", /*optional=*/true)) {
      Reader scores(*perScore, path.str() + ".efficiency.attention_score_s",
                    error);
      hw.attentionScoreForward = scores.number("forward", /*allowZero=*/true);
      hw.attentionScoreBackward = scores.number("backward", true);
      hw.attentionScoreForwardDropout = scores.number("forward_dropout", true);
      hw.attentionScoreBackwardDropout =
          scores.number("backward_dropout", true);
      hw.attentionRowForward = scores.number("row_forward", true, true);
      hw.attentionRowBackward = scores.number("row_backward", true, true);
      double blockRows = scores.number("block_rows", /*allowZero=*/false,
                                       /*optional=*/true);
      if (scores.ok() && blockRows != std::floor(blockRows))
        scores.fail("'block_rows' must be an integer");
      hw.attentionBlockRows = static_cast<int64_t>(blockRows);
      scores.string("source");
      scores.finish();
    }
    readElementwise(fractions, hw, error);
    hw.kernelLaunchSeconds =
        readSourced(fractions, "kernel_launch_s", false, error);
    if (const json::Object *bus =
            fractions.object_("collective_bus_bandwidth")) {
      Reader links(*bus, path.str() + ".efficiency.collective_bus_bandwidth",
                   error);
      hw.intraNode.busBandwidth = readCurve(links, "intra_node", error);
      hw.interNode.busBandwidth = readCurve(links, "inter_node", error);
      links.finish();
    }
    fractions.finish();
  }
  reader.finish();
  if (!error.empty())
    return fail(error);
  return hw;
}

llvm::Expected<Hardware> mlir::tpc::loadHardware(llvm::StringRef nameOrPath,
                                                 llvm::StringRef toolPath) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  std::string path;
  if (nameOrPath.ends_with(".json") || nameOrPath.contains('/')) {
    path = nameOrPath.str();
  } else {
    if (nameOrPath.empty() ||
        nameOrPath.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyz0123456789-_") != llvm::StringRef::npos)
      return fail("--hardware: '" + nameOrPath.str() +
                  "' is neither a name (a100, h100, h200, cpu) nor a "
                  ".json file");
    std::vector<std::string> dirs;
    if (std::optional<std::string> env =
            llvm::sys::Process::GetEnv("TPC_HARDWARE_PATH"))
      dirs.push_back(*env);
    llvm::SmallString<256> shared(llvm::sys::path::parent_path(toolPath));
    llvm::sys::path::append(shared, "..", "share", "tpc", "hardware");
    dirs.push_back(std::string(shared));
    std::string tried;
    for (const std::string &dir : dirs) {
      llvm::SmallString<256> candidate(dir);
      llvm::sys::path::append(candidate, nameOrPath + ".json");
      if (llvm::sys::fs::exists(candidate)) {
        path = std::string(candidate);
        break;
      }
      tried += (tried.empty() ? "" : ", ") + std::string(candidate);
    }
    if (path.empty()) {
      std::string message = "--hardware " + nameOrPath.str() +
                             ": no description found (looked for " + tried +
                             ")";
      if (nameOrPath == "cpu")
        message += "; measure this machine first: tpc-measure-hardware -o "
                   "<that directory>/cpu.json";
      return fail(message);
    }
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return fail("--hardware: cannot read '" + path +
                "': " + file.getError().message());
  return parseHardware((*file)->getBuffer(), path);
}
