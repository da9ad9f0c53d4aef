//===- ModelConfig.cpp - Hugging Face config.json parsing -----------------===//

#include "tpc/Import/ModelConfig.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir::tpc;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

namespace {

Error fieldError(StringRef field, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (field + ": " + why).str());
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

  Expected<std::optional<int64_t>> getInt(StringRef key) const {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (std::optional<int64_t> i = v->getAsInteger())
      return *i;
    if (v->kind() == json::Value::Number)
      return fieldError(key, llvm::formatv("expected an integer but got {0}",
                                           *v->getAsNumber()));
    return fieldError(key, "expected an integer but got " + kindName(*v));
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
    Expected<std::optional<int64_t>> v = getInt(key);
    if (!v)
      return v.takeError();
    if (!*v)
      return fieldError(key, "missing");
    return checkSize(key, **v, max);
  }

  /// A size field with a default when absent or null.
  Expected<int64_t> optionalSize(StringRef key, int64_t fallback,
                                 int64_t max) const {
    Expected<std::optional<int64_t>> v = getInt(key);
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
      return fieldError(key, llvm::formatv("dropout rate {0} is outside "
                                           "[0, 1)",
                                           rate));
    return rate;
  }

  /// A strictly positive real with a default (epsilons, rope theta).
  Expected<double> optionalPositive(StringRef key, double fallback) const {
    Expected<std::optional<double>> v = getNumber(key);
    if (!v)
      return v.takeError();
    double value = v->value_or(fallback);
    if (!(value > 0.0) || !std::isfinite(value))
      return fieldError(key,
                        llvm::formatv("must be positive but is {0}", value));
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
                      "unsupported activation '" + act +
                          "' (supported: gelu_new, gelu_pytorch_tanh, gelu)");

  TPC_ASSIGN(c.normEpsilon, f.optionalPositive("layer_norm_epsilon", 1e-5));
  TPC_ASSIGN(c.embeddingDropout, f.optionalRate("embd_pdrop", 0.1));
  TPC_ASSIGN(c.attentionDropout, f.optionalRate("attn_pdrop", 0.1));
  TPC_ASSIGN(c.residualDropout, f.optionalRate("resid_pdrop", 0.1));
  std::optional<bool> tie;
  TPC_ASSIGN(tie, f.getBool("tie_word_embeddings"));
  c.tieWordEmbeddings = tie.value_or(true);
  c.attentionBias = c.mlpBias = true;

  TPC_CHECK(f.refuseFlag("scale_attn_weights", false,
                         "unscaled attention is not supported"));
  TPC_CHECK(f.refuseFlag("scale_attn_by_inverse_layer_idx", true,
                         "per-layer attention scaling is not supported"));
  TPC_CHECK(f.refuseFlag("add_cross_attention", true,
                         "cross-attention is not supported"));
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
  TPC_ASSIGN(headDim, f.getInt("head_dim"));
  if (headDim) {
    TPC_ASSIGN(c.headDim,
               ConfigFields::checkSize("head_dim", *headDim, kMaxHidden));
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
    return fieldError("hidden_act", "unsupported activation '" + *activation +
                                        "' (supported: silu)");

  const json::Value *scaling = f.object.get("rope_scaling");
  if (scaling && scaling->kind() != json::Value::Null)
    return fieldError("rope_scaling", "RoPE scaling is not supported");
  Expected<std::optional<double>> partial =
      f.getNumber("partial_rotary_factor");
  if (!partial)
    return partial.takeError();
  if (*partial && **partial != 1.0)
    return fieldError("partial_rotary_factor",
                      llvm::formatv("partial rotary embeddings ({0}) are not "
                                    "supported",
                                    **partial));

  TPC_ASSIGN(c.normEpsilon, f.optionalPositive("rms_norm_eps", 1e-6));
  TPC_ASSIGN(c.ropeTheta, f.optionalPositive("rope_theta", 10000.0));
  TPC_ASSIGN(c.attentionDropout, f.optionalRate("attention_dropout", 0.0));
  std::optional<bool> flag;
  TPC_ASSIGN(flag, f.getBool("tie_word_embeddings"));
  c.tieWordEmbeddings = flag.value_or(false);
  TPC_ASSIGN(flag, f.getBool("attention_bias"));
  c.attentionBias = flag.value_or(false);
  TPC_ASSIGN(flag, f.getBool("mlp_bias"));
  c.mlpBias = flag.value_or(false);
  return Error::success();
}

} // namespace

Expected<ModelConfig> mlir::tpc::parseModelConfig(StringRef text,
                                                  ImportOptions &options) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fieldError("config", "invalid JSON: " +
                                    llvm::toString(parsed.takeError()));
  const json::Object *object = parsed->getAsObject();
  if (!object)
    return fieldError("config", "expected a JSON object but got " +
                                    kindName(*parsed));
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
  } else if (*modelType == "llama") {
    config.family = ModelFamily::Llama;
    TPC_CHECK(parseLlama(fields, config));
  } else {
    return fieldError("model_type", "unsupported model type '" + *modelType +
                                        "' (supported: gpt2, llama)");
  }

  // Command-line overrides and checks.
  if (options.numLayers != 0) {
    TPC_ASSIGN(config.numLayers,
               ConfigFields::checkSize("--num-layers", options.numLayers,
                                       kMaxLayers));
  }
  if (options.dropout) {
    double rate = *options.dropout;
    if (!(rate >= 0.0 && rate < 1.0))
      return fieldError("--dropout", llvm::formatv("dropout rate {0} is "
                                                   "outside [0, 1)",
                                                   rate));
    config.embeddingDropout = config.residualDropout = rate;
    config.attentionDropout = rate;
  }
  if (options.seq == 0)
    options.seq = config.maxPositions;
  Expected<int64_t> seq = ConfigFields::checkSize("--seq", options.seq, kMaxSeq);
  if (!seq)
    return seq.takeError();
  if (options.seq > config.maxPositions)
    return fieldError("--seq", llvm::formatv("{0} exceeds the model's {1} "
                                             "positions",
                                             options.seq, config.maxPositions));
  Expected<int64_t> batch =
      ConfigFields::checkSize("--batch", options.batch, kMaxBatch);
  if (!batch)
    return batch.takeError();
  // The largest activation is [batch, seq, max(vocab, ffn, heads * seq)].
  int64_t widest = std::max({config.vocabSize, config.ffnSize,
                             config.numHeads * options.seq});
  if (options.batch * options.seq > kMaxTensorElements / widest)
    return fieldError("--batch", llvm::formatv("batch {0} x seq {1} x {2} "
                                               "elements per position is too "
                                               "large",
                                               options.batch, options.seq,
                                               widest));
  return config;
}
