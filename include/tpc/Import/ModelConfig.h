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
  bool tieWordEmbeddings = true;
  /// GPT-2: GeLU in its tanh form (`gelu_new`) or exact (`gelu`).
  bool geluTanh = true;
  bool attentionBias = false;
  bool mlpBias = false;
  double embeddingDropout = 0.0;
  double attentionDropout = 0.0;
  double residualDropout = 0.0;
};

/// Command-line choices that shape the imported program.
struct ImportOptions {
  int64_t batch = 1;
  /// 0 means the config's maximum number of positions.
  int64_t seq = 0;
  /// 0 means the config's number of layers.
  int64_t numLayers = 0;
  ElementDtype dtype = ElementDtype::F32;
  AttentionForm attention = AttentionForm::Fused;
  std::optional<double> dropout;
  ModelOutput output = ModelOutput::Loss;
};

/// Upper bounds that keep every tensor type's element count far from int64
/// overflow while admitting trillion-parameter configurations.
inline constexpr int64_t kMaxVocab = int64_t(1) << 24;
inline constexpr int64_t kMaxHidden = int64_t(1) << 20;
inline constexpr int64_t kMaxLayers = 100000;
inline constexpr int64_t kMaxSeq = int64_t(1) << 22;
inline constexpr int64_t kMaxBatch = int64_t(1) << 20;
/// Largest element count of one activation tensor, e.g. [batch, seq, vocab].
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 50;

/// Parses `json` (the text of a config.json) and applies `options`
/// (overrides of layers, dropout; checks of seq and batch). The result is
/// fully validated: the builder may rely on every divisibility.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json,
                                             ImportOptions &options);

} // namespace mlir::tpc

#endif // TPC_IMPORT_MODELCONFIG_H
