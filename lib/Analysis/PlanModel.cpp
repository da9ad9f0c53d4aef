//===- PlanModel.cpp - closed forms of a parallel plan --------------------===//

#include "tpc/Analysis/PlanModel.h"

#include "tpc/Analysis/Cost.h"
#include "tpc/Analysis/Simulator.h"

#include "dialects/Dist/Transforms/LayerBalance.h"
#include "dialects/Dist/Transforms/PipelineSchedule.h"
#include "dialects/Rt/Transforms/ReductionBuckets.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

using namespace mlir::tpc;
namespace pipeline = mlir::dist::pipeline;

int64_t mlir::tpc::countLayerParameters(const TransformerShape &m) {
  int64_t h = m.hidden, q = m.heads * m.headDim, kv = m.kvHeads * m.headDim;
  if (m.llama)
    return 2 * h + h * q + 2 * h * kv + q * h + 3 * h * m.ffn;
  // Two layer norms; qkv, projection and the MLP's two matrices with their
  // biases.
  return 2 * h + (h * (q + 2 * kv) + q + 2 * kv) + (q * h + h) + 2 * h +
         (h * m.ffn + m.ffn) + (m.ffn * h + h);
}

std::vector<double> mlir::tpc::layerVectorElements(const TransformerShape &m,
                                                   double tp) {
  double h = m.hidden, q = m.heads * m.headDim / tp;
  double kv = std::max(1.0, m.kvHeads / tp) * m.headDim, ffn = m.ffn / tp;
  if (m.llama)
    return {h, h};
  // Two norms' weights and biases; the qkv, projection, MLP biases.
  return {h, h, h, h, q + 2 * kv, h, ffn, h};
}

std::vector<double> mlir::tpc::layerTensorElements(const TransformerShape &m,
                                                   double tp) {
  double h = m.hidden, q = m.heads * m.headDim / tp;
  double kv = std::max(1.0, m.kvHeads / tp) * m.headDim, ffn = m.ffn / tp;
  // In the order the backward finishes them: the MLP's down (with its
  // bias) and up projections, the second norm, the attention's output
  // projection, then its input projections and the first norm.
  if (m.llama)
    return {ffn * h, h * ffn, h * ffn, h, q * h, h * kv, h * kv, h * q, h};
  return {ffn * h, h, h * ffn,          ffn,        h, h,
          q * h,   h, h * (q + 2 * kv), q + 2 * kv, h, h};
}

int64_t mlir::tpc::countParameters(const TransformerShape &m) {
  int64_t h = m.hidden;
  // The embedding (and learned positions), the final norm, an untied head.
  int64_t rest = m.llama ? m.vocab * h + h : m.vocab * h + m.seq * h + 2 * h;
  if (!m.tiedEmbeddings)
    rest += m.vocab * h;
  return m.layers * countLayerParameters(m) + rest;
}

double mlir::tpc::narayananParameters(double l, double h, double V,
                                      double s) {
  return 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
}

double mlir::tpc::korthikantiModelFlops(double B, double l, double s,
                                        double h, double V) {
  return 72 * B * l * s * h * h * (1 + s / (6 * h) + V / (12 * h * l));
}

double mlir::tpc::narayananRecomputeFlops(double B, double l, double s,
                                          double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

namespace {

/// One layer's activations on one device, per microbatch, in bytes per
/// s·b·h: `whole` unsplit over tp (split by sequence parallelism), `split`
/// split over tp.
struct LayerActivations {
  double whole = 0, split = 0;
};

double perDevice(const LayerActivations &bytes, const PlanChoice &plan) {
  double t = static_cast<double>(plan.tp);
  return plan.sequenceParallel ? (bytes.whole + bytes.split) / t
                               : bytes.whole + bytes.split / t;
}

} // namespace

int64_t mlir::tpc::stashBytesPerLayer(const TransformerShape &m,
                                      const PlanChoice &plan) {
  // Korthikanti Table 2 (34 + 5as/h 16-bit units of s·b·h, tp and sp
  // dividing as there) generalized to the compiler's stash of GPT-2 and
  // Llama layers (test/unit CostModelTest, benchmarks/plan-memory.py).
  double sbh = static_cast<double>(m.seq) * plan.microbatchSize * m.hidden;
  double e = static_cast<double>(m.elementBytes);
  double h = m.hidden, a = m.heads, d = m.headDim, f = m.ffn / h;
  LayerActivations bytes;
  if (plan.remat == "full") {
    // The layer's input alone; Llama's twice without sequence parallelism
    // (tp > 1): its residual stays a partial sum into the norm's
    // all-reduce (dist-propagate), and the recomputation reads both the
    // partial sum (the residual add) and the reduced one (the norm).
    bytes.whole = m.llama && plan.tp > 1 && !plan.sequenceParallel ? 2 * e : e;
  } else {
    // The two norms' inputs and outputs, and a dropout mask (a byte an
    // element) after the attention and after the MLP.
    bytes.whole = 4 * e + (m.residualDropout > 0 ? 2 : 0);
    // q, k and v, the attention's output, and the MLP's: GPT-2's fc1 output
    // and GeLU; Llama's gate, up and their product (SiLU(gate) is
    // recomputed from the gate: tpc-autodiff's recomputeSilus).
    bytes.split =
        e * ((a + 2 * m.kvHeads) * d / h + a * d / h + (m.llama ? 3 : 2) * f);
    double scores = a * m.seq / h;
    if (m.fusedAttention) {
      // The rows' log-sum-exps (fp32).
      bytes.split += 4 * a / h;
    } else {
      // k and v repeated over each group's query heads, and unless
      // recomputed (selective) the s×s chain: the softmax, and with an
      // attention dropout its mask and output.
      bytes.split += e * 2 * (a - m.kvHeads) * d / h;
      if (plan.remat != "selective")
        bytes.split += scores * (e + (m.attentionDropout > 0 ? 1 + e : 0));
    }
  }
  return static_cast<int64_t>(std::llround(perDevice(bytes, plan) * sbh));
}

DeferredWeightBytes
mlir::tpc::deferredWeightBytesPerLayer(const TransformerShape &m,
                                       const PlanChoice &plan) {
  double sbh = static_cast<double>(m.seq) * plan.microbatchSize * m.hidden;
  double e = static_cast<double>(m.elementBytes);
  double h = m.hidden, a = m.heads, d = m.headDim, f = m.ffn / h;
  // W reads each linear's input (the norms' outputs, the attention's
  // output, the MLP's activation); the norms' parameter gradients are
  // computed in B.
  LayerActivations inputs{2 * e, e * (a * d / h + f)};
  // B writes each linear's output gradient (q, k, v and the MLP's up
  // projections split over tp, the two row-parallel outputs whole; without
  // sequence parallelism a row-parallel output's gradient is a partial sum
  // until its all-reduce, which GPT-2's bias gradient reads too, so that
  // only the reduced one is held: dist-propagate).
  LayerActivations gradients{
      e * 2, e * ((a + 2 * m.kvHeads) * d / h + (m.llama ? 2 : 1) * f)};
  return {static_cast<int64_t>(std::llround(perDevice(inputs, plan) * sbh)),
          static_cast<int64_t>(std::llround(perDevice(gradients, plan) * sbh))};
}

/// With unfused attention and recomputation (selective or full), what a
/// layer's backward holds at its attention beside the stash: three s×s
/// buffers (the rebuilt probabilities and two gradients: of the dropped
/// probabilities and of the probabilities, or of the probabilities and of
/// the scores), the dropout's mask (a byte an element), and with full
/// recomputation the rebuilt attention's other activations. With full
/// recomputation and tp > 1 without sp, rt-overlap-collectives moves the
/// layer before's rebuilt attention (up to its all-reduce) ahead of this
/// one's backward, which then runs behind the all-reduce: that attention's
/// probabilities (and dropped ones) and activations are live as well.
static int64_t attentionBackwardBytes(const TransformerShape &m,
                                      const PlanChoice &plan) {
  double e = m.elementBytes, h = m.hidden, a = m.heads, kv = m.kvHeads,
         d = m.headDim;
  double scores = a * m.seq / h;
  bool dropout = m.attentionDropout > 0;
  bool full = plan.remat == "full";
  bool layerBefore = full && plan.tp > 1 && !plan.sequenceParallel;
  LayerActivations bytes;
  bytes.split = scores * (3 * e + (dropout ? 1 : 0));
  if (layerBefore)
    bytes.split += scores * (dropout ? 2 * e + 1 : e);
  if (full) {
    // The norm's output and the projection's, q, k, v, k and v repeated
    // over each group's query heads, and the attention's output.
    double layers = layerBefore ? 2 : 1;
    bytes.whole += layers * 2 * e;
    bytes.split +=
        layers * e * ((a + 2 * kv) * d + 2 * (a - kv) * d + a * d) / h;
  }
  // With sequence parallelism, the rebuilt norm's output and the output
  // gradient of the projections, gathered whole over the sequence.
  double whole = plan.sequenceParallel ? 2 * e : 0;
  return static_cast<int64_t>(std::llround((perDevice(bytes, plan) + whole) *
                                           m.seq * plan.microbatchSize * h));
}

/// Without recomputation, what a layer's backward holds beside the stash
/// (which it frees as it goes): the residual's two gradients, and the
/// larger of the MLP's (its activation's and its input's) and the
/// attention's (q, k and v's, head-major and token-major, and unfused, the
/// probabilities' and the scores').
static int64_t backwardGradientBytes(const TransformerShape &m,
                                     const PlanChoice &plan) {
  double e = m.elementBytes, h = m.hidden, a = m.heads, d = m.headDim,
         f = m.ffn / h;
  LayerActivations mlp{2 * e, 2 * f * e};
  LayerActivations attention{2 * e,
                             e * (2 * (a + 2 * m.kvHeads) * d / h +
                                  (m.fusedAttention ? 0 : 2 * a * m.seq / h))};
  return static_cast<int64_t>(
      std::llround(std::max(perDevice(mlp, plan), perDevice(attention, plan)) *
                   m.seq * plan.microbatchSize * h));
}

namespace {

/// Busy time by category.
struct Busy {
  double compute = 0, recompute = 0, communication = 0;
  double total() const { return compute + recompute + communication; }
  Busy &operator+=(const Busy &o) {
    compute += o.compute, recompute += o.recompute,
        communication += o.communication;
    return *this;
  }
  Busy scaled(double k) const {
    return {compute * k, recompute * k, communication * k};
  }
};

/// One microbatch's work of one layer, the embedding and the head, on one
/// device: forward, input-gradient backward (with the recomputation), and
/// weight-gradient backward.
struct PhaseCosts {
  Busy forward, backward, weight;
  PhaseCosts &operator+=(const PhaseCosts &o) {
    forward += o.forward, backward += o.backward, weight += o.weight;
    return *this;
  }
};

/// Memory-bound kernels' bytes by kind, each kind named as the replay names
/// it (an opcode, a CUDA device's fused group: its opcodes joined by '+', a
/// batch: "cast batch"), so that each is priced at its own fraction of the
/// memory bandwidth (Hardware::elementwiseEfficiencyOf).
struct BytesByKind {
  std::map<std::string, double> bytes;
  void add(llvm::StringRef kind, double kindBytes) {
    if (kindBytes != 0)
      bytes[kind.str()] += kindBytes;
  }
  void add(const BytesByKind &other, double times = 1) {
    for (const auto &[kind, kindBytes] : other.bytes)
      add(kind, times * kindBytes);
  }
};

/// The seconds `bytes` of a memory-bound `kind` take at its rate, launches
/// apart.
static double bandwidthSeconds(const Hardware &hw, llvm::StringRef kind,
                               double bytes) {
  return memoryBoundSeconds(hw, bytes, hw.elementwiseEfficiencyOf(kind)) -
         hw.kernelLaunchSeconds;
}

/// `kernels` memory-bound kernels (one at least) moving `moved`: their
/// launches and each kind's bytes at its rate.
static double kernelsSeconds(const Hardware &hw, const BytesByKind &moved,
                             double kernels) {
  double seconds = std::max(1.0, kernels) * hw.kernelLaunchSeconds;
  for (const auto &[kind, bytes] : moved.bytes)
    seconds += bandwidthSeconds(hw, kind, bytes);
  return seconds;
}

/// What a collective of `collective` seconds takes past `behind` seconds of
/// kernels it runs behind (a collective stream): the part that shows.
static double shows(double collective, double behind) {
  return std::max(0.0, collective - behind);
}

class CostBuilder {
public:
  CostBuilder(const TransformerShape &m, const PlanChoice &plan,
              const Hardware &hw, int64_t tpPerNode)
      : m(m), plan(plan), hw(hw), tpPerNode(tpPerNode) {
    peak = hw.peakFlops(m.elementBytes == 2 ? "bf16" : "fp32");
    if (peak == 0)
      peak = hw.peakFp32;
    tokens = static_cast<double>(plan.microbatchSize) * m.seq;
    t = static_cast<double>(plan.tp);
  }

  /// A GEMM of opcode `kind` (linear, linear_input_grad) over `rows` rows:
  /// a [rows, inner] operand and a [rows, cols] result.
  double gemm(double rows, double cols, double inner,
              llvm::StringRef kind = "linear") const {
    double bytes = (rows * inner + inner * cols + rows * cols) * m.elementBytes;
    return matmulSeconds(hw, 2 * rows * cols * inner, bytes, peak, nullptr,
                         unalignedCeiling(cols, inner, kind));
  }
  /// A weight gradient's GEMM: with several microbatches it adds into the
  /// f32 sum in place (rt-accumulate-weight-grads), reading the sum besides.
  double weightGemm(double rows, double cols, double inner) const {
    double bytes = (rows * inner + inner * cols + rows * cols) * m.elementBytes;
    if (plan.microbatches > 1)
      bytes += 4 * inner * cols;
    return matmulSeconds(hw, 2 * rows * cols * inner, bytes, peak, nullptr,
                         unalignedCeiling(cols, inner,
                                          plan.microbatches > 1
                                              ? "linear_weight_grad_accumulate"
                                              : "linear_weight_grad"));
  }
  /// The description's most for a 16-bit GEMM of `kind` whose rows
  /// (`cols` and `inner` elements) are not whole 16-byte units; 0 where
  /// they are, or in fp32.
  double unalignedCeiling(double cols, double inner,
                          llvm::StringRef kind) const {
    if (m.elementBytes == 4 ||
        gemmRowsAligned(
            {static_cast<int64_t>(cols), static_cast<int64_t>(inner)},
            static_cast<int64_t>(m.elementBytes)))
      return 0;
    return hw.gemmUnalignedEfficiencyOf(kind);
  }
  /// One memory-bound kernel of `kind` moving `bytes`.
  double memory(llvm::StringRef kind, double bytes) const {
    return memoryBoundSeconds(hw, bytes, hw.elementwiseEfficiencyOf(kind));
  }
  double kernels(const BytesByKind &moved, double count) const {
    return kernelsSeconds(hw, moved, count);
  }
  /// `n` more kernels' launches (memory() pays one).
  double launches(double n) const { return n * hw.kernelLaunchSeconds; }
  double tpCollective(CollectiveKind kind, double bytes) const {
    return collectiveSeconds(hw, kind, bytes, plan.tp, tpPerNode);
  }

  /// A microbatch's [tokens, hidden] activation, at the model's precision:
  /// what the tensor-parallel collectives and the stages' transfers move.
  double hiddenBytes() const { return tokens * m.hidden * m.elementBytes; }

  /// Whether the device fuses kernels as it loads them (the CUDA device:
  /// runtime/cuda/FusionPlan.h).
  bool fusesKernels() const { return hw.runtimeDevice == "cuda"; }
  /// A microbatch's [s, h] elements on a device, split over tp only with
  /// sequence parallelism: what the norms, dropouts and residual adds read.
  double wholeElements() const {
    return tokens * m.hidden / (plan.sequenceParallel ? t : 1);
  }
  std::string normKind() const { return m.llama ? "rms_norm" : "layer_norm"; }
  bool residualDropout() const { return m.residualDropout > 0; }
  /// On a CUDA device an add right after a product without bias goes into
  /// the product (C): Llama's residual adds where no collective comes
  /// between (without sequence parallelism).
  bool residualInProduct() const {
    return fusesKernels() && m.llama && !plan.sequenceParallel;
  }
  /// On a CUDA device each norm joins the residual add before it where that
  /// add is a kernel, one row kernel that writes the sum and the norm.
  bool normJoinsAdd() const { return fusesKernels() && !residualInProduct(); }
  /// With tp > 1 GPT-2 adds each row-parallel output's bias after the
  /// reduction (Megatron's order; the product cannot).
  bool biasAfterReduction() const { return !m.llama && plan.tp > 1; }
  /// A CUDA device's group of a residual branch: its bias (`bias`), the
  /// mask applied, the residual add and the norm after it (`withNorm`).
  std::string branchGroup(bool bias, bool withNorm) const {
    return std::string(bias ? "add+" : "") +
           (residualDropout() ? "apply_mask+" : "") + "add" +
           (withNorm ? "+" + normKind() : "");
  }
  /// Its bytes: the branch and the residual read, the mask too, the sum
  /// written, and the norm's result.
  double branchGroupBytes(bool withNorm) const {
    double e = m.elementBytes;
    return wholeElements() *
           ((residualDropout() ? 3 * e + 1 : 3 * e) + (withNorm ? e : 0));
  }
  /// Rows too wide for the CUDA norm backward's sums: its parameter
  /// gradients run apart.
  bool normParamsApart() const {
    return fusesKernels() && m.hidden > kCudaNormBackwardMostColumns;
  }
  /// A CUDA device's norm backward group: the parameter gradients (but
  /// apart), the input gradient, the residual add, and the mask of the
  /// branch before the norm (`withMask`), which writes the masked gradient
  /// beside its own.
  std::string normGroup(bool withMask) const {
    std::string norm = normKind();
    return (normParamsApart() ? "" : norm + "_param_grad+") + norm +
           "_input_grad+add" + (withMask ? "+apply_mask" : "");
  }
  double normGroupBytes(bool withMask) const {
    double e = m.elementBytes;
    return wholeElements() * (4 * e + (withMask ? e + 1 : 0));
  }
  double bandwidthSeconds(llvm::StringRef kind, double bytes) const {
    return ::bandwidthSeconds(hw, kind, bytes);
  }

  /// What a pipeline chunk's edges change of its layers' elementwise
  /// kernels on a CUDA device (layer() prices a layer between two of its
  /// chunk's). A chunk but the last ends with its last MLP branch's group
  /// without the norm after it: the next chunk's first norm runs alone (a
  /// stage's input is no kernel's sum). Backward, a chunk but the last
  /// applies that branch's mask to the gradient it receives as a kernel of
  /// its own, and a chunk but the first begins with a norm backward group
  /// without it; with full recomputation each layer's recomputed forward
  /// applies it anyway.
  PhaseCosts chunkEdges(bool first, bool last) const {
    PhaseCosts costs;
    if (!fusesKernels())
      return costs;
    if (!last && normJoinsAdd()) {
      bool bias = biasAfterReduction();
      costs.forward.compute =
          memory(normKind(), wholeElements() * 2 * m.elementBytes) -
          bandwidthSeconds(branchGroup(bias, true), branchGroupBytes(true)) +
          bandwidthSeconds(branchGroup(bias, false), branchGroupBytes(false));
    }
    if (!residualDropout() || plan.remat == "full")
      return costs;
    if (!last)
      costs.backward.compute +=
          memory("apply_mask", wholeElements() * (2 * m.elementBytes + 1));
    if (!first)
      costs.backward.compute +=
          bandwidthSeconds(normGroup(false), normGroupBytes(false)) -
          bandwidthSeconds(normGroup(true), normGroupBytes(true));
    return costs;
  }

  /// The two tensor-parallel collectives of a layer's half (attention or
  /// MLP) in one direction: an all-reduce, or with sequence parallelism an
  /// all-gather and a reduce-scatter.
  double layerCollectives() const {
    if (plan.tp == 1)
      return 0;
    double bytes = hiddenBytes();
    if (plan.sequenceParallel)
      return 2 * (tpCollective(CollectiveKind::AllGather, bytes) +
                  tpCollective(CollectiveKind::ReduceScatter, bytes));
    return 2 * tpCollective(CollectiveKind::AllReduce, bytes);
  }

  /// Whether W runs apart from B, later (the zero-bubble schedules).
  bool deferredWeightGradients() const {
    std::optional<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(plan.schedule);
    return plan.pp > 1 && kind &&
           (*kind == pipeline::ScheduleKind::ZBH1 ||
            *kind == pipeline::ScheduleKind::ZBV);
  }
  /// Full recomputation without sequence parallelism where W is deferred:
  /// B's reductions run behind the recomputed forward and the input
  /// gradients' products as where W runs with B, less the weight
  /// gradients.
  bool fullWithoutSpDeferred() const {
    return deferredWeightGradients() && plan.remat == "full" &&
           !plan.sequenceParallel;
  }

  /// The collective that ends a half's forward: its row-parallel output's
  /// all-reduce, or with sequence parallelism its reduce-scatter.
  double halfOutputReduction() const {
    if (plan.tp == 1)
      return 0;
    double bytes = hiddenBytes();
    return tpCollective(plan.sequenceParallel ? CollectiveKind::ReduceScatter
                                              : CollectiveKind::AllReduce,
                        bytes);
  }

  /// A layer's four matrix products (or their weight gradients').
  struct LayerProducts {
    double qkv = 0, out = 0, up = 0, down = 0;
    double total() const { return qkv + out + up + down; }
  };
  /// The weight-gradient products that run in B: none where W is deferred.
  LayerProducts weightsInB(const LayerProducts &weights) const {
    return deferredWeightGradients() ? LayerProducts{} : weights;
  }

  /// The LM head's input-gradient GEMM (dX = dY W over the rank's block
  /// of the vocabulary) and its weight gradient's.
  double headInputGradientGemm() const {
    return gemm(tokens, m.hidden, m.vocab / t, "linear_input_grad");
  }
  double headWeightGemm() const {
    return weightGemm(tokens, m.vocab / t, m.hidden);
  }

  /// Which of a linear layer's three GEMMs.
  enum class Product { Forward, InputGradient, WeightGradient };

  /// A layer's matrix products: the forward's, the input gradients' (the
  /// same shapes, priced apart where rows that are not whole 16-byte units
  /// slow them otherwise) or the weight gradients' (weightGemm).
  LayerProducts matrices(Product which) const {
    double h = m.hidden, d = m.headDim, ffn = m.ffn / t;
    double heads = m.heads / t, kvHeads = std::max(1.0, m.kvHeads / t);
    auto product = [&](double rows, double cols, double inner) {
      if (which == Product::WeightGradient)
        return weightGemm(rows, cols, inner);
      return gemm(rows, cols, inner,
                  which == Product::Forward ? "linear" : "linear_input_grad");
    };
    LayerProducts products;
    // GPT-2's q, k and v come from one packed projection, Llama's from
    // three (the narrow k and v run at a small GEMM's efficiency).
    products.qkv = m.llama ? product(tokens, heads * d, h) +
                                 2 * product(tokens, kvHeads * d, h)
                           : product(tokens, (heads + 2 * kvHeads) * d, h);
    products.out = product(tokens, h, heads * d);
    products.up = product(tokens, ffn, h) * (m.llama ? 2 : 1);
    products.down = product(tokens, h, ffn);
    return products;
  }

  /// With sequence parallelism the weight gradients of the two
  /// column-parallel halves (qkv, the MLP's up projections) gather their
  /// sharded input again (unless full recomputation has just gathered it in
  /// the same B); where W is deferred past B (zero-bubble schedules) they
  /// do, with any recomputation, and the two row-parallel ones gather their
  /// output gradient again too, which B gathered for the input gradients
  /// and does not keep. A CUDA device runs them on a stream of their own,
  /// each issued one collective early (rt-prefetch-gathers), behind the
  /// GEMMs up to the next gather; what a gather takes past them shows.
  /// With W deferred: the MLP input's gather behind the output
  /// projection's weight gradient, the attention output gradient's behind
  /// the up projections', the attention input's behind the output
  /// projection's, the next layer's MLP output gradient's behind q, k, v's
  /// (a chunk's edges: collectiveEdges). Where W runs with B, layer()
  /// prices them with B's reductions.
  double weightGradientGathers(const LayerProducts &weights) const {
    bool deferred = deferredWeightGradients();
    if (plan.tp == 1 || !plan.sequenceParallel ||
        (!deferred && plan.remat == "full"))
      return 0;
    double gather = tpCollective(CollectiveKind::AllGather, hiddenBytes());
    if (hw.runtimeDevice != "cuda")
      return (deferred ? 4 : 2) * gather;
    if (deferred)
      return shows(gather, weights.down) + shows(gather, weights.up) +
             shows(gather, weights.out) + shows(gather, weights.qkv);
    return 0;
  }

  /// Each microbatch's W adds a fp32 gradient share into the step's sum
  /// (share written and read, sum read and written) where its GEMM cannot:
  /// the tied embedding's with tp > 1 on one stage, summed with the
  /// embedding's reduce-scattered gradient first.
  double accumulateSeconds(double params) const {
    return plan.microbatches > 1 ? memory("add", 12 * params) : 0;
  }

  /// With microbatches, each microbatch adds its share of every gradient
  /// no GEMM or scatter accumulates into the sum, a kernel each (f32: the
  /// share and the sum read, the sum written): a layer's norm parameters
  /// and GPT-2's biases.
  double shareAddSeconds() const {
    if (plan.microbatches <= 1)
      return 0;
    double seconds = 0;
    for (double elements : layerVectorElements(m, t))
      seconds += memory("add", 12 * elements);
    return seconds;
  }

  /// What a pipeline chunk's edges change of its layers' tensor-parallel
  /// collectives on a CUDA device, where layer() prices each behind work
  /// of a layer next to it in the chunk: added to each chunk's costs but
  /// the last's (`notLast`), to the last's (`last`), and to each but the
  /// first's (`notFirst`).
  struct CollectiveEdges {
    PhaseCosts notLast, last, notFirst;
  };

  PhaseCosts layer(CollectiveEdges *edges = nullptr) const {
    double h = m.hidden, d = m.headDim, s = m.seq;
    double heads = m.heads / t;
    double kvHeads = std::max(1.0, m.kvHeads / t);
    double ffn = m.ffn / t;
    double b = plan.microbatchSize;
    LayerProducts products = matrices(Product::Forward);
    double linears = products.total();
    // Attention's core.
    double e = m.elementBytes;
    double scores = b * heads * s * s;
    // Moving q, k, v and the output between the projections' layout and
    // the products' (each kernel reads and writes its tensor): unfused, a
    // transpose of each and of each gradient, GPT-2's slices of its packed
    // projection (concatenated again backward), Llama's keys and values
    // repeated over each group's query heads (summed back backward); rotary
    // on Llama's q and k, and its gradient, also fused.
    double qElements = tokens * heads * d, kvElements = tokens * kvHeads * d;
    double rotaryBytes = m.llama ? 2 * e * (qElements + kvElements) : 0;
    BytesByKind layoutForward, layoutBackward;
    layoutForward.add("rotary", rotaryBytes);
    layoutBackward.add("rotary", rotaryBytes);
    // Their kernels, a launch each: rotary on q and k; unfused, a transpose
    // of q, k, v and the output (of each gradient backward), GPT-2's three
    // slices (one concat backward), Llama's two repeats (two sums).
    double layoutKernelsForward = m.llama ? 2 : 0;
    double layoutKernelsBackward = layoutKernelsForward;
    if (!m.fusedAttention) {
      double transposes = 2 * e * (2 * qElements + 2 * kvElements);
      double packed = m.llama ? 0 : 2 * e * (qElements + 2 * kvElements);
      bool repeated = m.llama && kvHeads < heads;
      double groups = repeated ? 2 * e * (qElements + kvElements) : 0;
      layoutForward.add("transpose", transposes);
      layoutBackward.add("transpose", transposes);
      layoutForward.add("slice", packed);
      layoutBackward.add("concat", packed);
      layoutForward.add("repeat", groups);
      layoutBackward.add("sum_groups", groups);
      layoutKernelsForward += 4 + (m.llama ? 0 : 3) + (repeated ? 2 : 0);
      layoutKernelsBackward += 4 + (m.llama ? 0 : 1) + (repeated ? 2 : 0);
    }
    // A fused attention reads q, k, v and writes its output in the
    // projections' layout, but for reshapes that alias their input: the
    // output's to the projection's input, and backward the output's
    // gradient and the output (read back from the stash). A pipeline stage
    // stashes in pools, whose slots a reshape cannot alias: there the
    // forward's is a copy and one of the backward's, and unfused the
    // attention's output before the projection; not with full
    // recomputation, which stashes only the layer's input (the copies the
    // compile's replay does not skip, traced with plan-memory.py
    // --kind-deltas copy).
    bool pooled = plan.pp > 1 && plan.remat != "full";
    double copiesForward = pooled ? 1 : 0;
    double copiesBackward = pooled && m.fusedAttention ? 1 : 0;
    layoutForward.add("copy", copiesForward * 2 * e * qElements);
    layoutBackward.add("copy", copiesBackward * 2 * e * qElements);
    layoutKernelsForward += copiesForward;
    layoutKernelsBackward += copiesBackward;
    double attentionForward, attentionBackward;
    // What selective recomputation repeats of the unfused core: the scores'
    // product and the softmax (with the dropout mask drawn and applied).
    double scoresForward = 0;
    if (m.fusedAttention) {
      // The decoders' causal attention: the kernels skip the masked scores.
      double computed = attentionScores(b * heads * s, s, s, /*causal=*/true,
                                        hw.attentionBlockRows);
      double io = 4 * tokens * heads * d * m.elementBytes;
      // FlashAttention's five products in the backward; the CUDA device's
      // own kernels, which run where cuDNN refuses the call, seven
      // (docs/runtime/cuda.md), at their measured efficiencies where the
      // description has them.
      bool ownKernels = hw.runtimeDevice == "cuda" &&
                        (m.attentionDropout > 0 || m.elementBytes == 4);
      bool dropout = m.attentionDropout > 0;
      double rows = b * heads * s;
      attentionForward = attentionSeconds(
          hw, 4 * computed * d, io, peak,
          ownKernels ? hw.ownAttentionEfficiency(false, dropout) : 0,
          hw.attentionExtraSeconds(false, dropout, computed, rows));
      attentionBackward = attentionSeconds(
          hw, (ownKernels ? 14 : 10) * computed * d, 2 * io, peak,
          ownKernels ? hw.ownAttentionEfficiency(true, dropout) : 0,
          hw.attentionExtraSeconds(true, dropout, computed, rows));
    } else {
      double bmm = matmulSeconds(hw, 2 * scores * d,
                                 (scores + 2 * tokens * heads * d) *
                                     m.elementBytes,
                                 peak);
      // The softmax (scaled and causally masked in one kernel) reads the
      // scores and writes the probabilities; backward its gradient reads
      // both and writes one. An attention dropout draws its mask (a byte
      // an element) and applies it, and applies it to the gradient.
      // Their kernels: the softmax, the mask drawn and applied; backward
      // the softmax's gradient and the mask applied.
      bool dropout = m.attentionDropout > 0;
      BytesByKind softmaxForward, softmaxBackward;
      softmaxForward.add("softmax", scores * 2 * e);
      softmaxBackward.add("softmax_grad", scores * 3 * e);
      if (dropout) {
        softmaxForward.add("dropout_mask", scores);
        softmaxForward.add("apply_mask", scores * (2 * e + 1));
        softmaxBackward.add("apply_mask", scores * (2 * e + 1));
      }
      scoresForward = bmm + kernels(softmaxForward, dropout ? 3 : 1);
      attentionForward = bmm + scoresForward;
      attentionBackward = 4 * bmm + kernels(softmaxBackward, dropout ? 2 : 1);
    }
    // The layout's kernels (none for a fused attention on one stage).
    if (layoutKernelsForward > 0)
      attentionForward += kernels(layoutForward, layoutKernelsForward);
    if (layoutKernelsBackward > 0)
      attentionBackward += kernels(layoutBackward, layoutKernelsBackward);
    // The elementwise kernels' bytes, by kind: the two norms, the two
    // residual branches' dropout and add on [s, h] tensors (split over tp
    // only with sequence parallelism), the MLP's activation on its inner
    // tensor. A CUDA device fuses some (runtime/cuda/FusionPlan.h): a
    // dropout with its add, a norm's backward (both gradients) with the
    // residual add, GPT-2's GeLU and its gradient into the GEMMs'
    // epilogues, the bias gradients into the weight gradients', and an add
    // right after a product without bias into the product (C): Llama's
    // residual adds (where no collective comes between: without sequence
    // parallelism) and its input gradients' sums. A fused group is a kind
    // of its own, its opcodes joined by '+' (as the replay names it).
    bool fuses = fusesKernels();
    double whole = wholeElements();
    double inner = tokens * ffn;
    bool dropout = residualDropout();
    std::string norm = normKind();
    bool residualInProduct = this->residualInProduct();
    // GPT-2's bias after the reduction (tp > 1) is a kernel reading and
    // writing the branch, but on a CUDA device, which runs it with the
    // branch's dropout and residual add (or the add alone) as one kernel.
    bool rowParallelBias = biasAfterReduction() && !fuses;
    // A norm reads x and writes y; on a CUDA device joined to the add
    // before it the norm's read of the sum is not paid, nor its launch.
    bool normJoinsAdd = this->normJoinsAdd();
    BytesByKind normAlone;
    normAlone.add(norm, whole * 2 * e);
    // A branch per element: the mask drawn (a byte) and applied, and the
    // add; on a CUDA device the mask applied, the add and the norm after
    // it (with GPT-2's bias before them where tp > 1) are one group.
    BytesByKind branchForward;
    if (dropout)
      branchForward.add("dropout_mask", whole);
    if (!fuses) {
      if (dropout)
        branchForward.add("apply_mask", whole * (2 * e + 1));
      branchForward.add("add", whole * 3 * e);
      if (rowParallelBias)
        branchForward.add("add", whole * 2 * e);
    } else if (dropout || !residualInProduct) {
      branchForward.add(branchGroup(biasAfterReduction(), normJoinsAdd),
                        branchGroupBytes(normJoinsAdd));
    }
    // Backward each branch's mask on the gradient (read it and the mask,
    // write): on a CUDA device in the norm backward's group whose result it
    // masks (with microbatches the norms' parameter gradients go into
    // their sums after the mask: tpc-lower-to-rt).
    bool maskInNormGroup = fuses && dropout;
    // A norm's backward: its input gradient (dY, x, dX), its parameter
    // gradients (dY, x) and the residual add: one group on a CUDA device
    // (all three are in B, whatever the schedule), but for rows too wide
    // for its sums (normParamsApart).
    bool normParamsApart = this->normParamsApart();
    auto normBackward = [&](bool withMask) {
      BytesByKind moved;
      if (!fuses) {
        moved.add(norm + "_input_grad", whole * 3 * e);
        moved.add(norm + "_param_grad", whole * 2 * e);
        moved.add("add", whole * 3 * e);
        if (dropout)
          moved.add("apply_mask", whole * (2 * e + 1));
        return moved;
      }
      if (normParamsApart)
        moved.add(norm + "_param_grad", whole * 2 * e);
      moved.add(normGroup(withMask), normGroupBytes(withMask));
      return moved;
    };
    // With full recomputation the masks are not stashed: each layer's
    // recomputed forward draws its MLP branch's mask again and applies it
    // to the gradient there (on a CUDA device, not in the group of the
    // norm backward before it).
    bool maskRedrawn = plan.remat == "full" && dropout;
    BytesByKind activationForward, activationBackward;
    if (m.llama && fuses) {
      // SwiGLU's pairs: SiLU with the product (forward reading gate and up,
      // writing the product; backward SiLU recomputed, reading gate and the
      // output gradient, writing up's gradient), and the product giving
      // SiLU's output gradient with SiLU's gradient (reading the output
      // gradient, up and gate, writing the gate's gradient).
      activationForward.add("silu+mul", inner * 3 * e);
      activationBackward.add("silu+mul", inner * 3 * e);
      activationBackward.add("mul+silu_grad", inner * 4 * e);
    } else if (m.llama) {
      // SiLU(gate), then its product with up; backward SiLU(gate) again
      // (recomputed from the gate, not stashed: tpc-autodiff), both
      // products' gradients and SiLU's.
      activationForward.add("silu", inner * 2 * e);
      activationForward.add("mul", inner * 3 * e);
      activationBackward.add("silu", inner * 2 * e);
      activationBackward.add("mul", inner * 6 * e);
      activationBackward.add("silu_grad", inner * 3 * e);
    } else if (!fuses) {
      activationForward.add("gelu", inner * 2 * e);
      activationBackward.add("gelu_grad", inner * 3 * e);
    }
    BytesByKind elementwiseForward, elementwiseBackward;
    elementwiseForward.add(branchForward, 2);
    if (!normJoinsAdd)
      elementwiseForward.add(normAlone, 2);
    elementwiseForward.add(activationForward);
    elementwiseBackward.add(normBackward(maskInNormGroup));
    elementwiseBackward.add(normBackward(maskInNormGroup && !maskRedrawn));
    elementwiseBackward.add(activationBackward);
    // GPT-2's bias gradients read each linear's output gradient (on a CUDA
    // device in the weight gradients' epilogues).
    bool biasGradients = !m.llama && !fuses;
    if (biasGradients)
      elementwiseBackward.add("sum_to",
                              tokens * (2 * h + (3 * h + m.ffn) / t) * e);
    // Llama's separate q, k, v and gate, up projections: their input
    // gradients are added (three adds over the whole sequence; on a CUDA
    // device each in the next product's epilogue).
    bool inputGradientSums = m.llama && !fuses;
    if (inputGradientSums)
      elementwiseBackward.add("add", 3 * 3 * tokens * h * e);
    // Their kernels, a launch each: forward the two norms (each with the
    // add before it on a CUDA device), each branch's mask drawn and
    // applied and its add (one kernel with the add on a CUDA device), the
    // activation (Llama: SiLU, then the product with up; one kernel on a
    // CUDA device); backward the norms' (the parameter and input
    // gradients, the residual add and the mask of the branch after, one
    // group on a CUDA device), each branch's mask on the gradient (apart
    // on a CPU), the activation's (Llama: SiLU recomputed, both products'
    // and SiLU's gradients, two pairs on a CUDA device), GPT-2's four bias
    // gradients and Llama's three input-gradient sums where unfused.
    double branchKernelsForward = dropout             ? (fuses ? 2 : 3)
                                  : residualInProduct ? 0
                                                      : 1;
    if (rowParallelBias)
      branchKernelsForward += 1;
    double kernelsForward = (normJoinsAdd ? 0 : 2) + 2 * branchKernelsForward +
                            (m.llama ? (fuses ? 1 : 2) : (fuses ? 0 : 1));
    double kernelsBackward = 2 * (!fuses            ? 3
                                  : normParamsApart ? 2
                                                    : 1) +
                             (dropout && !maskInNormGroup ? 2 : 0) +
                             (m.llama ? (fuses ? 2 : 4) : (fuses ? 0 : 1)) +
                             (biasGradients ? 4 : 0) +
                             (inputGradientSums ? 3 : 0);
    double comm = layerCollectives();

    // On a device with collective streams each branch's dropout mask (a
    // byte an element, drawn from the step's counter) is drawn while the
    // branch's row-parallel reduction runs (rt-overlap-collectives hoists
    // it there), as far as the reduction lasts.
    double hiddenDraws =
        fuses && plan.tp > 1 && dropout
            ? std::min(memory("dropout_mask", whole), halfOutputReduction())
            : 0;
    PhaseCosts costs;
    costs.forward.compute = linears + attentionForward +
                            kernels(elementwiseForward, kernelsForward) -
                            2 * hiddenDraws;
    costs.forward.communication = comm;
    costs.backward.compute = matrices(Product::InputGradient).total() +
                             attentionBackward +
                             kernels(elementwiseBackward, kernelsBackward);
    // B's collectives: its own, and with full recomputation the
    // recomputed forward's (but the MLP output's reduction); on a device
    // with collective streams, where W runs with B, what shows of them
    // (below).
    bool overlapsReductions =
        fuses && plan.tp > 1 &&
        (!deferredWeightGradients() || fullWithoutSpDeferred());
    costs.backward.communication =
        plan.remat == "full" ? 2 * comm - halfOutputReduction() : comm;
    LayerProducts weights = matrices(Product::WeightGradient);
    costs.weight.compute = weights.total() + shareAddSeconds();
    costs.weight.communication = weightGradientGathers(weights);
    if (plan.remat == "full") {
      // The backward recomputes the forward but what only the layer's
      // output needs: the MLP's output projection, its reduction over tp,
      // its dropout and residual add (the layer's first norm then runs
      // alone: no add before it is recomputed).
      BytesByKind recomputed = activationForward;
      recomputed.add(normAlone, normJoinsAdd ? 1 : 2);
      double recomputedKernels =
          kernelsForward - branchKernelsForward + (normJoinsAdd ? 1 : 0);
      // On a CUDA device without sequence parallelism GPT-2's bias runs
      // apart there (the collectives rt-overlap-collectives moves beside
      // the recomputed forward come between it and the branch).
      if (fuses && biasAfterReduction() && !plan.sequenceParallel) {
        if (dropout)
          recomputed.add("dropout_mask", whole);
        recomputed.add("add", whole * 2 * e);
        recomputed.add(branchGroup(false, normJoinsAdd),
                       branchGroupBytes(normJoinsAdd));
        recomputedKernels += 1;
      } else {
        recomputed.add(branchForward);
      }
      if (maskRedrawn) {
        recomputed.add("dropout_mask", whole);
        recomputedKernels += 1;
        if (fuses) {
          recomputed.add("apply_mask", whole * (2 * e + 1));
          recomputedKernels += 1;
        }
      }
      costs.backward.recompute =
          linears - gemm(tokens, h, ffn) + attentionForward +
          kernels(recomputed, recomputedKernels) - hiddenDraws;
    } else if (plan.remat == "selective" && !m.fusedAttention) {
      costs.backward.recompute = scoresForward;
    }
    // On a device that runs collectives on streams of their own (the CUDA
    // device), where W runs with B, rt-overlap-collectives moves the work
    // that a collective of B does not wait for past it: each half's
    // input-gradient reduction (an all-reduce, or with sequence parallelism
    // a reduce-scatter) runs behind the weight gradients of the half before
    // it in the backward. With full recomputation B interleaves the
    // recomputed forward with the backward: its collectives run behind the
    // attention half's whole backward of the layer after it, one reduction
    // behind the recomputed MLP's up projection, the other behind the MLP's
    // weight gradients. What a collective takes past them shows (counted
    // by this layer's halves); the sequence-parallel gathers of the output
    // gradients, read at once, show whole. With sequence parallelism the
    // recomputed forward's collectives are read at once too (the attention
    // input's gather, issued behind the norm's backward, all but).
    if (overlapsReductions) {
      double reduction = halfOutputReduction();
      double gathers = comm - 2 * reduction;
      if (plan.remat == "full" && plan.sequenceParallel) {
        // The recomputed forward's gathers and reduce-scatter are read at
        // once; the MLP's output-gradient gather runs behind the recomputed
        // up projection, the reduce-scatters behind the weight gradients.
        costs.backward.communication =
            comm - reduction + gathers / 2 + shows(gathers / 2, products.up) +
            shows(reduction, weights.qkv + weights.out) +
            shows(reduction, weights.up + weights.down);
      } else if (plan.remat == "full") {
        // The recomputed attention's reduction runs behind the attention
        // half's backward of the layer after it, the attention input
        // gradient's behind the recomputed up projection, the MLP's behind
        // its weight gradients and the layer before's recomputed attention
        // (the chunk's first layer: collectiveEdges). With W deferred no
        // weight gradient is among them.
        LayerProducts inB = weightsInB(weights);
        double attentionHalf =
            products.qkv + products.out + attentionBackward + inB.qkv + inB.out;
        costs.backward.communication =
            shows(comm - reduction, attentionHalf) +
            shows(reduction, products.up) +
            shows(reduction, inB.up + inB.down + products.qkv + products.out +
                                 attentionForward);
      } else {
        // With sequence parallelism each half's input gathered again for
        // its weight gradients goes out behind its output gradient's
        // gather, and runs behind the half's input-gradient products; the
        // half's reduction follows it on the stream.
        double regather = gathers / 2;
        double attentionInputGradients =
            products.out + attentionBackward + products.qkv;
        costs.backward.communication =
            gathers +
            shows(reduction + shows(regather, attentionInputGradients),
                  weights.qkv + weights.out) +
            shows(reduction + shows(regather, products.down + products.up),
                  weights.up + weights.down);
      }
    }
    if (edges && fuses && plan.tp > 1)
      *edges = collectiveEdges(products, weights, attentionForward,
                               attentionBackward);
    return costs;
  }

  CollectiveEdges collectiveEdges(const LayerProducts &products,
                                  const LayerProducts &weights,
                                  double attentionForward,
                                  double attentionBackward) const {
    CollectiveEdges edges;
    double headWeight = headWeightGemm();
    if (deferredWeightGradients() && !fullWithoutSpDeferred()) {
      if (!plan.sequenceParallel)
        return edges;
      // W's gathers go out one ahead of the GEMM that reads them
      // (weightGradientGathers): a chunk's first is waited for whole, or
      // with the LM head runs behind the head's weight gradient (whose
      // gather, head()'s, is then the first); the first layer's q, k, v
      // GEMM has no gather after it.
      double gather = tpCollective(CollectiveKind::AllGather, hiddenBytes());
      edges.notLast.weight.communication = gather - shows(gather, weights.qkv);
      edges.last.weight.communication =
          shows(gather, headWeight) - shows(gather, weights.qkv);
      return edges;
    }
    if (plan.sequenceParallel)
      return edges;
    double reduction = halfOutputReduction();
    if (plan.remat == "full") {
      // A chunk's last layer recomputes its attention first, with no
      // layer's backward after it to hide the reduction: it is read at
      // once, or in the last chunk runs behind the LM head's gradients.
      // Its first layer's MLP reduction has no layer before it to
      // recompute: it runs behind the MLP's weight gradients alone.
      LayerProducts inB = weightsInB(weights);
      double hidden =
          shows(reduction, products.qkv + products.out + attentionBackward +
                               inB.qkv + inB.out);
      double mlpWeights = inB.up + inB.down;
      double firstLayer = shows(reduction, mlpWeights) -
                          shows(reduction, mlpWeights + products.qkv +
                                               products.out + attentionForward);
      edges.notLast.backward.communication = reduction - hidden + firstLayer;
      edges.last.backward.communication =
          shows(reduction, (deferredWeightGradients() ? 0 : headWeight) +
                               headInputGradientGemm()) -
          hidden + firstLayer;
      return edges;
    }
    // The output gradient a chunk but the last receives is a partial sum,
    // all-reduced at once; the last chunk's, the LM head's, runs behind
    // the head's weight gradient. A chunk but the first sends its first
    // layer's attention input gradient on unreduced.
    edges.notLast.backward.communication = reduction;
    edges.last.backward.communication = shows(reduction, headWeight);
    edges.notFirst.backward.communication =
        -shows(reduction, weights.qkv + weights.out);
    return edges;
  }

  PhaseCosts embedding() const {
    PhaseCosts costs;
    double bytes = hiddenBytes();
    // The rows gathered (read and written); on the [s, h] the layers take
    // (a shard with sequence parallelism), GPT-2's learned positions added
    // and the embedding's dropout, its mask drawn and applied (backward on
    // a CPU applied apart, on a CUDA device in the first norm backward's
    // group).
    double whole = wholeElements(), e = m.elementBytes;
    bool dropout = m.embeddingDropout > 0;
    costs.forward.compute = memory("embedding", 2 * bytes);
    if (!m.llama)
      costs.forward.compute += memory("add", whole * 3 * e);
    if (dropout)
      costs.forward.compute += memory("dropout_mask", whole) +
                               memory("apply_mask", whole * (2 * e + 1));
    // A block of the table's rows gives a partial sum over tp: with
    // sequence parallelism reduce-scattered at once; without, GPT-2's is
    // all-reduced (its positions add to it), Llama's stays partial into its
    // first norm's all-reduce (layer()'s).
    if (plan.tp > 1 && (plan.sequenceParallel || !m.llama))
      costs.forward.communication =
          tpCollective(plan.sequenceParallel ? CollectiveKind::ReduceScatter
                                             : CollectiveKind::AllReduce,
                       bytes);
    // Its gradient adds into the table's sum where there is one: over the
    // microbatches, or a tied table's on its stage.
    bool intoSum = plan.microbatches > 1 ||
                   (m.tiedEmbeddings && plan.tp == 1 && plan.pp == 1);
    costs.backward.compute = memory(
        intoSum ? "embedding_grad_accumulate" : "embedding_grad", 3 * bytes);
    if (dropout && !fusesKernels())
      costs.backward.compute += memory("apply_mask", whole * (2 * e + 1));
    if (gradientInVocabularyBlocks())
      // dist-propagate's choice: the layers' input gradient (a partial sum
      // over tp, or sequence-split) is all-reduced (all-gathered) where the
      // embedding's gradient, computed in the rank's block of rows, reads
      // it: in W where W is deferred.
      costs.weight.communication =
          tpCollective(plan.sequenceParallel ? CollectiveKind::AllGather
                                             : CollectiveKind::AllReduce,
                       bytes);
    // With sequence parallelism GPT-2's position gradient, summed over the
    // microbatch on the rank's positions, is all-gathered (fp32).
    if (plan.tp > 1 && plan.sequenceParallel && !m.llama)
      costs.weight.communication += tpCollective(
          CollectiveKind::AllGather, static_cast<double>(m.seq) * m.hidden * 4);
    // On a CUDA device, where W is deferred, the gathers go out before the
    // first layer's q, k, v weight gradients and run behind them (the
    // all-reduce without sequence parallelism goes out after them). Where
    // W runs with B, the all-reduce is the first layer's attention input
    // gradient's, which layer() prices behind its q, k, v and output
    // weight gradients, or with full recomputation (whose layer prices its
    // reductions elsewhere) runs behind them.
    if (fusesKernels() && plan.tp > 1) {
      LayerProducts weights = matrices(Product::WeightGradient);
      if (deferredWeightGradients() && plan.sequenceParallel)
        costs.weight.communication =
            shows(costs.weight.communication, weights.qkv);
      else if (!deferredWeightGradients() && !plan.sequenceParallel &&
               gradientInVocabularyBlocks())
        costs.weight.communication =
            plan.remat == "full"
                ? shows(costs.weight.communication, weights.qkv + weights.out)
                : 0;
    }
    if (tiedGradientSummedPerMicrobatch()) {
      // Added to the LM head's gradient in each microbatch: the block's
      // rows, read and written; over the whole vocabulary (written whole
      // each microbatch), the reduce-scatter over tp comes first. The add
      // is the embedding gradient's own (rt-accumulate-weight-grads).
      double table = wholeVocabularyGradientBytes();
      double block = static_cast<double>(m.vocab) / t * m.hidden * 4;
      costs.weight.compute =
          memory("embedding_grad_accumulate", table + 3 * block);
      if (table > 0)
        costs.weight.communication =
            tpCollective(CollectiveKind::ReduceScatter, table);
    }
    return costs;
  }

  /// With a vocabulary-parallel table (tp > 1) the embedding's gradient is
  /// computed in the rank's block of rows where a device's microbatch has
  /// at most as many tokens as the vocabulary (padded: estimatePlan) has
  /// rows (moving its input gradient over tp is then cheaper than the
  /// table's gradient: dist-propagate's rule).
  bool gradientInVocabularyBlocks() const {
    return plan.tp > 1 && tokens <= static_cast<double>(m.vocab);
  }
  /// Otherwise the layers' input gradient stays a partial sum over tp and
  /// the embedding's gradient is summed over the whole vocabulary, in fp32.
  double wholeVocabularyGradientBytes() const {
    return plan.tp > 1 && !gradientInVocabularyBlocks()
               ? static_cast<double>(m.vocab) * m.hidden * 4
               : 0;
  }
  /// A table tied to the LM head on the same stage sums its two gradients
  /// in each microbatch (reduce-scattering the embedding's there, when it
  /// is computed whole); else the microbatches' sum of a whole-vocabulary
  /// gradient is reduce-scattered once, at the step's end.
  bool tiedGradientSummedPerMicrobatch() const {
    return plan.tp > 1 && m.tiedEmbeddings && plan.pp == 1;
  }
  double wholeVocabularyScatterSeconds() const {
    double table = wholeVocabularyGradientBytes();
    return table > 0 && !tiedGradientSummedPerMicrobatch()
               ? tpCollective(CollectiveKind::ReduceScatter, table)
               : 0;
  }

  PhaseCosts head() const {
    PhaseCosts costs;
    double vocab = m.vocab / t;
    // The logits (the model's precision): the loss reads them, its gradient
    // reads them again and writes theirs (the GEMMs write and read them).
    double logits = tokens * vocab * m.elementBytes;
    // The final norm, on the [s, h] the layers hand on (a shard with
    // sequence parallelism): it reads x and writes y (the first layer's
    // first norm, alone, is priced here: the final one joins the last
    // branch's group), backward reads dY and x and writes dX; on a CUDA
    // device its parameter and
    // input gradients are one group, with the mask of the last branch's
    // dropout. (With full recomputation the last branch's mask is applied
    // in its layer's recomputed forward.)
    double normBytes = 2 * wholeElements() * m.elementBytes;
    double normGradientBytes = 3 * wholeElements() * m.elementBytes;
    std::string norm = normKind();
    bool fuses = fusesKernels();
    std::string normBackward =
        fuses ? norm + "_param_grad+" + norm + "_input_grad" +
                    (residualDropout() && plan.remat != "full" ? "+apply_mask"
                                                               : "")
              : norm + "_input_grad";
    // On one device of one stage a CUDA device runs the loss with its
    // gradient, one kernel: a kind of its own.
    bool lossWithGradient = fuses && plan.tp == 1 && plan.pp == 1;
    std::string loss =
        lossWithGradient ? "cross_entropy+cross_entropy_grad" : "cross_entropy";
    std::string lossGradient = lossWithGradient
                                   ? "cross_entropy+cross_entropy_grad"
                                   : "cross_entropy_grad";
    double small = plan.tp > 1
                       ? 3 * tpCollective(CollectiveKind::AllReduce, tokens * 4)
                       : 0;
    costs.forward.compute = memory(norm, normBytes) +
                            gemm(tokens, vocab, m.hidden) +
                            memory(loss, logits);
    costs.forward.communication = small;
    costs.backward.compute = memory(normBackward, normGradientBytes) +
                             headInputGradientGemm() +
                             memory(lossGradient, 2 * logits);
    // A tied table's GEMM adds into the sum too, and so does the
    // embedding's scatter, but where the embedding's gradient is
    // reduce-scattered in the microbatch (rt-accumulate-weight-grads).
    costs.weight.compute =
        tiedGradientSummedPerMicrobatch()
            ? gemm(tokens, vocab, m.hidden, "linear_weight_grad") +
                  accumulateSeconds(vocab * m.hidden)
            : headWeightGemm();
    if (plan.tp == 1)
      return costs;
    double bytes = hiddenBytes();
    if (!plan.sequenceParallel) {
      // Llama's last MLP branch stays a partial sum into the final norm's
      // all-reduce (GPT-2's is reduced in its layer, as layer() counts).
      if (m.llama)
        costs.forward.communication +=
            tpCollective(CollectiveKind::AllReduce, bytes);
      return costs;
    }
    // With sequence parallelism the head's GEMMs read the final norm's
    // output all-gathered, and its input gradient, a partial sum over the
    // vocabulary blocks, is reduce-scattered. The weight gradient gathers
    // the input again. A CUDA device, where W runs with B, runs that
    // gather behind the input gradient's GEMM and the reduce-scatter
    // behind the weight gradient's (rt-overlap-collectives); where W is
    // deferred the reduce-scatter is read at once, and the gather is W's
    // first collective (collectiveEdges), as elsewhere.
    double gather = tpCollective(CollectiveKind::AllGather, bytes);
    double scatter = tpCollective(CollectiveKind::ReduceScatter, bytes);
    costs.forward.communication += gather;
    if (fusesKernels() && !deferredWeightGradients()) {
      costs.backward.communication += shows(gather, headInputGradientGemm()) +
                                      shows(scatter, costs.weight.compute);
    } else {
      costs.backward.communication += scatter;
      costs.weight.communication += gather;
    }
    return costs;
  }

  double p2pSeconds(bool inter) const {
    double bytes = hiddenBytes() / (plan.sequenceParallel ? t : 1);
    return collectiveSeconds(hw, CollectiveKind::PointToPoint, bytes, 2,
                             inter ? 1 : 2);
  }

private:
  const TransformerShape &m;
  const PlanChoice &plan;
  const Hardware &hw;
  int64_t tpPerNode;
  double peak = 0, tokens = 0, t = 1;
};

} // namespace

std::optional<PlanEstimate>
mlir::tpc::estimatePlan(const TransformerShape &model, const PlanChoice &plan,
                        const Hardware &hw, bool simulate, std::string &error) {
  // The plan's executable holds the vocabulary padded as tpc-compile pads
  // it (to a multiple of tp, times 64 for a CUDA device: buildPadShapes);
  // the model FLOPs count the real one.
  TransformerShape m = model;
  int64_t multiple = hw.vocabPadding() * plan.tp;
  m.vocab = (model.vocab + multiple - 1) / multiple * multiple;
  int64_t chunks = plan.pp * plan.virtualStages;
  if (m.heads % plan.tp != 0 || (m.kvHeads % plan.tp != 0 && plan.tp % m.kvHeads != 0)) {
    error = "heads " + std::to_string(m.heads) + " / kv-heads " +
            std::to_string(m.kvHeads) + " do not divide by tp " +
            std::to_string(plan.tp);
    return std::nullopt;
  }
  if (m.layers % chunks != 0) {
    error = "layers " + std::to_string(m.layers) + " do not divide by pp·v " +
            std::to_string(chunks);
    return std::nullopt;
  }
  if (m.ffn % plan.tp != 0) {
    error = "the MLP size does not divide by tp";
    return std::nullopt;
  }

  // Ranks pp-major, then dp, then tp.
  std::vector<int64_t> mesh = {plan.pp, plan.dp, plan.tp};
  int64_t tpPerNode = groupMembersPerNode(mesh, {2}, hw.devicesPerNode);
  int64_t dpPerNode = groupMembersPerNode(mesh, {1}, hw.devicesPerNode);
  // Some neighbouring stages sit on two nodes unless every pipeline group
  // fits in one; the pipeline runs at its slowest link.
  bool ppInter =
      groupMembersPerNode(mesh, {0}, hw.devicesPerNode) < plan.pp;
  double h = m.hidden, t = plan.tp;
  double layerParams = static_cast<double>(countLayerParameters(m)) / t;
  CostBuilder costs(m, plan, hw, tpPerNode);
  CostBuilder::CollectiveEdges edges;
  PhaseCosts layer = costs.layer(&edges), embedding = costs.embedding(),
             head = costs.head();
  // A layer's matrix-product FLOPs per token (forward), and the layers of
  // each chunk as dist-pipeline-split divides them: balanced by those, the
  // LM head's on the last chunk (which thus takes fewer layers).
  double layerFlopsPerToken =
      2 * (h * (m.heads + 2 * m.kvHeads) * m.headDim + m.heads * m.headDim * h +
           (m.llama ? 3 : 2) * h * m.ffn) +
      4.0 * m.seq * m.heads * m.headDim;
  std::vector<int64_t> chunkLayers =
      chunks > 1 ? pipeline::balanceLayers(
                       std::vector<double>(m.layers, layerFlopsPerToken), 0,
                       2 * h * m.vocab, chunks)
                 : std::vector<int64_t>{m.layers};

  // The schedule: with `simulate` its real action lists and what each rank
  // holds by them; else the closed forms of what each rank holds (chunk c on
  // rank c mod p, or ZB-V's V).
  pipeline::ScheduleOptions options;
  std::optional<pipeline::ScheduleKind> kind =
      plan.pp > 1 ? pipeline::parseScheduleKind(plan.schedule)
                  : std::optional(pipeline::ScheduleKind::OneFOneB);
  if (!kind) {
    error = "unknown schedule '" + plan.schedule + "'";
    return std::nullopt;
  }
  // The pipeline formulas (a steady state plus a fill and a drain) hold
  // with many microbatches per stage; with few (m <= 2p: the warm-up and
  // the drain are most of the step) the search's step was up to 19.6% over
  // and 13.4% under the compile's replay (interleaving, ZB-H1 with one
  // microbatch; benchmarks/plan-sweep.py). Where the lists are short too
  // (p·m·v <= 256 actions of each kind) the search replays them: a 1T
  // model's search on 3072 devices has hundreds of plans with p = 64 and
  // few microbatches, whose replays would double its time.
  if (plan.pp > 1 && plan.microbatches <= 2 * plan.pp &&
      plan.pp * plan.microbatches * plan.virtualStages <= 256)
    simulate = true;
  options.kind = *kind;
  options.ranks = static_cast<int>(plan.pp);
  options.microbatches = static_cast<int>(plan.microbatches);
  options.chunksPerRank = static_cast<int>(plan.virtualStages);
  // ZB-V folds the chunks into a V: rank r holds chunks r and 2p - 1 - r.
  bool vPlacement = *kind == pipeline::ScheduleKind::ZBV;
  if (vPlacement)
    options.placement = pipeline::Placement::V;
  std::optional<pipeline::Schedule> schedule;
  std::optional<pipeline::ScheduleStats> stats;
  if (simulate) {
    schedule = pipeline::generateSchedule(options, error);
    if (!schedule)
      return std::nullopt;
    stats = pipeline::check(*schedule, error);
    if (!stats)
      return std::nullopt;
  } else if (vPlacement) {
    // ZB-V's in-flight counts per leg follow no closed form that held
    // across pipeline sizes and microbatch counts (a sweep of random plans
    // found the one used before 36% under and 28% over the compiled
    // peak): its memory is counted on its lists (cheap beside the
    // search's other work), its step still by the closed form.
    schedule = pipeline::generateSchedule(options, error);
    if (!schedule)
      return std::nullopt;
  }
  auto rankOf = [&](int64_t chunk) -> int64_t {
    return options.rankOf(static_cast<int>(chunk));
  };
  // Per rank, the mean layers of its chunks.
  auto rankLayersPerChunk = [&](int64_t r) {
    int64_t layers = 0;
    for (int64_t c = 0; c < chunks; ++c)
      if (rankOf(c) == r)
        layers += chunkLayers[c];
    return static_cast<double>(layers) / plan.virtualStages;
  };
  bool deferredW = costs.deferredWeightGradients();
  // Microbatch-chunks whose activations rank r holds at once: from their
  // forward to their input-gradient backward (B), and with deferred weight
  // gradients from the forward to W.
  auto untilB = [&](int64_t r) -> int64_t {
    if (stats)
      return stats->ranks[r].peakStash;
    int64_t m = plan.microbatches, p = plan.pp, v = plan.virtualStages;
    switch (*kind) {
    case pipeline::ScheduleKind::GPipe:
      return m;
    case pipeline::ScheduleKind::Interleaved1F1B:
      // Megatron's warm-up: 2(p - r - 1) + (v - 1)p, plus the one in 1F1B.
      return std::min(m * v, 2 * (p - r - 1) + (v - 1) * p + 1);
    case pipeline::ScheduleKind::ZBV:
      return std::min(m, p) * v;
    default:
      return std::min(m, p - r);
    }
  };
  auto untilW = [&](int64_t r) -> int64_t {
    if (!deferredW)
      return untilB(r);
    if (stats)
      return stats->ranks[r].peakInFlight;
    return std::min(plan.microbatches, plan.pp) * plan.virtualStages;
  };

  // Per chunk: its work per microbatch.
  std::vector<PhaseCosts> chunkCosts(chunks);
  for (int64_t c = 0; c < chunks; ++c) {
    PhaseCosts &cost = chunkCosts[c];
    cost = costs.chunkEdges(c == 0, c == chunks - 1);
    if (chunkLayers[c] > 0) {
      cost += c == chunks - 1 ? edges.last : edges.notLast;
      if (c > 0)
        cost += edges.notFirst;
    }
    cost.forward += layer.forward.scaled(chunkLayers[c]);
    cost.backward += layer.backward.scaled(chunkLayers[c]);
    cost.weight += layer.weight.scaled(chunkLayers[c]);
    if (c == 0)
      cost += embedding;
    if (c == chunks - 1)
      cost += head;
  }

  // Per rank: parameters and the step's end (gradient reduction over dp,
  // the optimizer, the tied embedding's gradient exchange).
  bool mixed = m.elementBytes == 2;
  double paramBytesEach = mixed ? 6 : 4;
  // The model-precision copies of the weights (mixed precision), cast at
  // the step's start: a chunk's die with its last B (W reads none).
  double copyBytesEach = paramBytesEach - 4;
  std::vector<double> rankParams(plan.pp, 0), chunkParams(chunks, 0);
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t rank = rankOf(c);
    chunkParams[c] += layerParams * chunkLayers[c];
    if (c == 0)
      chunkParams[c] +=
          m.vocab * h / t + (m.llama ? 0 : static_cast<double>(m.seq) * h);
    // The head's table: a tied one is the embedding's where both chunks
    // share a rank (one stage, or ZB-V's rank 0), a copy elsewhere.
    if (c == chunks - 1)
      chunkParams[c] +=
          (!m.tiedEmbeddings || rankOf(0) != rank ? m.vocab * h / t : 0) + h;
    rankParams[rank] += chunkParams[c];
  }
  // A device that runs collectives on their own streams (the CUDA
  // device's) overlaps each layer's data-parallel reduction, issued in the
  // last microbatch's backward after the layer's weight gradients
  // (rt-issue-reductions-early), with the backward of the layers after it;
  // elsewhere the reduction follows the backward.
  const bool overlapsReduction = hw.runtimeDevice == "cuda" && plan.dp > 1;
  // The step's end per parameter: AdamW (28 bytes), the gradients' norm
  // (4; without clipping, the compile's default, the CUDA device sums the
  // squares in the updates' pass: runtime/cuda/KernelBatches.h), with
  // mixed precision the bf16 copy (6), with microbatches the sums zeroed
  // for the next step (4).
  // On the CUDA device the copies and zeroings run as batches.
  bool batches = hw.runtimeDevice == "cuda";
  BytesByKind optimizerBytes;
  optimizerBytes.add("adamw_update", 28);
  if (!batches)
    optimizerBytes.add("sum_squares", 4);
  if (mixed)
    optimizerBytes.add(batches ? "cast batch" : "cast", 6);
  if (plan.microbatches > 1)
    optimizerBytes.add(batches ? "zeros batch" : "zeros", 4);
  // The reduction as compiled: an all_reduce per parameter tensor, in the
  // order the backward finishes them. On the CUDA device a run of them is
  // one collective (one NCCL group): rt-bucket-reductions moves each, last
  // to first, to the run after it while the run stays within its bucket;
  // elsewhere each pays the collective's latency (a layer's norms and
  // biases: a dozen latency-bound ones).
  auto reduceSeconds = [&](double elements) {
    return collectiveSeconds(hw, CollectiveKind::AllReduce, 4 * elements,
                             plan.dp, dpPerNode);
  };
  // Elsewhere no run is one collective: a bucket of 0 bytes.
  const double bucketBytes =
      hw.runtimeDevice == "cuda" ? rt::kReductionBucketBytes : 0;
  // `lastRun`, where given, is set to the run that goes out last (the
  // first made): the embedding's table's, on the first chunk.
  auto chunkReductionSeconds = [&](const std::vector<double> &tensors,
                                   double *lastRun) {
    double seconds = 0, run = 0;
    bool first = true;
    auto addRun = [&] {
      double runSeconds = reduceSeconds(run);
      if (lastRun && first)
        *lastRun = runSeconds;
      first = false;
      seconds += runSeconds;
    };
    for (double elements : llvm::reverse(tensors)) {
      if (run > 0 && 4 * (elements + run) <= bucketBytes) {
        run += elements;
        continue;
      }
      if (run > 0)
        addRun();
      run = elements;
    }
    if (run > 0)
      addRun();
    return seconds;
  };
  // The embedding's table finishes last: the run it is in goes out after
  // the layers' others.
  double embeddingReduction = 0;
  std::vector<double> layerTensors = layerTensorElements(m, t);
  std::vector<double> reduction(plan.pp, 0), epilogue(plan.pp, 0);
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<double> tensors;
    if (c == chunks - 1) {
      if (!m.tiedEmbeddings || chunks > 1)
        tensors.push_back(m.vocab * h / t);
      tensors.insert(tensors.end(), m.llama ? 1 : 2, h);
    }
    for (int64_t l = 0; l < chunkLayers[c]; ++l)
      tensors.insert(tensors.end(), layerTensors.begin(), layerTensors.end());
    if (c == 0) {
      if (!m.llama)
        tensors.push_back(m.seq * h);
      tensors.push_back(m.vocab * h / t);
    }
    reduction[rankOf(c)] +=
        chunkReductionSeconds(tensors, c == 0 ? &embeddingReduction : nullptr);
  }
  for (int64_t r = 0; r < plan.pp; ++r) {
    BytesByKind rankOptimizer;
    rankOptimizer.add(optimizerBytes, rankParams[r]);
    epilogue[r] = (overlapsReduction ? 0 : reduction[r]) +
                  kernelsSeconds(hw, rankOptimizer, 1);
    if (r == 0)
      epilogue[r] += costs.wholeVocabularyScatterSeconds();
    // A tied table on two ranks (not ZB-V's, whose first and last chunks
    // share rank 0) exchanges its gradient, each adding the other's into
    // its own.
    if (plan.pp > 1 && m.tiedEmbeddings && rankOf(0) != rankOf(chunks - 1) &&
        (r == rankOf(0) || r == rankOf(chunks - 1)))
      epilogue[r] +=
          collectiveSeconds(hw, CollectiveKind::PointToPoint,
                            m.vocab * h / t * 4, 2, ppInter ? 1 : 2) +
          costs.memory("add", 3 * m.vocab * h / t * 4);
  }
  double p2p = plan.pp > 1 ? costs.p2pSeconds(ppInter) : 0;

  PlanEstimate estimate;
  // Memory: the rank with the largest peak. Per microbatch-chunk in flight,
  // its layers' stash; with deferred weight gradients what W reads stays
  // until W, with the output gradients B writes for it.
  int64_t stash = stashBytesPerLayer(m, plan);
  PlanChoice none = plan;
  none.remat = "none";
  DeferredWeightBytes deferred = deferredWeightBytesPerLayer(m, none);
  double microbatchTokens = static_cast<double>(plan.microbatchSize) * m.seq;
  // One layer's working set while its backward runs; with recomputation,
  // what the recomputed forward rebuilds beside the backward's own scratch
  // (selective: the held layer and the working set count the layer twice,
  // which covers that scratch).
  int64_t workspace = plan.remat == "none" ? backwardGradientBytes(m, plan)
                                           : stashBytesPerLayer(m, none);
  // With sequence parallelism a layer's backward holds whole-sequence
  // buffers beside its shards: the gathered input of the half and the
  // partial sums of the input gradient before their reduce-scatter
  // (Llama's gate and up apart, and their sum).
  if (plan.sequenceParallel && plan.remat == "full")
    workspace += static_cast<int64_t>(std::llround(
        (m.llama ? 5 : 3) * m.elementBytes * microbatchTokens * h));
  // Unfused attention's s×s buffers may outweigh the layer's working set
  // (fp32, long sequences): then the attention's moment is the larger. A
  // layer without recomputation holds its probabilities in the stash.
  if (!m.fusedAttention && plan.remat != "none")
    workspace = std::max(workspace, attentionBackwardBytes(m, plan));
  // A stage's input, as received from the stage before (and its output).
  double inputBytes =
      microbatchTokens * h * m.elementBytes / (plan.sequenceParallel ? t : 1);
  // The last stage: the logits and their gradient.
  double logitsBytes = microbatchTokens * (m.vocab / t) * m.elementBytes * 2;
  // The first stage: with a vocabulary-parallel table (tp > 1) whose
  // gradient is not computed in blocks (more tokens than rows) the
  // embedding's gradient is summed over the whole vocabulary (fp32) and
  // reduce-scattered once per step; each microbatch keeps its embedding
  // dropout's mask (a byte per element).
  double wholeVocabGradBytes = costs.wholeVocabularyGradientBytes();
  double embeddingMaskBytes =
      m.embeddingDropout > 0 ? inputBytes / m.elementBytes : 0;
  // The first chunk's table (and GPT-2's positions): only its F reads
  // their model-precision copies (the embedding), but where the tied head
  // on the same rank reads the table's too: those copies die with the
  // chunk's last F, the chunk's others with its last B.
  bool headReadsTable = m.tiedEmbeddings && rankOf(0) == rankOf(chunks - 1);
  double copiesReadByF = ((headReadsTable ? 0 : m.vocab * h / t) +
                          (m.llama ? 0 : static_cast<double>(m.seq) * h)) *
                         copyBytesEach;
  for (int64_t r = 0; r < plan.pp; ++r) {
    int64_t params = static_cast<int64_t>(rankParams[r] * paramBytesEach);
    int64_t grads = static_cast<int64_t>(rankParams[r] * 4);
    int64_t optimizer = static_cast<int64_t>(rankParams[r] * 8);
    bool first = r == 0, last = rankOf(chunks - 1) == r;
    double layersHeld;
    // What W reads and the output gradients B wrote for it, per layer.
    double toW =
        deferred.outputGradients +
        (plan.remat == "full" ? deferred.weightInputs
                              : std::min(stash, deferred.weightInputs));
    // At a split B's end its last layer's working set is what that layer's
    // W reads (held from there): counted once, not in both.
    double workingReadByW = std::min<double>(toW, workspace);
    // The last stage's deferred W of the LM head: its input (the final
    // norm's output) and the logits' gradient.
    double headToW = inputBytes + logitsBytes / 2;
    // Between the last chunk's F and B each microbatch holds the final
    // norm's input and output and the logits (the loss's gradient reads
    // them in B): beside the one whose B runs (the working set's logits),
    // those of the others in flight there (a GPipe last stage's).
    double headStash = 2 * inputBytes + logitsBytes / 2;
    if (schedule) {
      // The rank's list walked: after each compute, every microbatch-chunk
      // between its F and its B holds its chunk's layers' stash, between B
      // and a deferred W what W reads; the most at once. Chunks whose
      // in-flight counts differ (ZB-V's two legs, interleaving's) weigh by
      // their own layers.
      double held = 0;
      int64_t headsHeld = 0;
      layersHeld = 0;
      auto chunkToW = [&](int64_t c) {
        return toW * chunkLayers[c] + (c == chunks - 1 ? headToW : 0);
      };
      // The peak is where the stash, what W reads and the copies still
      // live add up to the most: with deferred W it comes late, in the
      // last Bs, after some chunks' copies have died.
      // (Each chunk's last B is near the list's end: found from there.)
      const std::vector<pipeline::Action> &actions = schedule->actions[r];
      std::vector<size_t> lastBackward(chunks, actions.size());
      for (size_t i = actions.size(), found = 0;
           i-- > 0 && found < static_cast<size_t>(plan.virtualStages);)
        if (actions[i].kind == pipeline::ActionKind::Backward &&
            lastBackward[actions[i].chunk] == actions.size()) {
          lastBackward[actions[i].chunk] = i;
          ++found;
        }
      size_t lastForwardOfFirst = actions.size();
      for (auto [i, action] : llvm::enumerate(actions))
        if (action.kind == pipeline::ActionKind::Forward && action.chunk == 0)
          lastForwardOfFirst = i;
      double copiesLive = rankParams[r] * copyBytesEach, copiesAtPeak = 0;
      double mostWithCopies = -1;
      for (auto [i, action] : llvm::enumerate(actions)) {
        int64_t c = action.chunk;
        double workingInHeld = 0;
        switch (action.kind) {
        case pipeline::ActionKind::Forward:
          held += static_cast<double>(stash) * chunkLayers[c];
          headsHeld += c == chunks - 1;
          if (i == lastForwardOfFirst)
            copiesLive -= copiesReadByF;
          break;
        case pipeline::ActionKind::Backward:
          held -= static_cast<double>(stash) * chunkLayers[c];
          headsHeld -= c == chunks - 1;
          if (!action.fusedWeight) {
            held += chunkToW(c);
            workingInHeld = workingReadByW;
          }
          if (lastBackward[c] == i)
            copiesLive -=
                chunkParams[c] * copyBytesEach - (c == 0 ? copiesReadByF : 0);
          break;
        case pipeline::ActionKind::Weight:
          held -= chunkToW(c);
          break;
        default:
          continue;
        }
        double now = held - workingInHeld +
                     static_cast<double>(std::max<int64_t>(0, headsHeld - 1)) *
                         headStash;
        if (now + copiesLive > mostWithCopies) {
          mostWithCopies = now + copiesLive;
          layersHeld = now;
          copiesAtPeak = copiesLive;
        }
      }
      params = static_cast<int64_t>(rankParams[r] * 4 + copiesAtPeak);
    } else if (deferredW) {
      // x microbatches between F and B hold the stash, y between B and W
      // what W reads and the output gradients B wrote for it: x at most the
      // schedule's F..B count, x + y its F..W count, y the difference and
      // one more (the last stage defers each W the longest).
      int64_t most = untilW(r), mostStashed = untilB(r);
      int64_t mostToW = std::min(plan.microbatches * plan.virtualStages,
                                 most - mostStashed + plan.virtualStages);
      int64_t x, y;
      if (toW >= stash) {
        y = std::min(mostToW, most);
        x = std::min(mostStashed, most - y);
      } else {
        x = std::min(mostStashed, most);
        y = std::min(mostToW, most - x);
      }
      layersHeld =
          (x * static_cast<double>(stash) + y * toW) * rankLayersPerChunk(r);
      if (last)
        layersHeld += y * headToW;
      // The most what W reads is held at a B's end (as in the walk).
      if (toW >= stash && y > 0)
        layersHeld -= workingReadByW;
    } else {
      layersHeld = untilB(r) * rankLayersPerChunk(r) * stash;
      if (last && *kind == pipeline::ScheduleKind::GPipe)
        layersHeld += (plan.microbatches - 1) * headStash;
      // GPipe's peak comes after every F.
      if (first && *kind == pipeline::ScheduleKind::GPipe)
        params -= static_cast<int64_t>(copiesReadByF);
    }
    // Transfers between stages: each receives its next input one compute
    // early, and double-buffers what it sends and receives (as far as
    // there are microbatch-chunks to buffer: one microbatch on one chunk
    // per rank has one of each and nothing to receive early).
    int64_t inFlight = plan.microbatches * plan.virtualStages;
    double buffered = std::min<int64_t>(2, inFlight);
    double transfers =
        plan.pp == 1
            ? 0
            : (first ? 2 * buffered : (inFlight > 1 ? 1 : 0) + 3 * buffered) *
                  inputBytes;
    // GPipe's peak comes after every F: a stage's received activations are
    // its stash's first inputs, and in flight are its activations' sends,
    // its gradients' receives and sends (double-buffered each), as far as
    // the stage has them.
    if (plan.pp > 1 && *kind == pipeline::ScheduleKind::GPipe)
      transfers =
          ((last ? 0 : 2 * buffered) + (first ? 0 : buffered)) * inputBytes;
    double firstStage =
        first ? wholeVocabGradBytes + untilW(r) * embeddingMaskBytes : 0;
    // The working set: a layer's backward, or where the loss is, the
    // logits and their gradient (the larger: they are not live at once).
    double working = last ? std::max<double>(workspace, logitsBytes)
                          : static_cast<double>(workspace);
    // Beside the loss's gradient GPipe's last stage still holds the
    // microbatch's final norm input and output.
    if (last && plan.pp > 1 && *kind == pipeline::ScheduleKind::GPipe)
      working = std::max<double>(workspace, logitsBytes + 2 * inputBytes);
    int64_t activations =
        static_cast<int64_t>(layersHeld + transfers + firstStage + working);
    // With one microbatch on one stage no gradient is summed (a pipeline's
    // actions add each microbatch's into a sum zeroed at the step's start,
    // live throughout, one microbatch or more): each
    // is written by the backward as the activations it reads die, and as
    // the model-precision copies of the weights (bf16 beside the fp32
    // masters, cast at the step's start) die, each after its layer's
    // backward: the activations' peak (at the loss) comes before the
    // gradients' (whole but for the first layer's, beside its backward's
    // working set).
    int64_t peak;
    if (plan.microbatches > 1 || plan.pp > 1) {
      peak = params + optimizer + grads + activations;
    } else {
      int64_t masters = static_cast<int64_t>(rankParams[r] * 4);
      peak = masters + optimizer +
             std::max(grads + workspace, params - masters + activations);
    }
    if (peak > estimate.peakBytes) {
      estimate.peakBytes = peak;
      estimate.peakStage = r;
      estimate.paramBytes = params;
      estimate.gradBytes = grads;
      estimate.optimizerBytes = optimizer;
      estimate.activationBytes = activations;
    }
  }

  // Time.
  int64_t slowest = 0;
  // The replay's communication on the slowest rank (its waits for the
  // stream's reductions included), when it replays.
  std::optional<double> replayedCommunication;
  std::vector<Busy> rankBusy(plan.pp);
  for (int64_t c = 0; c < chunks; ++c) {
    Busy &busy = rankBusy[rankOf(c)];
    busy += chunkCosts[c].forward;
    busy += chunkCosts[c].backward;
    busy += chunkCosts[c].weight;
  }
  if (overlapsReduction && (!simulate || plan.pp == 1)) {
    // Layer j of L (in backward order) hands its reduction (R / L) to the
    // stream when its part of the last backward (B / L each) is done; the
    // stream ends at max_j (j B / L + (L - j + 1) R / L): past the backward
    // by max(R / L, R - B (L - 1) / L). The embedding's (E, on the first
    // stage) goes out last, with the last layer's.
    for (int64_t r = 0; r < plan.pp; ++r) {
      double layers = rankLayersPerChunk(r) * plan.virtualStages;
      double backward = 0;
      for (int64_t c = 0; c < chunks; ++c)
        if (rankOf(c) == r)
          backward +=
              chunkCosts[c].backward.total() + chunkCosts[c].weight.total();
      double last = r == rankOf(0) ? embeddingReduction : 0;
      epilogue[r] += std::max((reduction[r] - last) / layers + last,
                              reduction[r] - backward * (layers - 1) / layers);
    }
  }
  if (!simulate || plan.pp == 1) {
    double worst = 0;
    for (int64_t r = 0; r < plan.pp; ++r) {
      double c = rankBusy[r].total();
      if (c + epilogue[r] / plan.microbatches > worst) {
        worst = c + epilogue[r] / plan.microbatches;
        slowest = r;
      }
    }
    // The slowest rank's work per microbatch sets the steady state (its
    // transfers overlap: each is started early and waited for late); each
    // other rank adds its share of the fill and the drain once: its whole
    // F + B + W (1F1B), that over v for interleaving (the fill passes a
    // chunk of each rank), and for the zero-bubble schedules F + B less
    // the W that fills the wait, ZB-V's two chunks' Ws (both legs) once
    // each rank has 2p microbatches (the zero-bubble paper's
    // (p - 1)(F + B - 2W) per chunk). With few microbatches the W cannot
    // fill it: no faster than the last microbatch's way through every
    // chunk after its forward enters, its W last.
    double microbatches = static_cast<double>(plan.microbatches);
    double v = static_cast<double>(plan.virtualStages);
    std::vector<Busy> rankForward(plan.pp), rankBackward(plan.pp),
        rankWeight(plan.pp);
    for (int64_t c = 0; c < chunks; ++c) {
      rankForward[rankOf(c)] += chunkCosts[c].forward;
      rankBackward[rankOf(c)] += chunkCosts[c].backward;
      rankWeight[rankOf(c)] += chunkCosts[c].weight;
    }
    bool zeroBubble = *kind == pipeline::ScheduleKind::ZBH1 ||
                      *kind == pipeline::ScheduleKind::ZBV;
    double weightsFilling =
        *kind == pipeline::ScheduleKind::ZBV && plan.microbatches >= 2 * plan.pp
            ? 2
            : 1;
    double fillAndDrain = 0;
    for (int64_t r = 0; r < plan.pp; ++r) {
      if (r == slowest)
        continue;
      double share =
          zeroBubble
              ? std::max(0.0, rankForward[r].total() + rankBackward[r].total() -
                                  weightsFilling * rankWeight[r].total())
              : rankBusy[r].total();
      fillAndDrain += share + 2 * v * p2p;
    }
    double step =
        microbatches * (rankBusy[slowest].total() + (zeroBubble ? 0 : p2p)) +
        fillAndDrain / v;
    if (zeroBubble) {
      double lastMicrobatch = 0, period = 0;
      for (int64_t c = 0; c < chunks; ++c) {
        lastMicrobatch +=
            chunkCosts[c].forward.total() + chunkCosts[c].backward.total();
        if (c > 0 && rankOf(c) != rankOf(c - 1))
          lastMicrobatch += 2 * p2p;
      }
      for (int64_t r = 0; r < plan.pp; ++r)
        period =
            std::max(period, rankForward[r].total() + rankBackward[r].total());
      step = std::max(step, lastMicrobatch + (microbatches - 1) * period +
                                chunkCosts[0].weight.total());
    }
    estimate.stepSeconds = step + epilogue[slowest];
  } else {
    std::vector<std::vector<sim::Op>> ranks(plan.pp);
    for (int64_t r = 0; r < plan.pp; ++r) {
      std::vector<sim::Op> &ops = ranks[r];
      auto addBusy = [&](const Busy &busy) {
        if (busy.recompute > 0)
          ops.push_back(sim::Op::busy(busy.recompute, sim::Recompute));
        if (busy.compute > 0)
          ops.push_back(sim::Op::busy(busy.compute, sim::Compute));
        if (busy.communication > 0)
          ops.push_back(sim::Op::busy(busy.communication, sim::Communication));
      };
      // The rank's list as the stages run it: each transfer started early
      // and waited for late (pipeline::asyncTransferList).
      std::vector<pipeline::ListedAction> listed =
          pipeline::asyncTransferList(schedule->actions[r]);
      // Overlapped reductions: each chunk's goes out layer by layer in the
      // last action that writes its weight gradients (the last microbatch's
      // B, or W where the schedule defers it), on the rank's stream.
      std::vector<size_t> lastWeight(chunks, listed.size());
      for (size_t a = 0; a < listed.size(); ++a)
        if (listed[a].action.kind == pipeline::ActionKind::Weight ||
            (listed[a].action.kind == pipeline::ActionKind::Backward &&
             listed[a].action.fusedWeight))
          lastWeight[listed[a].action.chunk] = a;
      double last = r == rankOf(0) ? embeddingReduction : 0;
      double chunkReduction =
          (reduction[r] - last) / static_cast<double>(plan.virtualStages);
      int64_t lastStart = -1;
      auto startReduction = [&](double seconds) {
        sim::Op start = sim::Op::busy(seconds, sim::Communication);
        start.kind = sim::Op::CollectiveStart;
        lastStart = static_cast<int64_t>(ops.size());
        ops.push_back(start);
      };
      auto addBusyReducing = [&](const Busy &busy, int64_t chunk) {
        double layers = static_cast<double>(chunkLayers[chunk]);
        for (int64_t l = 0; l < chunkLayers[chunk]; ++l) {
          addBusy(busy.scaled(1.0 / layers));
          startReduction(chunkReduction / layers);
        }
        if (chunk == 0)
          startReduction(embeddingReduction);
      };
      // Each started transfer's op, by its kind, microbatch and chunk.
      std::map<std::tuple<pipeline::ActionKind, int, int>, int64_t> startOf;
      for (size_t a = 0; a < listed.size(); ++a) {
        const pipeline::Action &action = listed[a].action;
        const PhaseCosts &cost = chunkCosts[action.chunk];
        bool reduces = overlapsReduction && lastWeight[action.chunk] == a;
        if (!action.isCompute()) {
          std::tuple key{action.kind, action.microbatch, action.chunk};
          int peer = schedule->rankOf(action.peerChunk());
          switch (listed[a].step) {
          case pipeline::TransferStep::Start:
            startOf[key] = static_cast<int64_t>(ops.size());
            ops.push_back(sim::Op::transferWith(
                action.isSend() ? sim::Op::SendStart : sim::Op::RecvStart, peer,
                p2p));
            break;
          case pipeline::TransferStep::Wait: {
            sim::Op wait;
            wait.kind = sim::Op::Wait;
            wait.transfer = startOf.at(key);
            ops.push_back(wait);
            break;
          }
          case pipeline::TransferStep::Whole:
            ops.push_back(sim::Op::transferWith(
                action.isSend() ? sim::Op::Send : sim::Op::Recv, peer, p2p));
            break;
          }
          continue;
        }
        switch (action.kind) {
        case pipeline::ActionKind::Forward:
          addBusy(cost.forward);
          break;
        case pipeline::ActionKind::Backward:
          if (reduces) {
            Busy both = cost.backward;
            both += cost.weight;
            addBusyReducing(both, action.chunk);
          } else {
            addBusy(cost.backward);
            if (action.fusedWeight)
              addBusy(cost.weight);
          }
          break;
        default:
          if (reduces)
            addBusyReducing(cost.weight, action.chunk);
          else
            addBusy(cost.weight);
          break;
        }
      }
      // The optimizer reads the reduced gradients.
      if (lastStart >= 0) {
        sim::Op wait;
        wait.kind = sim::Op::Wait;
        wait.transfer = lastStart;
        ops.push_back(wait);
      }
      ops.push_back(sim::Op::busy(epilogue[r], sim::Communication));
    }
    std::optional<sim::Result> result = sim::simulate(ranks, error);
    if (!result)
      return std::nullopt;
    estimate.stepSeconds = result->makespan;
    for (int64_t r = 0; r < plan.pp; ++r)
      if (result->ranks[r].busyTotal() > result->ranks[slowest].busyTotal())
        slowest = r;
    replayedCommunication = result->ranks[slowest].busy[sim::Communication];
  }
  double microbatches = static_cast<double>(plan.microbatches);
  estimate.computeSeconds = rankBusy[slowest].compute * microbatches;
  estimate.recomputeSeconds = rankBusy[slowest].recompute * microbatches;
  estimate.communicationSeconds =
      replayedCommunication
          ? *replayedCommunication
          : rankBusy[slowest].communication * microbatches + epilogue[slowest];
  estimate.bubbleSeconds =
      std::max(0.0, estimate.stepSeconds - estimate.computeSeconds -
                        estimate.recomputeSeconds -
                        estimate.communicationSeconds);

  // FLOPs per device: the model's matrix products over all devices.
  double d = m.headDim, s = m.seq;
  double perToken = layerFlopsPerToken;
  double tokens = static_cast<double>(plan.microbatchSize) * s * microbatches *
                  plan.dp;
  double forward = tokens * (m.layers * perToken + 2 * h * model.vocab);
  // The hardware's beyond them: the padded vocabulary's rows (forward and
  // backward) and recomputation.
  double extra = 3 * tokens * 2 * h * (m.vocab - model.vocab);
  if (plan.remat == "full")
    extra += tokens * m.layers * perToken;
  else if (plan.remat == "selective" && !m.fusedAttention)
    extra += tokens * m.layers * 4 * s * m.heads * d;
  double devices = static_cast<double>(plan.tp * plan.pp * plan.dp);
  estimate.modelFlops = 3 * forward / devices;
  estimate.hardwareFlops = (3 * forward + extra) / devices;
  double peak = hw.peakFlops(m.elementBytes == 2 ? "bf16" : "fp32");
  if (peak == 0)
    peak = hw.peakFp32;
  estimate.mfu = estimate.modelFlops / estimate.stepSeconds / peak;
  estimate.hfu = estimate.hardwareFlops / estimate.stepSeconds / peak;
  return estimate;
}
