//===- ModelConfig.cpp - Hugging Face config.json parsing -----------------===//

#include "tpc/Import/ModelConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace mlir::tpc;
using llvm::Error;
using llvm::Expected;
using llvm::SmallVector;
using llvm::SmallVectorImpl;
using llvm::StringRef;
namespace json = llvm::json;

namespace {

Error fieldError(StringRef field, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (field + ": " + why).str());
}

/// The shortest decimal spelling that reads back as `value` ("768.5",
/// "1e+19", "inf"), for messages.
std::string formatNumber(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char buffer[40];
  if (value == std::trunc(value) && std::fabs(value) < 1e16) {
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
    return buffer;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

/// `text` in single quotes for a message: control characters escaped, and
/// cut (at a UTF-8 boundary) after 64 bytes, so that a hostile config cannot
/// flood or drive the terminal.
std::string quote(StringRef text) {
  constexpr size_t kMaxShown = 64;
  bool cut = text.size() > kMaxShown;
  if (cut) {
    size_t end = kMaxShown;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
      --end;
    text = text.take_front(end);
  }
  std::string out = "'";
  for (char ch : text) {
    unsigned char byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7F || ch == '\\' || ch == '\'') {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", byte);
      out += escaped;
    } else {
      out += ch;
    }
  }
  out += cut ? "'..." : "'";
  return out;
}

/// A key of the config as the field of a message: as is when it is plain
/// printable ASCII of reasonable length, quoted and escaped otherwise.
std::string fieldName(StringRef key) {
  bool plain = !key.empty() && key.size() <= 64 &&
               llvm::all_of(key, [](char ch) {
                 return ch > 0x20 && ch < 0x7F;
               });
  return plain ? key.str() : quote(key);
}

/// Walks the text once, without recursion, before llvm::json::parse (which
/// recurses once per nesting level, so that deep input would overflow the
/// stack). Refuses nesting deeper than kMaxJsonDepth and records the raw
/// spelling of the top-level object's keys.
Error scanJson(StringRef text, SmallVectorImpl<StringRef> &topLevelKeys) {
  int64_t depth = 0;
  bool topIsObject = false, expectKey = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char ch = text[i];
    if (ch == '"') {
      size_t start = i++;
      while (i < e && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (depth == 1 && topIsObject && expectKey && i < e)
        topLevelKeys.push_back(text.slice(start, i + 1));
      expectKey = false;
      continue;
    }
    if (ch == '[' || ch == '{') {
      if (++depth > kMaxJsonDepth)
        return fieldError("config",
                          llvm::formatv("JSON nested deeper than {0} levels",
                                        kMaxJsonDepth));
      if (depth == 1)
        topIsObject = ch == '{';
      expectKey = depth == 1 && ch == '{';
    } else if (ch == ']' || ch == '}') {
      --depth;
    } else if (ch == ',' && depth == 1) {
      expectKey = topIsObject;
    }
  }
  return Error::success();
}

StringRef kindName(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "a value";
}

/// Typed access to the fields of one config object. Absent and null fields
/// read as std::nullopt; a field of the wrong type is an error.
class ConfigFields {
public:
  explicit ConfigFields(const json::Object &object) : object(object) {}

  /// An integer field, checked to be in [1, max] when present.
  Expected<std::optional<int64_t>> getSize(StringRef key, int64_t max) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    // llvm::json's getAsInteger converts a double of 2^63 (what
    // 9223372036854775807. rounds to) to int64_t, which is undefined: a
    // number that large is never asked for as an integer (it is out of
    // range either way, below).
    std::optional<double> magnitude = v->getAsNumber();
    bool fitsInt64 = magnitude && *magnitude < 0x1p63 && *magnitude >= -0x1p63;
    if (fitsInt64)
      if (std::optional<int64_t> i = v->getAsInteger())
        return checkSize(key, *i, max);
    if (v->kind() != json::Value::Number)
      return fieldError(key, "expected an integer but got " + kindName(*v));
    // A number that is not an int64: a fraction, an integer beyond int64
    // (read as a double or uint64) or beyond double (read as infinity).
    double d = *v->getAsNumber();
    if (std::isinf(d) || d == std::trunc(d)) {
      if (d < 0)
        return fieldError(key, "must be positive but is " + formatNumber(d));
      return fieldError(key, llvm::formatv("{0} exceeds the supported "
                                           "maximum {1}",
                                           formatNumber(d), max));
    }
    return fieldError(key, "expected an integer but got " + formatNumber(d));
  }

  Expected<std::optional<double>> getNumber(StringRef key) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (std::optional<double> d = v->getAsNumber())
      return *d;
    return fieldError(key, "expected a number but got " + kindName(*v));
  }

  Expected<std::optional<bool>> getBool(StringRef key) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (std::optional<bool> b = v->getAsBoolean())
      return *b;
    return fieldError(key, "expected true or false but got " + kindName(*v));
  }

  Expected<std::optional<std::string>> getString(StringRef key) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (std::optional<StringRef> s = v->getAsString())
      return s->str();
    return fieldError(key, "expected a string but got " + kindName(*v));
  }

  /// A size field that must be present, positive and at most `max`.
  Expected<int64_t> requireSize(StringRef key, int64_t max) const {
    Expected<std::optional<int64_t>> v = getSize(key, max);
    if (!v)
      return v.takeError();
    if (!*v)
      return fieldError(key, "missing");
    return **v;
  }

  /// A size field with a default when absent or null.
  Expected<int64_t> optionalSize(StringRef key, int64_t fallback,
                                 int64_t max) const {
    Expected<std::optional<int64_t>> v = getSize(key, max);
    if (!v)
      return v.takeError();
    return checkSize(key, v->value_or(fallback), max);
  }

  static Expected<int64_t> checkSize(StringRef key, int64_t value,
                                     int64_t max) {
    if (value <= 0)
      return fieldError(key, llvm::formatv("must be positive but is {0}",
                                           value));
    if (value > max)
      return fieldError(key, llvm::formatv("{0} exceeds the supported "
                                           "maximum {1}",
                                           value, max));
    return value;
  }

  /// A probability in [0, 1) with a default.
  Expected<double> optionalRate(StringRef key, double fallback) const {
    Expected<std::optional<double>> v = getNumber(key);
    if (!v)
      return v.takeError();
    double rate = v->value_or(fallback);
    if (!(rate >= 0.0 && rate < 1.0))
      return fieldError(key, "dropout rate " + formatNumber(rate) +
                                 " is outside [0, 1)");
    // -0.0 is no dropout, spelled as 0.
    return rate == 0.0 ? 0.0 : rate;
  }

  /// A strictly positive real with a default (epsilons, rope theta).
  Expected<double> optionalPositive(StringRef key, double fallback) const {
    Expected<std::optional<double>> v = getNumber(key);
    if (!v)
      return v.takeError();
    double value = v->value_or(fallback);
    if (!(value > 0.0))
      return fieldError(key, "must be positive but is " + formatNumber(value));
    if (!std::isfinite(value))
      return fieldError(key, "must be finite but is " + formatNumber(value));
    return value;
  }

  /// Refuses a boolean feature the importer does not implement when set to
  /// `unsupported`.
  Error refuseFlag(StringRef key, bool unsupported, StringRef why) const {
    Expected<std::optional<bool>> v = getBool(key);
    if (!v)
      return v.takeError();
    if (*v && **v == unsupported)
      return fieldError(key, why);
    return Error::success();
  }

  const json::Object &object;
};

// Propagates an Expected into `out` or returns its error from the caller.
#define TPC_ASSIGN(out, expr)                                                  \
  do {                                                                         \
    auto tpcValue = (expr);                                                    \
    if (!tpcValue)                                                             \
      return tpcValue.takeError();                                             \
    out = std::move(*tpcValue);                                                \
  } while (false)

#define TPC_CHECK(expr)                                                        \
  do {                                                                         \
    if (Error tpcErr = (expr))                                                 \
      return std::move(tpcErr);                                                \
  } while (false)

Error parseGpt2(const ConfigFields &f, ModelConfig &c) {
  TPC_ASSIGN(c.vocabSize, f.requireSize("vocab_size", kMaxVocab));
  TPC_ASSIGN(c.hiddenSize, f.requireSize("n_embd", kMaxHidden));
  TPC_ASSIGN(c.numLayers, f.requireSize("n_layer", kMaxLayers));
  TPC_ASSIGN(c.numHeads, f.requireSize("n_head", kMaxHidden));
  TPC_ASSIGN(c.maxPositions, f.requireSize("n_positions", kMaxSeq));
  if (c.hiddenSize % c.numHeads != 0)
    return fieldError("n_head", llvm::formatv("hidden size {0} is not "
                                              "divisible by {1} heads",
                                              c.hiddenSize, c.numHeads));
  c.numKvHeads = c.numHeads;
  c.headDim = c.hiddenSize / c.numHeads;
  // `n_inner: null` means 4 * n_embd.
  TPC_ASSIGN(c.ffnSize,
             f.optionalSize("n_inner", 4 * c.hiddenSize, 4 * kMaxHidden));

  std::optional<std::string> activation;
  TPC_ASSIGN(activation, f.getString("activation_function"));
  StringRef act = activation ? StringRef(*activation) : "gelu_new";
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
    c.geluTanh = true;
  else if (act == "gelu")
    c.geluTanh = false;
  else
    return fieldError("activation_function",
                      "unsupported activation " + quote(act) +
                          " (supported: gelu_new, gelu_pytorch_tanh, "
                          "gelu_fast, gelu)");

  TPC_ASSIGN(c.normEpsilon, f.optionalPositive("layer_norm_epsilon", 1e-5));
  TPC_ASSIGN(c.embeddingDropout, f.optionalRate("embd_pdrop", 0.1));
  TPC_ASSIGN(c.attentionDropout, f.optionalRate("attn_pdrop", 0.1));
  TPC_ASSIGN(c.residualDropout, f.optionalRate("resid_pdrop", 0.1));
  std::optional<bool> tie;
  TPC_ASSIGN(tie, f.getBool("tie_word_embeddings"));
  c.tieWordEmbeddings = tie.value_or(true);
  c.attentionBias = c.outputBias = c.mlpBias = true;

  TPC_CHECK(f.refuseFlag("scale_attn_weights", false,
                         "unscaled attention is not supported"));
  TPC_CHECK(f.refuseFlag("scale_attn_by_inverse_layer_idx", true,
                         "per-layer attention scaling is not supported"));
  TPC_CHECK(f.refuseFlag("add_cross_attention", true,
                         "cross-attention is not supported"));
  return Error::success();
}

/// rope_scaling as Hugging Face reads it (its type under `rope_type`, or
/// the older `type`): `default` scales nothing, `linear` divides every
/// frequency by `factor`, `llama3` (Llama 3.1/3.2) scales the low
/// frequencies by `factor` and blends toward the high ones; the other types
/// are refused by name.
Error parseRopeScaling(const ConfigFields &f, ModelConfig &c) {
  const json::Value *value = f.object.get("rope_scaling");
  if (!value || value->kind() == json::Value::Null)
    return Error::success();
  const json::Object *object = value->getAsObject();
  if (!object)
    return fieldError("rope_scaling",
                      "expected an object but got " + kindName(*value));
  ConfigFields scaling(*object);
  auto named = [](StringRef key) { return ("rope_scaling." + key).str(); };
  std::optional<std::string> type;
  TPC_ASSIGN(type, scaling.getString("rope_type"));
  if (!type)
    TPC_ASSIGN(type, scaling.getString("type"));
  if (!type)
    return fieldError("rope_scaling", "has no rope_type (or type)");
  if (*type == "default")
    return Error::success();
  if (*type != "linear" && *type != "llama3")
    return fieldError(named("rope_type"),
                      "unsupported RoPE scaling " + quote(*type) +
                          " (supported: default, linear, llama3)");
  // Each number of the object, positive and finite.
  auto number = [&](StringRef key) -> Expected<double> {
    Expected<std::optional<double>> v = scaling.getNumber(key);
    if (!v)
      return v.takeError();
    if (!*v)
      return fieldError(named(key), "missing (" + *type + " needs it)");
    if (!(**v > 0.0) || !std::isfinite(**v))
      return fieldError(named(key),
                        "must be positive and finite but is " +
                            formatNumber(**v));
    return **v;
  };
  double factor;
  TPC_ASSIGN(factor, number("factor"));
  c.ropeScaling = {factor};
  if (*type == "linear")
    return Error::success();
  double low, high, original;
  TPC_ASSIGN(low, number("low_freq_factor"));
  TPC_ASSIGN(high, number("high_freq_factor"));
  TPC_ASSIGN(original, number("original_max_position_embeddings"));
  if (!(high > low))
    return fieldError(named("high_freq_factor"),
                      formatNumber(high) + " must exceed low_freq_factor " +
                          formatNumber(low));
  c.ropeScaling = {factor, low, high, original};
  return Error::success();
}

Error parseLlama(const ConfigFields &f, ModelConfig &c) {
  TPC_ASSIGN(c.vocabSize, f.requireSize("vocab_size", kMaxVocab));
  TPC_ASSIGN(c.hiddenSize, f.requireSize("hidden_size", kMaxHidden));
  TPC_ASSIGN(c.numLayers, f.requireSize("num_hidden_layers", kMaxLayers));
  TPC_ASSIGN(c.numHeads, f.requireSize("num_attention_heads", kMaxHidden));
  TPC_ASSIGN(c.ffnSize, f.requireSize("intermediate_size", 4 * kMaxHidden));
  TPC_ASSIGN(c.maxPositions,
             f.optionalSize("max_position_embeddings", 2048, kMaxSeq));
  TPC_ASSIGN(c.numKvHeads,
             f.optionalSize("num_key_value_heads", c.numHeads, kMaxHidden));
  if (c.numHeads % c.numKvHeads != 0)
    return fieldError("num_key_value_heads",
                      llvm::formatv("{0} key/value heads do not divide {1} "
                                    "attention heads",
                                    c.numKvHeads, c.numHeads));
  std::optional<int64_t> headDim;
  TPC_ASSIGN(headDim, f.getSize("head_dim", kMaxHidden));
  if (headDim) {
    c.headDim = *headDim;
  } else {
    if (c.hiddenSize % c.numHeads != 0)
      return fieldError("num_attention_heads",
                        llvm::formatv("hidden size {0} is not divisible by "
                                      "{1} heads",
                                      c.hiddenSize, c.numHeads));
    c.headDim = c.hiddenSize / c.numHeads;
  }
  if (c.headDim % 2 != 0)
    return fieldError("head_dim", llvm::formatv("{0} must be even for rotary "
                                                "embeddings",
                                                c.headDim));
  if (c.numHeads * c.headDim > 4 * kMaxHidden)
    return fieldError("num_attention_heads",
                      llvm::formatv("{0} heads of dimension {1} exceed the "
                                    "supported maximum width {2}",
                                    c.numHeads, c.headDim, 4 * kMaxHidden));

  std::optional<std::string> activation;
  TPC_ASSIGN(activation, f.getString("hidden_act"));
  if (activation && *activation != "silu")
    return fieldError("hidden_act", "unsupported activation " +
                                        quote(*activation) +
                                        " (supported: silu)");

  TPC_CHECK(parseRopeScaling(f, c));
  Expected<std::optional<double>> partial =
      f.getNumber("partial_rotary_factor");
  if (!partial)
    return partial.takeError();
  if (*partial && **partial != 1.0)
    return fieldError("partial_rotary_factor",
                      "partial rotary embeddings (" + formatNumber(**partial) +
                          ") are not supported");

  TPC_ASSIGN(c.normEpsilon, f.optionalPositive("rms_norm_eps", 1e-6));
  TPC_ASSIGN(c.ropeTheta, f.optionalPositive("rope_theta", 10000.0));
  TPC_ASSIGN(c.attentionDropout, f.optionalRate("attention_dropout", 0.0));
  std::optional<bool> flag;
  TPC_ASSIGN(flag, f.getBool("tie_word_embeddings"));
  c.tieWordEmbeddings = flag.value_or(false);
  TPC_ASSIGN(flag, f.getBool("attention_bias"));
  c.attentionBias = c.outputBias = flag.value_or(false);
  TPC_ASSIGN(flag, f.getBool("mlp_bias"));
  c.mlpBias = flag.value_or(false);
  return Error::success();
}

/// A sliding window (Mistral, Qwen2) changes nothing when it covers the
/// sequence; a smaller one is refused (no sliding-window attention yet).
Error checkSlidingWindow(const ConfigFields &f, bool used, int64_t seq) {
  // (Any length: a window longer than any sequence covers it; null: none.)
  Expected<std::optional<int64_t>> window =
      f.getSize("sliding_window", std::numeric_limits<int64_t>::max());
  if (!window)
    return window.takeError();
  if (!used || !*window || **window >= seq)
    return Error::success();
  return fieldError("sliding_window",
                    llvm::formatv("a window of {0} positions is shorter than "
                                  "the sequence ({1}): sliding-window "
                                  "attention is not supported (import with "
                                  "--seq {0} or less, where it attends to "
                                  "every earlier position as full causal "
                                  "attention does)",
                                  **window, seq));
}

/// Qwen2: Llama with biases on the q, k and v projections (none on o_proj
/// or the MLP), whose configs carry a sliding window that
/// `use_sliding_window: false` turns off.
Error parseQwen2(const ConfigFields &f, ModelConfig &c) {
  TPC_CHECK(parseLlama(f, c));
  c.attentionBias = true;
  c.outputBias = c.mlpBias = false;
  return Error::success();
}

} // namespace

Expected<ModelConfig> mlir::tpc::parseModelConfig(StringRef text,
                                                  ImportOptions &options) {
  if (static_cast<int64_t>(text.size()) > kMaxConfigBytes)
    return fieldError("config", llvm::formatv("{0} bytes exceed the supported "
                                              "maximum {1}",
                                              text.size(), kMaxConfigBytes));
  // Editors on Windows may start the file with a UTF-8 byte order mark.
  text.consume_front("\xEF\xBB\xBF");
  if (text.trim().empty())
    return fieldError("config", "empty file");
  SmallVector<StringRef> rawKeys;
  TPC_CHECK(scanJson(text, rawKeys));
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fieldError("config", "invalid JSON: " +
                                    llvm::toString(parsed.takeError()));
  const json::Object *object = parsed->getAsObject();
  if (!object)
    return fieldError("config", "expected a JSON object but got " +
                                    kindName(*parsed));
  // The text is valid JSON here, so the scan found exactly the top-level
  // keys; each is decoded (escapes) by parsing its spelling.
  llvm::StringSet<> seen;
  for (StringRef raw : rawKeys) {
    Expected<json::Value> key = json::parse(raw);
    if (!key) {
      llvm::consumeError(key.takeError());
      continue;
    }
    if (std::optional<StringRef> name = key->getAsString())
      if (!seen.insert(*name).second)
        return fieldError(fieldName(*name), "given more than once");
  }
  ConfigFields fields(*object);

  ModelConfig config;
  std::optional<std::string> modelType;
  TPC_ASSIGN(modelType, fields.getString("model_type"));
  if (!modelType)
    return fieldError("model_type", "missing");
  config.modelType = *modelType;
  if (*modelType == "gpt2") {
    config.family = ModelFamily::Gpt2;
    TPC_CHECK(parseGpt2(fields, config));
  } else if (*modelType == "llama" || *modelType == "mistral") {
    // Mistral is Llama's architecture with a sliding window (checked below).
    config.family = ModelFamily::Llama;
    TPC_CHECK(parseLlama(fields, config));
  } else if (*modelType == "qwen2") {
    config.family = ModelFamily::Llama;
    TPC_CHECK(parseQwen2(fields, config));
  } else {
    return fieldError("model_type", "unsupported model type " +
                                        quote(*modelType) +
                                        " (supported: gpt2, llama, mistral, "
                                        "qwen2)");
  }
  std::optional<std::string> torchDtype;
  TPC_ASSIGN(torchDtype, fields.getString("torch_dtype"));
  config.torchDtype = torchDtype.value_or("");

  // Command-line overrides and checks.
  if (options.numLayers) {
    TPC_ASSIGN(config.numLayers,
               ConfigFields::checkSize("--num-layers", *options.numLayers,
                                       kMaxLayers));
  }
  if (options.dropout) {
    double rate = *options.dropout;
    if (!(rate >= 0.0 && rate < 1.0))
      return fieldError("--dropout", "dropout rate " + formatNumber(rate) +
                                         " is outside [0, 1)");
    // -0.0 reads as no dropout, like 0.
    rate = rate == 0.0 ? 0.0 : rate;
    config.embeddingDropout = config.residualDropout = rate;
    config.attentionDropout = rate;
  }
  // The config as imported, the overrides in the family's own keys.
  json::Object imported = *object;
  bool gpt2 = config.family == ModelFamily::Gpt2;
  if (options.numLayers)
    imported[gpt2 ? "n_layer" : "num_hidden_layers"] = config.numLayers;
  if (options.dropout) {
    static constexpr llvm::StringLiteral kGpt2Rates[] = {"embd_pdrop", "attn_pdrop",
                                                   "resid_pdrop"};
    static constexpr llvm::StringLiteral kLlamaRates[] = {"attention_dropout"};
    llvm::ArrayRef<llvm::StringLiteral> keys = gpt2 ? llvm::ArrayRef(kGpt2Rates)
                                        : llvm::ArrayRef(kLlamaRates);
    for (llvm::StringLiteral key : keys)
      imported[key] = config.attentionDropout;
  }
  llvm::raw_string_ostream jsonText(config.json);
  jsonText << json::Value(std::move(imported));

  if (!options.seq)
    options.seq = config.maxPositions;
  TPC_CHECK(ConfigFields::checkSize("--seq", *options.seq, kMaxSeq)
                .takeError());
  const int64_t seq = *options.seq;
  if (seq > config.maxPositions)
    return fieldError("--seq", llvm::formatv("{0} exceeds the model's {1} "
                                             "positions",
                                             seq, config.maxPositions));
  // Mistral's window always applies; Qwen2's only with use_sliding_window.
  std::optional<bool> useWindow;
  TPC_ASSIGN(useWindow, fields.getBool("use_sliding_window"));
  TPC_CHECK(checkSlidingWindow(
      fields, config.modelType == "mistral" || useWindow.value_or(false),
      seq));
  TPC_CHECK(ConfigFields::checkSize("--batch", options.batch, kMaxBatch)
                .takeError());
  // The widest activation per position: logits, the FFN, the fused QKV
  // projection, the query heads, attention scores [b, heads, s, s]. Each
  // factor is bounded above, so none of these products overflows.
  int64_t widest = std::max({config.vocabSize, config.ffnSize,
                             3 * config.hiddenSize,
                             config.numHeads * config.headDim,
                             config.numHeads * seq});
  if (options.batch * seq > kMaxTensorElements / widest)
    return fieldError("--batch",
                      llvm::formatv("batch {0} x seq {1} x {2} elements per "
                                    "position exceed the supported {3} "
                                    "elements per tensor",
                                    options.batch, seq, widest,
                                    kMaxTensorElements));
  return config;
}

Expected<ModelConfig> mlir::tpc::parseModelConfigFile(StringRef path,
                                                      ImportOptions &options) {
  auto fileError = [&](const llvm::Twine &why) {
    return fieldError(path, why);
  };
  // Read at most one byte more than accepted, whatever the file is (a pipe,
  // /dev/zero): never the whole of an unbounded input.
  llvm::sys::fs::file_t file;
  bool isStdin = path == "-";
  if (isStdin) {
    file = llvm::sys::fs::getStdinHandle();
  } else {
    Expected<llvm::sys::fs::file_t> opened =
        llvm::sys::fs::openNativeFileForRead(path);
    if (!opened)
      return fileError(llvm::errorToErrorCode(opened.takeError()).message());
    file = *opened;
  }
  llvm::SmallString<4096> text;
  Error readError = Error::success();
  while (true) {
    constexpr size_t kChunk = 1 << 16;
    size_t size = text.size();
    text.resize_for_overwrite(size + kChunk);
    Expected<size_t> read = llvm::sys::fs::readNativeFile(
        file, llvm::MutableArrayRef<char>(text.data() + size, kChunk));
    if (!read) {
      text.truncate(size);
      readError = read.takeError();
      break;
    }
    text.truncate(size + *read);
    if (*read == 0 || static_cast<int64_t>(text.size()) > kMaxConfigBytes)
      break;
  }
  if (!isStdin)
    llvm::consumeError(
        llvm::errorCodeToError(llvm::sys::fs::closeFile(file)));
  if (readError)
    return fileError(llvm::errorToErrorCode(std::move(readError)).message());
  if (static_cast<int64_t>(text.size()) > kMaxConfigBytes)
    return fileError(llvm::formatv("larger than the supported maximum of {0} "
                                   "bytes for a config.json",
                                   kMaxConfigBytes));
  return parseModelConfig(text.str(), options);
}
