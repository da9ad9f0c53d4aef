//===- ModelConfigTest.cpp - config.json parsing --------------------------===//

#include "tpc/Import/ModelConfig.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

using namespace mlir::tpc;

namespace {

std::string errorOf(llvm::StringRef json, ImportOptions options = {}) {
  llvm::Expected<ModelConfig> config = parseModelConfig(json, options);
  if (config)
    return "";
  return llvm::toString(config.takeError());
}

/// Parses a config that must be accepted.
ModelConfig parse(llvm::StringRef json, ImportOptions &options) {
  llvm::Expected<ModelConfig> config = parseModelConfig(json, options);
  if (!config) {
    ADD_FAILURE() << llvm::toString(config.takeError());
    return {};
  }
  return *config;
}

ModelConfig parse(llvm::StringRef json) {
  ImportOptions options;
  return parse(json, options);
}

/// The smallest configs each family accepts: every optional key absent.
constexpr const char *kMinimalGpt2 =
    R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
        "n_embd": 64, "n_layer": 2, "n_head": 4})";
constexpr const char *kMinimalLlama =
    R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
        "intermediate_size": 176, "num_hidden_layers": 2,
        "num_attention_heads": 8})";

/// `json` (an object) with `extra` (`"key": value, ...`) added at its end.
std::string with(llvm::StringRef json, llvm::StringRef extra) {
  llvm::StringRef body = json.rtrim();
  body = body.drop_back(); // the closing brace
  return (body + ", " + extra + "}").str();
}

TEST(ModelConfigTest, Gpt2NullInnerMeansFourTimesHidden) {
  ImportOptions options;
  llvm::Expected<ModelConfig> config = parseModelConfig(
      R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
          "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": null})",
      options);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->ffnSize, 256);
  EXPECT_EQ(config->headDim, 16);
  EXPECT_TRUE(config->tieWordEmbeddings);
  EXPECT_EQ(options.seq, 64) << "--seq defaults to n_positions";
}

TEST(ModelConfigTest, RefusesHiddenNotDivisibleByHeads) {
  EXPECT_EQ(errorOf(R"({"model_type": "gpt2", "vocab_size": 256,
                        "n_positions": 64, "n_embd": 100, "n_layer": 2,
                        "n_head": 12})"),
            "n_head: hidden size 100 is not divisible by 12 heads");
}

//===----------------------------------------------------------------------===//
// Family defaults
//===----------------------------------------------------------------------===//

TEST(ModelConfigTest, Gpt2Defaults) {
  ModelConfig c = parse(kMinimalGpt2);
  EXPECT_EQ(c.family, ModelFamily::Gpt2);
  EXPECT_EQ(c.modelType, "gpt2");
  EXPECT_EQ(c.vocabSize, 256);
  EXPECT_EQ(c.hiddenSize, 64);
  EXPECT_EQ(c.numLayers, 2);
  EXPECT_EQ(c.numHeads, 4);
  EXPECT_EQ(c.numKvHeads, 4) << "GPT-2 has no grouped-query attention";
  EXPECT_EQ(c.headDim, 16);
  EXPECT_EQ(c.ffnSize, 256) << "absent n_inner means 4 * n_embd";
  EXPECT_EQ(c.maxPositions, 64);
  EXPECT_TRUE(c.tieWordEmbeddings) << "GPT-2 ties its head to wte";
  EXPECT_TRUE(c.geluTanh) << "activation_function defaults to gelu_new";
  EXPECT_TRUE(c.attentionBias);
  EXPECT_TRUE(c.mlpBias);
  EXPECT_DOUBLE_EQ(c.normEpsilon, 1e-5);
  EXPECT_DOUBLE_EQ(c.embeddingDropout, 0.1);
  EXPECT_DOUBLE_EQ(c.attentionDropout, 0.1);
  EXPECT_DOUBLE_EQ(c.residualDropout, 0.1);
}

TEST(ModelConfigTest, Gpt2ExplicitValues) {
  ModelConfig c = parse(with(kMinimalGpt2,
                             R"("n_inner": 128, "activation_function": "gelu",
                                "tie_word_embeddings": false,
                                "layer_norm_epsilon": 1e-6,
                                "embd_pdrop": 0.0, "attn_pdrop": 0.25,
                                "resid_pdrop": 0.5)"));
  EXPECT_EQ(c.ffnSize, 128);
  EXPECT_FALSE(c.geluTanh);
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(c.normEpsilon, 1e-6);
  EXPECT_DOUBLE_EQ(c.embeddingDropout, 0.0);
  EXPECT_DOUBLE_EQ(c.attentionDropout, 0.25);
  EXPECT_DOUBLE_EQ(c.residualDropout, 0.5);
}

TEST(ModelConfigTest, Gpt2TanhGeluSpellings) {
  for (const char *act : {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"}) {
    ModelConfig c = parse(with(
        kMinimalGpt2, (llvm::Twine(R"("activation_function": ")") + act + "\"")
                          .str()));
    EXPECT_TRUE(c.geluTanh) << act;
  }
}

TEST(ModelConfigTest, LlamaDefaults) {
  ImportOptions options;
  ModelConfig c = parse(kMinimalLlama, options);
  EXPECT_EQ(c.family, ModelFamily::Llama);
  EXPECT_EQ(c.modelType, "llama");
  EXPECT_EQ(c.numHeads, 8);
  EXPECT_EQ(c.numKvHeads, 8) << "num_key_value_heads defaults to the heads";
  EXPECT_EQ(c.headDim, 8) << "head_dim defaults to hidden / heads";
  EXPECT_EQ(c.ffnSize, 176);
  EXPECT_EQ(c.maxPositions, 2048);
  EXPECT_EQ(options.seq, 2048);
  EXPECT_FALSE(c.tieWordEmbeddings) << "Llama has a separate lm_head";
  EXPECT_FALSE(c.attentionBias);
  EXPECT_FALSE(c.mlpBias);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 10000.0);
  EXPECT_DOUBLE_EQ(c.normEpsilon, 1e-6);
  EXPECT_DOUBLE_EQ(c.embeddingDropout, 0.0);
  EXPECT_DOUBLE_EQ(c.attentionDropout, 0.0);
  EXPECT_DOUBLE_EQ(c.residualDropout, 0.0);
}

TEST(ModelConfigTest, LlamaExplicitValues) {
  ModelConfig c = parse(with(kMinimalLlama,
                             R"("num_key_value_heads": 2, "head_dim": 32,
                                "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
                                "tie_word_embeddings": true,
                                "attention_bias": true, "mlp_bias": true,
                                "attention_dropout": 0.1,
                                "max_position_embeddings": 8192,
                                "hidden_act": "silu", "rope_scaling": null,
                                "partial_rotary_factor": 1.0)"));
  EXPECT_EQ(c.numKvHeads, 2);
  EXPECT_EQ(c.headDim, 32) << "an explicit head_dim need not be hidden/heads";
  EXPECT_DOUBLE_EQ(c.ropeTheta, 500000.0);
  EXPECT_DOUBLE_EQ(c.normEpsilon, 1e-5);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_TRUE(c.attentionBias);
  EXPECT_TRUE(c.mlpBias);
  EXPECT_DOUBLE_EQ(c.attentionDropout, 0.1);
  EXPECT_EQ(c.maxPositions, 8192);
}

TEST(ModelConfigTest, LlamaExplicitHeadDimNeedNotDivideHidden) {
  ModelConfig c = parse(R"({"model_type": "llama", "vocab_size": 256,
                            "hidden_size": 66, "intermediate_size": 176,
                            "num_hidden_layers": 1, "num_attention_heads": 4,
                            "head_dim": 16})");
  EXPECT_EQ(c.headDim, 16);
}

TEST(ModelConfigTest, IgnoresUnusedHuggingFaceKeys) {
  ModelConfig c = parse(R"({
    "_name_or_path": "meta-llama/Llama-3.2-1B",
    "architectures": ["LlamaForCausalLM"],
    "bos_token_id": 128000, "eos_token_id": [128001, 128008],
    "pad_token_id": null, "initializer_range": 0.02,
    "model_type": "llama", "vocab_size": 256, "hidden_size": 64,
    "intermediate_size": 176, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 4,
    "pretraining_tp": 1, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0", "use_cache": true,
    "task_specific_params": {"a": {"b": [1, 2, {"c": null}]}},
    "quantization_config": {"n_embd": "ignored", "n_embd": "nested keys"}
  })");
  EXPECT_EQ(c.numKvHeads, 4);
}

TEST(ModelConfigTest, AcceptsByteOrderMark) {
  ModelConfig c = parse(std::string("\xEF\xBB\xBF") + kMinimalGpt2);
  EXPECT_EQ(c.hiddenSize, 64);
}

TEST(ModelConfigTest, IntegralDoublesAreIntegers) {
  ModelConfig c = parse(R"({"model_type": "gpt2", "vocab_size": 256.0,
                            "n_positions": 64, "n_embd": 6.4e1,
                            "n_layer": 2, "n_head": 4})");
  EXPECT_EQ(c.vocabSize, 256);
  EXPECT_EQ(c.hiddenSize, 64);
}

TEST(ModelConfigTest, NegativeZeroDropoutIsZero) {
  ModelConfig c = parse(with(kMinimalGpt2, R"("attn_pdrop": -0.0)"));
  EXPECT_EQ(c.attentionDropout, 0.0);
  EXPECT_FALSE(std::signbit(c.attentionDropout));
}

//===----------------------------------------------------------------------===//
// Command-line overrides
//===----------------------------------------------------------------------===//

TEST(ModelConfigTest, NumLayersOverride) {
  ImportOptions options;
  options.numLayers = 7;
  EXPECT_EQ(parse(kMinimalGpt2, options).numLayers, 7);
  ImportOptions none;
  EXPECT_EQ(parse(kMinimalGpt2, none).numLayers, 2) << "unset keeps n_layer";
}

TEST(ModelConfigTest, DropoutOverrideReplacesEveryRate) {
  ImportOptions options;
  options.dropout = 0.2;
  ModelConfig c = parse(with(kMinimalGpt2, R"("embd_pdrop": 0.05,
                                               "attn_pdrop": 0.1,
                                               "resid_pdrop": 0.15)"),
                        options);
  EXPECT_DOUBLE_EQ(c.embeddingDropout, 0.2);
  EXPECT_DOUBLE_EQ(c.attentionDropout, 0.2);
  EXPECT_DOUBLE_EQ(c.residualDropout, 0.2);

  ImportOptions zero;
  zero.dropout = 0.0;
  c = parse(kMinimalGpt2, zero);
  EXPECT_EQ(c.embeddingDropout, 0.0);
  EXPECT_EQ(c.attentionDropout, 0.0);
  EXPECT_EQ(c.residualDropout, 0.0);

  ImportOptions llama;
  llama.dropout = 0.3;
  c = parse(kMinimalLlama, llama);
  EXPECT_DOUBLE_EQ(c.attentionDropout, 0.3);
}

TEST(ModelConfigTest, SeqDefaultsToPositionsAndKeepsExplicitValue) {
  ImportOptions options;
  parse(kMinimalGpt2, options);
  EXPECT_EQ(options.seq, 64);

  ImportOptions explicitSeq;
  explicitSeq.seq = 16;
  parse(kMinimalGpt2, explicitSeq);
  EXPECT_EQ(explicitSeq.seq, 16);

  ImportOptions full;
  full.seq = 64;
  parse(kMinimalGpt2, full);
  EXPECT_EQ(full.seq, 64) << "exactly n_positions is allowed";
}

TEST(ModelConfigTest, RefusesBadOptions) {
  ImportOptions longSeq;
  longSeq.seq = 65;
  EXPECT_EQ(errorOf(kMinimalGpt2, longSeq),
            "--seq: 65 exceeds the model's 64 positions");

  ImportOptions zeroSeq;
  zeroSeq.seq = 0;
  EXPECT_EQ(errorOf(kMinimalGpt2, zeroSeq), "--seq: must be positive but is 0");

  ImportOptions zeroLayers;
  zeroLayers.numLayers = 0;
  EXPECT_EQ(errorOf(kMinimalGpt2, zeroLayers),
            "--num-layers: must be positive but is 0");

  ImportOptions manyLayers;
  manyLayers.numLayers = kMaxLayers + 1;
  EXPECT_EQ(errorOf(kMinimalGpt2, manyLayers),
            "--num-layers: 10001 exceeds the supported maximum 10000");

  ImportOptions zeroBatch;
  zeroBatch.batch = 0;
  EXPECT_EQ(errorOf(kMinimalGpt2, zeroBatch),
            "--batch: must be positive but is 0");

  ImportOptions hugeBatch;
  hugeBatch.batch = INT64_MAX;
  EXPECT_EQ(errorOf(kMinimalGpt2, hugeBatch),
            "--batch: 9223372036854775807 exceeds the supported maximum "
            "1048576");

  ImportOptions oneDropout;
  oneDropout.dropout = 1.0;
  EXPECT_EQ(errorOf(kMinimalGpt2, oneDropout),
            "--dropout: dropout rate 1 is outside [0, 1)");

  ImportOptions nanDropout;
  nanDropout.dropout = std::nan("");
  EXPECT_EQ(errorOf(kMinimalGpt2, nanDropout),
            "--dropout: dropout rate nan is outside [0, 1)");
}

TEST(ModelConfigTest, RefusesTensorsTooLargeForInt64) {
  // Each size is within its own bound; the logits [batch, seq, vocab] are not.
  ImportOptions options;
  options.batch = kMaxBatch;
  options.seq = 1024;
  EXPECT_EQ(errorOf(R"({"model_type": "gpt2", "vocab_size": 16777216,
                        "n_positions": 1024, "n_embd": 64, "n_layer": 1,
                        "n_head": 4})",
                    options),
            "--batch: batch 1048576 x seq 1024 x 16777216 elements per "
            "position exceed the supported 1125899906842624 elements per "
            "tensor");

  // A tiny vocabulary and FFN do not hide the fused QKV projection
  // [batch, seq, 3 * hidden].
  ImportOptions wide;
  wide.batch = kMaxBatch;
  wide.seq = 4096;
  EXPECT_EQ(errorOf(R"({"model_type": "gpt2", "vocab_size": 1,
                        "n_positions": 4096, "n_embd": 1048576,
                        "n_layer": 1, "n_head": 1, "n_inner": 1})",
                    wide),
            "--batch: batch 1048576 x seq 4096 x 3145728 elements per "
            "position exceed the supported 1125899906842624 elements per "
            "tensor");
}

//===----------------------------------------------------------------------===//
// Refused configs
//===----------------------------------------------------------------------===//

struct BadConfig {
  const char *json;
  const char *error;
};

TEST(ModelConfigTest, RefusesBadConfigs) {
  const BadConfig cases[] = {
      // Structure.
      {"", "config: empty file"},
      {" \n\t ", "config: empty file"},
      {"[1, 2]", "config: expected a JSON object but got an array"},
      {"\"gpt2\"", "config: expected a JSON object but got a string"},
      {"null", "config: expected a JSON object but got null"},
      {R"({"model_type": "gpt2",})",
       "config: invalid JSON: [1:23, byte=23]: Expected object key"},
      {R"({"model_type": NaN})",
       "config: invalid JSON: [1:16, byte=16]: Invalid JSON value"},
      {R"({"model_type": "gpt2", "model_type": "llama"})",
       "model_type: given more than once"},
      {R"({"model_type": "gpt2", "model\u005ftype": "llama"})",
       "model_type: given more than once"},
      // Model type.
      {R"({"vocab_size": 256})", "model_type: missing"},
      {R"({"model_type": null})", "model_type: missing"},
      {R"({"model_type": 2})", "model_type: expected a string but got a number"},
      {R"({"model_type": "bert"})",
       "model_type: unsupported model type 'bert' (supported: gpt2, llama, "
       "mistral, qwen2)"},
      {R"({"model_type": "a'b\\c\u001b"})",
       "model_type: unsupported model type 'a\\x27b\\x5Cc\\x1B' (supported: "
       "gpt2, llama, mistral, qwen2)"},
      // Types and ranges of sizes.
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_layer": 2, "n_head": 4})",
       "n_embd: missing"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": "768", "n_layer": 2, "n_head": 4})",
       "n_embd: expected an integer but got a string"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 768.5, "n_layer": 2, "n_head": 4})",
       "n_embd: expected an integer but got 768.5"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": true, "n_layer": 2, "n_head": 4})",
       "n_embd: expected an integer but got a boolean"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": [64], "n_layer": 2, "n_head": 4})",
       "n_embd: expected an integer but got an array"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": -64, "n_layer": 2, "n_head": 4})",
       "n_embd: must be positive but is -64"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 0, "n_head": 4})",
       "n_layer: must be positive but is 0"},
      {R"({"model_type": "gpt2", "vocab_size": 1e12, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4})",
       "vocab_size: 1000000000000 exceeds the supported maximum 16777216"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 1e12,
           "n_embd": 64, "n_layer": 2, "n_head": 4})",
       "n_positions: 1000000000000 exceeds the supported maximum 4194304"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 9223372036854775808, "n_head": 4})",
       "n_layer: 9.223372036854776e+18 exceeds the supported maximum 10000"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": -1e19, "n_head": 4})",
       "n_layer: must be positive but is -1e+19"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 1e400, "n_layer": 2, "n_head": 4})",
       "n_embd: inf exceeds the supported maximum 1048576"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": 0})",
       "n_inner: must be positive but is 0"},
      // Divisibility and shapes.
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 8, "num_key_value_heads": 3})",
       "num_key_value_heads: 3 key/value heads do not divide 8 attention "
       "heads"},
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 6})",
       "num_attention_heads: hidden size 64 is not divisible by 6 heads"},
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 4, "head_dim": 15})",
       "head_dim: 15 must be even for rotary embeddings"},
      // Unsupported features.
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 8,
           "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})",
       "rope_scaling.low_freq_factor: missing (llama3 needs it)"},
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 8, "partial_rotary_factor": 0.5})",
       "partial_rotary_factor: partial rotary embeddings (0.5) are not "
       "supported"},
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 8, "hidden_act": "gelu"})",
       "hidden_act: unsupported activation 'gelu' (supported: silu)"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4,
           "activation_function": "relu"})",
       "activation_function: unsupported activation 'relu' (supported: "
       "gelu_new, gelu_pytorch_tanh, gelu_fast, gelu)"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4,
           "scale_attn_weights": false})",
       "scale_attn_weights: unscaled attention is not supported"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4,
           "tie_word_embeddings": "yes"})",
       "tie_word_embeddings: expected true or false but got a string"},
      // Real-valued fields.
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4, "attn_pdrop": 1})",
       "attn_pdrop: dropout rate 1 is outside [0, 1)"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4, "resid_pdrop": -0.5})",
       "resid_pdrop: dropout rate -0.5 is outside [0, 1)"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4, "embd_pdrop": "0.1"})",
       "embd_pdrop: expected a number but got a string"},
      {R"({"model_type": "gpt2", "vocab_size": 256, "n_positions": 64,
           "n_embd": 64, "n_layer": 2, "n_head": 4,
           "layer_norm_epsilon": 0})",
       "layer_norm_epsilon: must be positive but is 0"},
      {R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 64,
           "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 8, "rope_theta": 1e400})",
       "rope_theta: must be finite but is inf"},
  };
  for (const BadConfig &bad : cases)
    EXPECT_EQ(errorOf(bad.json), bad.error) << bad.json;
}

TEST(ModelConfigTest, RefusesDeepNestingWithoutRecursing) {
  // Deep enough to overflow the stack of a recursive parser.
  std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(errorOf(deep), "config: JSON nested deeper than 64 levels");
  std::string inKey = with(kMinimalGpt2, "\"task_specific_params\": " +
                                             std::string(65, '[') +
                                             std::string(65, ']'));
  EXPECT_EQ(errorOf(inKey), "config: JSON nested deeper than 64 levels");
  // Brackets inside strings are text, not nesting.
  std::string inString =
      with(kMinimalGpt2, "\"note\": \"" + std::string(1000, '[') + "\\\"\"");
  EXPECT_EQ(errorOf(inString), "");
}

TEST(ModelConfigTest, CutsLongValuesInMessages) {
  std::string longType(1000, 'x');
  std::string error =
      errorOf("{\"model_type\": \"" + longType + "\"}");
  EXPECT_EQ(error, "model_type: unsupported model type '" +
                       std::string(64, 'x') +
                       "'... (supported: gpt2, llama, mistral, qwen2)");
}

TEST(ModelConfigTest, RefusesOversizedText) {
  std::string huge =
      with(kMinimalGpt2, "\"pad\": \"" +
                             std::string(kMaxConfigBytes, ' ') + "\"");
  EXPECT_EQ(errorOf(huge).rfind("config: ", 0), 0u);
  EXPECT_NE(errorOf(huge).find("exceed the supported maximum 16777216"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST(ModelConfigTest, ReadsConfigFile) {
  llvm::SmallString<128> path;
  int fd;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("tpc-config", "json", fd,
                                                  path));
  llvm::FileRemover remover(path);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << kMinimalLlama;
  }
  ImportOptions options;
  llvm::Expected<ModelConfig> config = parseModelConfigFile(path, options);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->numHeads, 8);
}

TEST(ModelConfigTest, RefusesMissingFile) {
  ImportOptions options;
  llvm::Expected<ModelConfig> config =
      parseModelConfigFile("/nonexistent/config.json", options);
  ASSERT_FALSE(bool(config));
  EXPECT_EQ(llvm::toString(config.takeError()),
            "/nonexistent/config.json: No such file or directory");
}

} // namespace
