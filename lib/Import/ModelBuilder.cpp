//===- ModelBuilder.cpp - config -> tpc IR --------------------------------===//
//
// Emits the forward pass and loss of a decoder-only transformer. Parameters
// are function arguments named after their Hugging Face tensors; where the IR
// needs a different view (heads exposed), the argument has the view's shape
// and records the checkpoint shape in `tpc.hf_shape` (a row-major reshape).
//
//===----------------------------------------------------------------------===//

#include "tpc/Import/ModelBuilder.h"

#include "dialects/Tpc/IR/TpcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tpc;

namespace {

/// One parameter: its Hugging Face name, the shape the IR uses and, when the
/// checkpoint stores another shape, that shape.
struct ParamSpec {
  std::string name;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> hfShape;
};

/// Builds the forward function in two phases: parameters are declared first
/// (they become the leading function arguments), then the body reads them.
class ModelEmitter {
public:
  ModelEmitter(MLIRContext &context, const ModelConfig &config,
               const ImportOptions &options)
      : context(context), builder(&context), config(config), options(options),
        b(options.batch), s(options.seq.value_or(config.maxPositions)),
        h(config.hiddenSize),
        elementType(options.dtype == ElementDtype::BF16
                        ? Type(builder.getBF16Type())
                        : Type(builder.getF32Type())) {}

  OwningOpRef<ModuleOp> build();

private:
  // Parameter declaration -------------------------------------------------
  unsigned declare(StringRef name, ArrayRef<int64_t> shape,
                   ArrayRef<int64_t> hfShape = {}) {
    params.push_back({name.str(), SmallVector<int64_t>(shape),
                      SmallVector<int64_t>(hfShape)});
    return params.size() - 1;
  }
  void declareGpt2();
  void declareLlama();

  // Body emission ---------------------------------------------------------
  Value param(StringRef name) { return paramValues.lookup(name); }
  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elementType);
  }
  /// Creates an op at a location named `where`, tagged with the current
  /// layer when inside one.
  template <typename OpTy, typename... Args>
  OpTy make(StringRef where, Args &&...args) {
    auto op = OpTy::create(builder, NameLoc::get(builder.getStringAttr(where)),
                           std::forward<Args>(args)...);
    if (layer)
      op->setAttr(kLayerAttrName, builder.getI64IntegerAttr(*layer));
    return op;
  }
  Value dropout(StringRef where, Value x, double rate) {
    if (rate == 0.0)
      return x;
    return make<DropoutOp>(where, x, builder.getF64FloatAttr(rate),
                           builder.getI64IntegerAttr(nextStream++));
  }
  Value linear(StringRef where, Value x, StringRef weight,
               std::optional<StringRef> bias, WeightLayout layout) {
    Value biasValue = bias ? param(*bias) : Value();
    return make<LinearOp>(where, x, param(weight), biasValue,
                          WeightLayoutAttr::get(&context, layout));
  }
  /// [b, s, heads, d] -> [b, heads, s, d] and back.
  Value swapSeqAndHeads(StringRef where, Value x) {
    return make<TransposeOp>(where, x,
                             builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
  }
  Value attention(StringRef where, Value q, Value k, Value v);
  Value gpt2Layer(int64_t i, Value x);
  Value llamaLayer(int64_t i, Value x);
  Value lossAndLogits(Value hidden, Value labels, Value &logits);

  MLIRContext &context;
  OpBuilder builder;
  const ModelConfig &config;
  const ImportOptions &options;
  const int64_t b, s, h;
  Type elementType;
  SmallVector<ParamSpec> params;
  llvm::StringMap<Value> paramValues;
  std::optional<int64_t> layer;
  int64_t nextStream = 0;
};

} // namespace

void ModelEmitter::declareGpt2() {
  const int64_t a = config.numHeads, d = config.headDim, f = config.ffnSize;
  declare("transformer.wte.weight", {config.vocabSize, h});
  declare("transformer.wpe.weight", {config.maxPositions, h});
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    declare(p + "ln_1.weight", {h});
    declare(p + "ln_1.bias", {h});
    // c_attn is [h, 3h] holding Q, K, V blocks: expose [h, 3, heads, d] so
    // that tensor parallelism splits heads, not columns.
    declare(p + "attn.c_attn.weight", {h, 3, a, d}, {h, 3 * h});
    declare(p + "attn.c_attn.bias", {3, a, d}, {3 * h});
    declare(p + "attn.c_proj.weight", {h, h});
    declare(p + "attn.c_proj.bias", {h});
    declare(p + "ln_2.weight", {h});
    declare(p + "ln_2.bias", {h});
    declare(p + "mlp.c_fc.weight", {h, f});
    declare(p + "mlp.c_fc.bias", {f});
    declare(p + "mlp.c_proj.weight", {f, h});
    declare(p + "mlp.c_proj.bias", {h});
  }
  declare("transformer.ln_f.weight", {h});
  declare("transformer.ln_f.bias", {h});
  if (!config.tieWordEmbeddings)
    declare("lm_head.weight", {config.vocabSize, h});
}

void ModelEmitter::declareLlama() {
  const int64_t a = config.numHeads, kv = config.numKvHeads,
                d = config.headDim, f = config.ffnSize;
  declare("model.embed_tokens.weight", {config.vocabSize, h});
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    declare(p + "input_layernorm.weight", {h});
    // Projections are [out, in]; the out dimension is exposed as
    // [heads, head_dim].
    declare(p + "self_attn.q_proj.weight", {a, d, h}, {a * d, h});
    declare(p + "self_attn.k_proj.weight", {kv, d, h}, {kv * d, h});
    declare(p + "self_attn.v_proj.weight", {kv, d, h}, {kv * d, h});
    if (config.attentionBias) {
      declare(p + "self_attn.q_proj.bias", {a, d}, {a * d});
      declare(p + "self_attn.k_proj.bias", {kv, d}, {kv * d});
      declare(p + "self_attn.v_proj.bias", {kv, d}, {kv * d});
    }
    declare(p + "self_attn.o_proj.weight", {h, a * d});
    if (config.outputBias)
      declare(p + "self_attn.o_proj.bias", {h});
    declare(p + "post_attention_layernorm.weight", {h});
    declare(p + "mlp.gate_proj.weight", {f, h});
    declare(p + "mlp.up_proj.weight", {f, h});
    declare(p + "mlp.down_proj.weight", {h, f});
    if (config.mlpBias) {
      declare(p + "mlp.gate_proj.bias", {f});
      declare(p + "mlp.up_proj.bias", {f});
      declare(p + "mlp.down_proj.bias", {h});
    }
  }
  declare("model.norm.weight", {h});
  if (!config.tieWordEmbeddings)
    declare("lm_head.weight", {config.vocabSize, h});
}

Value ModelEmitter::attention(StringRef where, Value q, Value k, Value v) {
  double scale = 1.0 / std::sqrt(static_cast<double>(config.headDim));
  double rate = config.attentionDropout;
  if (options.attention == AttentionForm::Fused) {
    auto op = make<AttentionOp>(where, q, k, v, builder.getUnitAttr(),
                                builder.getF64FloatAttr(scale),
                                builder.getF64FloatAttr(rate),
                                builder.getI64IntegerAttr(
                                    rate > 0.0 ? nextStream : 0));
    if (rate > 0.0)
      ++nextStream;
    return op.getResult();
  }
  // Megatron-style chain: the scale is folded into QK^T and the causal mask
  // lives inside the softmax, so no [b, a, s, s] tensor is stashed for a
  // separate scale or mask op.
  int64_t groups = config.numHeads / config.numKvHeads;
  if (groups > 1) {
    k = make<RepeatOp>(where, k, builder.getI64IntegerAttr(1),
                       builder.getI64IntegerAttr(groups));
    v = make<RepeatOp>(where, v, builder.getI64IntegerAttr(1),
                       builder.getI64IntegerAttr(groups));
  }
  Value scores = make<BatchMatmulOp>(where, q, k, UnitAttr(),
                                     builder.getUnitAttr(),
                                     builder.getF64FloatAttr(scale));
  Value probs = make<SoftmaxOp>(where, scores, builder.getUnitAttr());
  probs = dropout(where, probs, rate);
  return make<BatchMatmulOp>(where, probs, v, UnitAttr(), UnitAttr(),
                             builder.getF64FloatAttr(1.0));
}

Value ModelEmitter::gpt2Layer(int64_t i, Value x) {
  const int64_t a = config.numHeads, d = config.headDim;
  std::string p = "transformer.h." + std::to_string(i) + ".";
  auto eps = builder.getF64FloatAttr(config.normEpsilon);
  auto where = [&](StringRef suffix) { return p + suffix.str(); };

  Value ln1 = make<LayerNormOp>(where("ln_1"), x, param(p + "ln_1.weight"),
                                param(p + "ln_1.bias"), eps);
  Value qkv = linear(where("attn.c_attn"), ln1, p + "attn.c_attn.weight",
                     StringRef(p + "attn.c_attn.bias"), WeightLayout::InOut);
  // [b, s, 3, a, d] -> three [b, a, s, d].
  SmallVector<Value, 3> heads;
  for (int64_t part = 0; part < 3; ++part) {
    Value slice = make<SliceOp>(where("attn"), qkv,
                                builder.getI64IntegerAttr(2),
                                builder.getI64IntegerAttr(part),
                                builder.getI64IntegerAttr(1));
    Value bsad = make<ReshapeOp>(where("attn"), tensor({b, s, a, d}), slice);
    heads.push_back(swapSeqAndHeads(where("attn"), bsad));
  }
  Value o = attention(where("attn"), heads[0], heads[1], heads[2]);
  o = swapSeqAndHeads(where("attn"), o);
  o = make<ReshapeOp>(where("attn"), tensor({b, s, h}), o);
  o = linear(where("attn.c_proj"), o, p + "attn.c_proj.weight",
             StringRef(p + "attn.c_proj.bias"), WeightLayout::InOut);
  o = dropout(where("attn.resid_dropout"), o, config.residualDropout);
  x = make<AddOp>(where("attn.residual"), x, o);

  Value ln2 = make<LayerNormOp>(where("ln_2"), x, param(p + "ln_2.weight"),
                                param(p + "ln_2.bias"), eps);
  Value fc = linear(where("mlp.c_fc"), ln2, p + "mlp.c_fc.weight",
                    StringRef(p + "mlp.c_fc.bias"), WeightLayout::InOut);
  fc = make<GeluOp>(where("mlp.act"), fc,
                    GeluApproximationAttr::get(
                        &context, config.geluTanh ? GeluApproximation::Tanh
                                                  : GeluApproximation::Erf));
  Value proj = linear(where("mlp.c_proj"), fc, p + "mlp.c_proj.weight",
                      StringRef(p + "mlp.c_proj.bias"), WeightLayout::InOut);
  proj = dropout(where("mlp.dropout"), proj, config.residualDropout);
  return make<AddOp>(where("mlp.residual"), x, proj);
}

Value ModelEmitter::llamaLayer(int64_t i, Value x) {
  const int64_t a = config.numHeads, d = config.headDim;
  std::string p = "model.layers." + std::to_string(i) + ".";
  auto eps = builder.getF64FloatAttr(config.normEpsilon);
  auto where = [&](StringRef suffix) { return p + suffix.str(); };
  auto bias = [&](StringRef name, bool present) -> std::optional<StringRef> {
    if (!present)
      return std::nullopt;
    return StringRef(name);
  };

  Value norm = make<RmsNormOp>(where("input_layernorm"), x,
                               param(p + "input_layernorm.weight"), eps);
  auto project = [&](StringRef proj, bool rotate) {
    std::string w = p + "self_attn." + proj.str() + ".weight";
    std::string bName = p + "self_attn." + proj.str() + ".bias";
    Value y = linear(where("self_attn." + proj.str()), norm, w,
                     bias(bName, config.attentionBias), WeightLayout::OutIn);
    y = swapSeqAndHeads(where("self_attn"), y);
    if (rotate)
      y = make<RotaryOp>(
          where("self_attn.rotary_emb"), y,
          builder.getF64FloatAttr(config.ropeTheta),
          builder.getI64IntegerAttr(0),
          config.ropeScaling.empty()
              ? DenseF64ArrayAttr()
              : builder.getDenseF64ArrayAttr(config.ropeScaling));
    return y;
  };
  Value q = project("q_proj", true);
  Value k = project("k_proj", true);
  Value v = project("v_proj", false);
  Value o = attention(where("self_attn"), q, k, v);
  o = swapSeqAndHeads(where("self_attn"), o);
  o = make<ReshapeOp>(where("self_attn"), tensor({b, s, a * d}), o);
  std::string oBias = p + "self_attn.o_proj.bias";
  o = linear(where("self_attn.o_proj"), o, p + "self_attn.o_proj.weight",
             bias(oBias, config.outputBias), WeightLayout::OutIn);
  x = make<AddOp>(where("self_attn.residual"), x, o);

  norm = make<RmsNormOp>(where("post_attention_layernorm"), x,
                         param(p + "post_attention_layernorm.weight"), eps);
  auto mlp = [&](StringRef proj, Value in) {
    std::string bName = p + "mlp." + proj.str() + ".bias";
    return linear(where("mlp." + proj.str()), in,
                  p + "mlp." + proj.str() + ".weight",
                  bias(bName, config.mlpBias), WeightLayout::OutIn);
  };
  // Both projections first, then up * act_fn(gate) (Hugging Face's
  // act_fn(gate) * up: a product of two floats is the same either way). The
  // silu and the mul are adjacent, and so are, in the backward, the mul that
  // gives the silu's output gradient (the second: up's gradient and its
  // weight gradient come first) and silu_grad: the CUDA device runs each
  // pair as one kernel.
  Value gateProj = mlp("gate_proj", norm);
  Value up = mlp("up_proj", norm);
  Value gate = make<SiluOp>(where("mlp.act_fn"), gateProj);
  Value down = mlp("down_proj", make<MulOp>(where("mlp"), up, gate));
  return make<AddOp>(where("mlp.residual"), x, down);
}

Value ModelEmitter::lossAndLogits(Value hidden, Value labels, Value &logits) {
  StringRef head = config.tieWordEmbeddings
                       ? (config.family == ModelFamily::Gpt2
                              ? "transformer.wte.weight"
                              : "model.embed_tokens.weight")
                       : "lm_head.weight";
  logits = linear("lm_head", hidden, head, std::nullopt, WeightLayout::OutIn);
  auto ce = make<CrossEntropyOp>("loss", logits, labels,
                                 builder.getI64IntegerAttr(-100),
                                 /*vocab=*/IntegerAttr(),
                                 /*vocab_blocks=*/IntegerAttr());
  return make<LossMeanOp>("loss", ce.getLossSum(), ce.getCount());
}

OwningOpRef<ModuleOp> ModelEmitter::build() {
  context.loadDialect<TpcDialect, func::FuncDialect>();
  if (config.family == ModelFamily::Gpt2)
    declareGpt2();
  else
    declareLlama();

  auto unknown = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
  module->getOperation()->setAttr("tpc.model_config",
                                  builder.getStringAttr(config.json));
  module->getOperation()->setAttr(
      "tpc.model",
      builder.getDictionaryAttr({
          builder.getNamedAttr("model_type",
                               builder.getStringAttr(config.modelType)),
          builder.getNamedAttr("layers",
                               builder.getI64IntegerAttr(config.numLayers)),
          builder.getNamedAttr("hidden",
                               builder.getI64IntegerAttr(config.hiddenSize)),
          builder.getNamedAttr("heads",
                               builder.getI64IntegerAttr(config.numHeads)),
          builder.getNamedAttr("kv_heads",
                               builder.getI64IntegerAttr(config.numKvHeads)),
          builder.getNamedAttr("head_dim",
                               builder.getI64IntegerAttr(config.headDim)),
          builder.getNamedAttr("ffn", builder.getI64IntegerAttr(config.ffnSize)),
          builder.getNamedAttr("vocab",
                               builder.getI64IntegerAttr(config.vocabSize)),
          builder.getNamedAttr("seq", builder.getI64IntegerAttr(s)),
          builder.getNamedAttr("batch", builder.getI64IntegerAttr(b)),
          builder.getNamedAttr("tie_word_embeddings",
                               builder.getBoolAttr(config.tieWordEmbeddings)),
      }));

  SmallVector<Type> argTypes;
  for (const ParamSpec &spec : params)
    argTypes.push_back(tensor(spec.shape));
  auto idsType = RankedTensorType::get({b, s}, builder.getI64Type());
  argTypes.push_back(idsType);
  argTypes.push_back(idsType);
  auto lossType = RankedTensorType::get({}, builder.getF32Type());
  SmallVector<Type> resultTypes{lossType};
  if (options.output == ModelOutput::Logits)
    resultTypes.push_back(tensor({b, s, config.vocabSize}));

  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, unknown, "forward",
                                   builder.getFunctionType(argTypes,
                                                           resultTypes));
  // All argument attributes at once: setting them one by one would rebuild
  // (and unique, forever) the array of every argument's attributes per call,
  // quadratic in the number of parameters.
  SmallVector<DictionaryAttr> argAttrs;
  argAttrs.reserve(params.size() + 2);
  for (const ParamSpec &spec : params) {
    SmallVector<NamedAttribute, 2> attrs{builder.getNamedAttr(
        kParamAttrName, builder.getStringAttr(spec.name))};
    if (!spec.hfShape.empty())
      attrs.push_back(builder.getNamedAttr(
          kHfShapeAttrName, builder.getDenseI64ArrayAttr(spec.hfShape)));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  for (StringRef input : {"input_ids", "labels"})
    argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kInputAttrName, builder.getStringAttr(input))));
  func.setAllArgAttrs(argAttrs);
  unsigned idsIndex = params.size(), labelsIndex = params.size() + 1;

  Block *entry = func.addEntryBlock();
  for (auto [i, spec] : llvm::enumerate(params))
    paramValues[spec.name] = entry->getArgument(i);
  builder.setInsertionPointToStart(entry);
  Value ids = entry->getArgument(idsIndex);
  Value labels = entry->getArgument(labelsIndex);

  Value x;
  Value finalHidden;
  if (config.family == ModelFamily::Gpt2) {
    Value tok = make<EmbeddingOp>("transformer.wte",
                                  param("transformer.wte.weight"), ids);
    Value pos = make<SliceOp>("transformer.wpe",
                              param("transformer.wpe.weight"),
                              builder.getI64IntegerAttr(0),
                              builder.getI64IntegerAttr(0),
                              builder.getI64IntegerAttr(s));
    x = make<AddOp>("transformer.embeddings", tok, pos);
    x = dropout("transformer.drop", x, config.embeddingDropout);
    for (int64_t i = 0; i < config.numLayers; ++i) {
      layer = i;
      x = gpt2Layer(i, x);
    }
    layer.reset();
    finalHidden = make<LayerNormOp>(
        "transformer.ln_f", x, param("transformer.ln_f.weight"),
        param("transformer.ln_f.bias"),
        builder.getF64FloatAttr(config.normEpsilon));
  } else {
    x = make<EmbeddingOp>("model.embed_tokens",
                          param("model.embed_tokens.weight"), ids);
    for (int64_t i = 0; i < config.numLayers; ++i) {
      layer = i;
      x = llamaLayer(i, x);
    }
    layer.reset();
    finalHidden = make<RmsNormOp>("model.norm", x, param("model.norm.weight"),
                                  builder.getF64FloatAttr(config.normEpsilon));
  }

  Value logits;
  Value loss = lossAndLogits(finalHidden, labels, logits);
  SmallVector<Value> results{loss};
  SmallVector<StringRef> outputNames{"loss"};
  if (options.output == ModelOutput::Logits) {
    results.push_back(logits);
    outputNames.push_back("logits");
  }
  func::ReturnOp::create(builder, unknown, results);
  // Results are bound to executable outputs by name, not by position.
  for (auto [i, name] : llvm::enumerate(outputNames))
    func.setResultAttr(i, kOutputAttrName, builder.getStringAttr(name));
  return module;
}

OwningOpRef<ModuleOp> mlir::tpc::buildModel(MLIRContext &context,
                                            const ModelConfig &config,
                                            const ImportOptions &options) {
  return ModelEmitter(context, config, options).build();
}
