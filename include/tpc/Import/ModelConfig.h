//===- ModelConfig.h - Hugging Face config.json parsing ---------*- C++ -*-===//
//
// Reads a Hugging Face `config.json` into a family-independent description of
// a decoder-only transformer. Every refusal is an llvm::Error whose message
// reads `<field>: <why>`, so the tool can print `error: <field>: <why>`.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_IMPORT_MODELCONFIG_H
#define TPC_IMPORT_MODELCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tpc {

enum class ModelFamily { Gpt2, Llama };
enum class ElementDtype { F32, BF16 };
enum class AttentionForm { Fused, Unfused };
enum class ModelOutput { Loss, Logits };

/// Everything the IR builder needs, with family defaults already applied.
struct ModelConfig {
  ModelFamily family = ModelFamily::Gpt2;
  std::string modelType;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t ffnSize = 0;
  int64_t maxPositions = 0;
  double normEpsilon = 1e-5;
  double ropeTheta = 10000.0;
  /// rope_scaling: empty (none, or `default`), [factor] (`linear`) or
  /// [factor, low_freq_factor, high_freq_factor,
  /// original_max_position_embeddings] (`llama3`).
  std::vector<double> ropeScaling;
  bool tieWordEmbeddings = true;
  /// GPT-2: GeLU in its tanh form (`gelu_new`) or exact (`gelu`).
  bool geluTanh = true;
  /// Biases of the q, k and v projections, and of the attention's output
  /// projection (Llama's attention_bias sets both; Qwen2 has the first only).
  bool attentionBias = false;
  bool outputBias = false;
  bool mlpBias = false;
  /// The config's torch_dtype ("float32", "bfloat16", ...), if it has one.
  std::string torchDtype;
  /// The config.json as imported: the user's, with --num-layers and
  /// --dropout written into its own keys (what a checkpoint directory's
  /// config.json holds, so that from_pretrained builds the model compiled).
  std::string json;
  double embeddingDropout = 0.0;
  double attentionDropout = 0.0;
  double residualDropout = 0.0;
};

/// Command-line choices that shape the imported program.
struct ImportOptions {
  int64_t batch = 1;
  /// The sequence length. Unset means the config's maximum number of
  /// positions; parseModelConfig fills it in. A value that is set (0
  /// included) must be in [1, positions].
  std::optional<int64_t> seq;
  /// Overrides the config's number of layers when set (must be positive).
  std::optional<int64_t> numLayers;
  ElementDtype dtype = ElementDtype::F32;
  AttentionForm attention = AttentionForm::Fused;
  std::optional<double> dropout;
  ModelOutput output = ModelOutput::Loss;
};

/// Upper bounds that keep every tensor type's element count far from int64
/// overflow while admitting trillion-parameter configurations.
inline constexpr int64_t kMaxVocab = int64_t(1) << 24;
inline constexpr int64_t kMaxHidden = int64_t(1) << 20;
/// Far above any published model (at most a few hundred layers). Every
/// layer costs IR (~25 ops): 10000 layers import in about a second and
/// 200 MB, 100000 would take gigabytes.
inline constexpr int64_t kMaxLayers = 10000;
inline constexpr int64_t kMaxSeq = int64_t(1) << 22;
inline constexpr int64_t kMaxBatch = int64_t(1) << 20;
/// Largest element count of one activation tensor, e.g. [batch, seq, vocab].
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 50;
/// Deepest nesting of arrays and objects accepted in a config.json (Hugging
/// Face configs nest a few levels); deeper input is refused before parsing,
/// which recurses once per level.
inline constexpr int64_t kMaxJsonDepth = 64;
/// Largest config.json accepted, in bytes (real ones are a few KiB).
inline constexpr int64_t kMaxConfigBytes = int64_t(16) << 20;

/// Parses `json` (the text of a config.json) and applies `options`
/// (overrides of layers, dropout; checks of seq and batch; fills in the
/// default seq). The result is fully validated: the builder may rely on every
/// divisibility and on every tensor's element count fitting in int64. Keys
/// the importer does not use (architectures, torch_dtype, bos_token_id, ...)
/// are ignored; a key given twice at the top level is refused (Python's json
/// keeps the last, llvm::json the first).
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json,
                                             ImportOptions &options);

/// Reads the config file at `path` ("-" for stdin), at most kMaxConfigBytes,
/// and parses it as parseModelConfig does. A file that cannot be read is
/// refused as `<path>: <why>`.
llvm::Expected<ModelConfig> parseModelConfigFile(llvm::StringRef path,
                                                 ImportOptions &options);

} // namespace mlir::tpc

#endif // TPC_IMPORT_MODELCONFIG_H
