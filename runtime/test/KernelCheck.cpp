//===- KernelCheck.cpp - CPU kernels against PyTorch reference cases ------===//
//
// tpcrt-kernel-check DIR: runs every case file that kernel_reference.py wrote
// into DIR (inputs "in.*", expected outputs "out.*", kernel and attributes in
// the metadata) through the CPU kernels and checks, per output tensor,
// ||actual - expected|| / ||expected|| <= 1e-5 (casts, masks and counts: bit
// for bit). Forward kernels are checked against torch ops, backward kernels
// against torch.autograd, optimizers against torch.optim over several steps
// (the state after the last step). Prints the error of each case
// and the largest per kernel; exits non-zero on any failure, or when DIR holds
// no case (a check that checked nothing must not pass).
//
//===----------------------------------------------------------------------===//

#include "tpcrt/CpuKernels.h"
#include "tpcrt/CpuTrainingKernels.h"
#include "tpcrt/Random.h"
#include "tpcrt/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace tpcrt;

namespace {

// One kernel in float32 against torch in float64, norm-wise: the longest sum
// here has 257 terms, whose rounding grows like sqrt(n) u = 9.6e-7 (Higham &
// Mary 2019; the fast exp adds 3.4 u), so 1e-5 leaves 10x for the kernels'
// chains (layer norm, softmax, attention); docs/testing/tolerances.md.
constexpr double kTolerance = 1e-5;

struct Case {
  const SafetensorsFile *file;
  std::string kernel;

  std::string attr(const std::string &key) const {
    auto it = file->metadata().find(key);
    return it == file->metadata().end() ? std::string() : it->second;
  }
  bool hasAttr(const std::string &key) const {
    return file->metadata().count(key) != 0;
  }
  int64_t intAttr(const std::string &key) const {
    return std::stoll(attr(key));
  }
  double floatAttr(const std::string &key) const {
    return std::stod(attr(key));
  }

  Status floats(const std::string &name, std::vector<float> &out,
                std::vector<int64_t> *shape = nullptr) const {
    TensorView view;
    if (Status s = file->get(name, view); !s)
      return s;
    if (shape)
      *shape = view.shape;
    return toFloat32(view, out);
  }
  Status ints(const std::string &name, std::vector<int64_t> &out) const {
    TensorView view;
    if (Status s = file->get(name, view); !s)
      return s;
    return toInt64(view, out);
  }
  bool has(const std::string &name) const { return file->contains(name); }
};

int64_t product(const std::vector<int64_t> &shape, int64_t from = 0,
                int64_t to = INT64_MAX) {
  int64_t p = 1;
  for (int64_t i = from; i < std::min(to, static_cast<int64_t>(shape.size()));
       ++i)
    p *= shape[static_cast<size_t>(i)];
  return p;
}

Status needRank(const std::vector<int64_t> &shape, size_t minRank) {
  if (shape.size() < minRank)
    return Status::error("operand of rank " + std::to_string(shape.size()) +
                         ", need " + std::to_string(minRank));
  return Status::ok();
}

/// The dropout key of a case's seed, stream and step attributes.
uint64_t caseDropoutKey(const Case &c) {
  return dropoutKey(std::stoull(c.attr("seed")), std::stoull(c.attr("stream")),
                    std::stoull(c.attr("step")));
}

/// Casts in.x (f32) to bf16 and f16, and between them, and compares every
/// output of torch bit for bit.
Status runCast(const Case &c) {
  using cpu::FloatType;
  std::vector<float> x;
  if (Status s = c.floats("in.x", x); !s)
    return s;
  int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> bf16(x.size()), f16(x.size()), twice(x.size());
  std::vector<float> wide(x.size());
  auto check = [&](const char *name, const void *data, size_t bytes) {
    TensorView expected;
    if (Status s = c.file->get(name, expected); !s)
      return s;
    if (expected.numBytes != bytes)
      return Status::error(std::string(name) + ": size differs");
    const auto *actual = static_cast<const uint8_t *>(data);
    size_t width = bytes / x.size();
    for (size_t i = 0; i < x.size(); ++i)
      if (std::memcmp(actual + i * width, expected.data + i * width, width))
        return Status::error(std::string(name) + ": element " +
                             std::to_string(i) + " (from " +
                             std::to_string(x[i]) + ") differs from torch");
    return Status::ok();
  };
  Status s =
      cpu::cast(x.data(), FloatType::F32, n, FloatType::BF16, bf16.data());
  if (s)
    s = cpu::cast(x.data(), FloatType::F32, n, FloatType::F16, f16.data());
  if (s)
    s = check("out.bf16", bf16.data(), bf16.size() * 2);
  if (s)
    s = check("out.f16", f16.data(), f16.size() * 2);
  if (s)
    s = cpu::cast(f16.data(), FloatType::F16, n, FloatType::BF16, twice.data());
  if (s)
    s = check("out.bf16_from_f16", twice.data(), twice.size() * 2);
  if (s)
    s = cpu::cast(bf16.data(), FloatType::BF16, n, FloatType::F16,
                  twice.data());
  if (s)
    s = check("out.f16_from_bf16", twice.data(), twice.size() * 2);
  if (s)
    s = cpu::cast(bf16.data(), FloatType::BF16, n, FloatType::F32, wide.data());
  if (s)
    s = check("out.f32_from_bf16", wide.data(), wide.size() * 4);
  if (s)
    s = cpu::cast(f16.data(), FloatType::F16, n, FloatType::F32, wide.data());
  if (s)
    s = check("out.f32_from_f16", wide.data(), wide.size() * 4);
  return s;
}

using FloatOutputs = std::map<std::string, std::vector<float>>;
using IntOutputs = std::map<std::string, std::vector<int64_t>>;

/// The shape of expected output `name`.
Status outputShape(const Case &c, const std::string &name,
                   std::vector<int64_t> &shape) {
  TensorView view;
  if (Status s = c.file->get(name, view); !s)
    return s;
  shape = view.shape;
  return Status::ok();
}

cpu::WeightLayout layoutOf(const Case &c) {
  return c.attr("layout") == "in_out" ? cpu::WeightLayout::InOut
                                      : cpu::WeightLayout::OutIn;
}

/// Runs an optimizer case: `steps` updates of params in.p<i> with gradients
/// in.g<i>[t], global-norm clipping and the lr schedule, as torch did.
Status runOptimizer(const Case &c, FloatOutputs &actual) {
  int64_t numParams = c.intAttr("params"), steps = c.intAttr("steps");
  bool adamw = c.kernel == "adamw";
  std::vector<std::vector<float>> params(numParams), grads(numParams),
      first(numParams), second(numParams);
  for (int64_t i = 0; i < numParams; ++i) {
    std::string n = std::to_string(i);
    if (Status s = c.floats("in.p" + n, params[i]); !s)
      return s;
    if (Status s = c.floats("in.g" + n, grads[i]); !s)
      return s;
    first[i].assign(params[i].size(), 0.0f);
    second[i].assign(params[i].size(), 0.0f);
  }
  cpu::LrScheduleOptions schedule;
  schedule.kind = c.attr("schedule") == "cosine"
                      ? cpu::LrScheduleKind::Cosine
                      : cpu::LrScheduleKind::Constant;
  schedule.lr = c.floatAttr("lr");
  schedule.minLr = c.floatAttr("min_lr");
  schedule.warmupSteps = c.intAttr("warmup");
  schedule.decaySteps = c.intAttr("decay");
  std::vector<float> &lrs = actual["out.lrs"], &norms = actual["out.norms"];
  for (int64_t t = 1; t <= steps; ++t) {
    double sumSq = 0.0;
    for (int64_t i = 0; i < numParams; ++i) {
      auto n = static_cast<int64_t>(params[i].size());
      if (Status s = cpu::sumSquares(grads[i].data() + (t - 1) * n, n, &sumSq);
          !s)
        return s;
    }
    float norm, coefficient, lr;
    if (Status s =
            cpu::clipCoefficient(static_cast<float>(sumSq),
                                 c.floatAttr("max_norm"), &norm, &coefficient);
        !s)
      return s;
    if (Status s = cpu::lrSchedule(t, schedule, &lr); !s)
      return s;
    lrs.push_back(lr);
    norms.push_back(norm);
    for (int64_t i = 0; i < numParams; ++i) {
      auto n = static_cast<int64_t>(params[i].size());
      const float *g = grads[i].data() + (t - 1) * n;
      Status s = Status::ok();
      if (adamw) {
        cpu::AdamWOptions options{c.floatAttr("beta1"), c.floatAttr("beta2"),
                                  c.floatAttr("eps"),
                                  c.floatAttr("weight_decay")};
        s = cpu::adamwUpdate(params[i].data(), g, first[i].data(),
                             second[i].data(), n, lr, t, options, coefficient);
      } else {
        s = cpu::sgdUpdate(params[i].data(), g, first[i].data(), n, lr,
                           c.floatAttr("momentum"), c.floatAttr("weight_decay"),
                           coefficient);
      }
      if (!s)
        return s;
    }
  }
  for (int64_t i = 0; i < numParams; ++i) {
    std::string n = "out.p" + std::to_string(i);
    actual[n] = params[i];
    if (adamw) {
      actual[n + ".exp_avg"] = first[i];
      actual[n + ".exp_avg_sq"] = second[i];
    } else if (c.floatAttr("momentum") != 0.0) {
      actual[n + ".momentum"] = first[i];
    }
  }
  return Status::ok();
}

/// cross_entropy (dLogits null) or cross_entropy_grad of a case with a
/// "vocab" attribute (the real classes; the logits' other columns are
/// padding): the columns cut into "blocks" blocks, each run through the
/// block kernels as one rank of a group runs its block, the per-position
/// max and sums combined over the blocks here as the group's all-reduces
/// combine them.
Status runVocabBlocks(const Case &c, const std::vector<float> &logits,
                      int64_t columns, const std::vector<int64_t> &labels,
                      float scale, float *lossSum, int64_t *count,
                      std::vector<float> *dLogits) {
  int64_t vocab = c.intAttr("vocab"), blocks = c.intAttr("blocks");
  int64_t ignore = c.intAttr("ignore_index");
  auto positions = static_cast<int64_t>(labels.size());
  if (blocks < 1 || columns % blocks != 0)
    return Status::error("blocks " + std::to_string(blocks) +
                         " do not divide " + std::to_string(columns));
  int64_t width = columns / blocks;
  std::vector<std::vector<float>> part(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t p = 0; p < positions; ++p)
      part[b].insert(part[b].end(), logits.begin() + p * columns + b * width,
                     logits.begin() + p * columns + (b + 1) * width);
  size_t n = labels.size();
  std::vector<float> max(n, -INFINITY), sumExp(n, 0.0f), target(n, 0.0f);
  std::vector<float> blockMax(n), blockSum(n), blockTarget(n);
  for (int64_t b = 0; b < blocks; ++b) {
    cpu::VocabBlock block{b * width, vocab};
    if (Status s =
            cpu::crossEntropyBlockMax(part[b].data(), labels.data(), positions,
                                      width, block, ignore, blockMax.data());
        !s)
      return s;
    for (size_t p = 0; p < n; ++p)
      max[p] = std::max(max[p], blockMax[p]);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    cpu::VocabBlock block{b * width, vocab};
    if (Status s = cpu::crossEntropyBlockSums(
            part[b].data(), labels.data(), positions, width, block, ignore,
            max.data(), blockSum.data(), blockTarget.data());
        !s)
      return s;
    for (size_t p = 0; p < n; ++p) {
      sumExp[p] += blockSum[p];
      target[p] += blockTarget[p];
    }
  }
  if (!dLogits)
    return cpu::crossEntropyCombine(labels.data(), positions, ignore,
                                    max.data(), sumExp.data(), target.data(),
                                    lossSum, count);
  dLogits->assign(logits.size(), NAN);
  std::vector<float> grad(part[0].size());
  for (int64_t b = 0; b < blocks; ++b) {
    cpu::VocabBlock block{b * width, vocab};
    if (Status s = cpu::crossEntropyBlockGrad(
            part[b].data(), labels.data(), positions, width, block, ignore,
            max.data(), sumExp.data(), scale, grad.data());
        !s)
      return s;
    for (int64_t p = 0; p < positions; ++p)
      std::copy(grad.begin() + p * width, grad.begin() + (p + 1) * width,
                dLogits->begin() + p * columns + b * width);
  }
  return Status::ok();
}

/// Runs a backward or optimizer case (CpuTrainingKernels.h).
Status runTrainingCase(const Case &c, FloatOutputs &actual, IntOutputs &ints,
                       bool &handled) {
  const std::string &k = c.kernel;
  handled = true;
  std::vector<float> x, w, dy, out, out2, out3;
  std::vector<int64_t> xs, ws, ys, ids;
  Status s = Status::ok();
  auto resultLike = [&](const char *name, std::vector<float> &v) {
    std::vector<int64_t> shape;
    if (Status e = outputShape(c, name, shape); !e)
      return e;
    v.assign(static_cast<size_t>(product(shape)), std::nanf(""));
    return Status::ok();
  };
  if (k == "adamw" || k == "sgd")
    return runOptimizer(c, actual);
  if (k == "embedding_grad") {
    if (!(s = c.floats("in.table", w, &ws)) || !(s = needRank(ws, 2)) ||
        !(s = c.ints("in.ids", ids)) || !(s = c.floats("in.dy", dy)) ||
        !(s = resultLike("out.dtable", out)))
      return s;
    s = cpu::embeddingGrad(dy.data(), ids.data(),
                           static_cast<int64_t>(ids.size()), ws[0], ws[1],
                           out.data());
    actual["out.dtable"] = out;
  } else if (k == "linear_grad") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = c.floats("in.w", w, &ws)) ||
        !(s = c.floats("in.dy", dy)) || !(s = needRank(xs, 1)))
      return s;
    int64_t kk = xs.back(), m = product(xs) / kk, n = product(ws) / kk;
    out.assign(x.size(), NAN);
    out2.assign(w.size(), NAN);
    out3.assign(static_cast<size_t>(n), NAN);
    std::vector<double> scratch(static_cast<size_t>(n));
    if ((s = cpu::linearInputGrad(dy.data(), w.data(), m, kk, n, layoutOf(c),
                                  out.data())) &&
        (s = cpu::linearWeightGrad(x.data(), dy.data(), m, kk, n, layoutOf(c),
                                   out2.data())))
      s = cpu::sumTo(dy.data(), m * n, n, scratch.data(), out3.data());
    actual["out.dx"] = out;
    actual["out.dw"] = out2;
    actual["out.db"] = out3;
  } else if (k == "sum_to") {
    if (!(s = c.floats("in.x", x)) || !(s = resultLike("out.out", out)))
      return s;
    std::vector<double> scratch(out.size());
    s = cpu::sumTo(x.data(), static_cast<int64_t>(x.size()),
                   static_cast<int64_t>(out.size()), scratch.data(),
                   out.data());
    actual["out.out"] = out;
  } else if (k == "layer_norm_grad" || k == "rms_norm_grad") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = c.floats("in.w", w)) ||
        !(s = c.floats("in.dy", dy)) || !(s = needRank(xs, 1)))
      return s;
    int64_t cols = xs.back(), rows = product(xs) / cols;
    float eps = static_cast<float>(c.floatAttr("epsilon"));
    out.assign(x.size(), NAN);
    out2.assign(static_cast<size_t>(cols), NAN);
    out3.assign(static_cast<size_t>(cols), NAN);
    std::vector<double> scratch(2 * static_cast<size_t>(cols));
    if (k == "layer_norm_grad") {
      if ((s = cpu::layerNormInputGrad(dy.data(), x.data(), w.data(), rows,
                                       cols, eps, out.data())))
        s = cpu::layerNormParamGrad(dy.data(), x.data(), rows, cols, eps,
                                    scratch.data(), out2.data(), out3.data());
      actual["out.db"] = out3;
    } else if ((s = cpu::rmsNormInputGrad(dy.data(), x.data(), w.data(), rows,
                                          cols, eps, out.data()))) {
      s = cpu::rmsNormParamGrad(dy.data(), x.data(), rows, cols, eps,
                                scratch.data(), out2.data());
    }
    actual["out.dx"] = out;
    actual["out.dw"] = out2;
  } else if (k == "gelu_grad" || k == "silu_grad") {
    if (!(s = c.floats("in.x", x)) || !(s = c.floats("in.dy", dy)))
      return s;
    out.assign(x.size(), NAN);
    auto n = static_cast<int64_t>(x.size());
    s = k == "silu_grad" ? cpu::siluGrad(dy.data(), x.data(), n, out.data())
                         : cpu::geluGrad(dy.data(), x.data(), n,
                                         c.attr("approximation") == "tanh"
                                             ? cpu::GeluApproximation::Tanh
                                             : cpu::GeluApproximation::Erf,
                                         out.data());
    actual["out.dx"] = out;
  } else if (k == "dropout_mask_apply") {
    if (!(s = c.floats("in.x", x)) || !(s = c.floats("in.dy", dy)))
      return s;
    auto n = static_cast<int64_t>(x.size());
    double rate = c.floatAttr("rate");
    std::vector<uint8_t> mask(x.size(), 7);
    out.assign(x.size(), NAN);
    out2.assign(x.size(), NAN);
    if ((s = cpu::dropoutMask(n, caseDropoutKey(c), rate, 0, mask.data())) &&
        (s = cpu::applyMask(x.data(), mask.data(), n, rate, out.data())))
      s = cpu::applyMask(dy.data(), mask.data(), n, rate, out2.data());
    actual["out.out"] = out;
    actual["out.dx"] = out2;
    ints["out.mask"].assign(mask.begin(), mask.end());
  } else if (k == "softmax_grad") {
    if (!(s = c.floats("in.y", x, &xs)) || !(s = c.floats("in.dy", dy)) ||
        !(s = needRank(xs, 2)))
      return s;
    size_t r = xs.size();
    out.assign(x.size(), NAN);
    s = cpu::softmaxGrad(dy.data(), x.data(),
                         product(xs, 0, static_cast<int64_t>(r) - 2), xs[r - 2],
                         xs[r - 1], c.intAttr("causal"), out.data());
    actual["out.dx"] = out;
  } else if (k == "attention_grad") {
    std::vector<float> v;
    std::vector<int64_t> vs;
    if (!(s = c.floats("in.q", x, &xs)) || !(s = c.floats("in.k", w, &ws)) ||
        !(s = c.floats("in.v", v, &vs)) || !(s = c.floats("in.dy", dy)) ||
        !(s = needRank(xs, 4)) || !(s = needRank(ws, 4)) ||
        !(s = needRank(vs, 4)))
      return s;
    // Given the forward's output and log-sum-exps (attention_lse's), the
    // kernel reads them instead of its softmax and rowsum(dP * P).
    std::vector<float> saved, lse;
    if (c.has("in.out") &&
        (!(s = c.floats("in.out", saved)) || !(s = c.floats("in.lse", lse))))
      return s;
    std::vector<float> scratch(cpu::attentionGradScratchSize(xs[2], ws[2]));
    std::vector<float> dk(w.size(), NAN), dv(v.size(), NAN);
    out.assign(x.size(), NAN);
    cpu::AttentionDropout dropout{caseDropoutKey(c), c.floatAttr("rate")};
    s = cpu::attentionGrad(
        dy.data(), x.data(), w.data(), v.data(), xs[0], xs[1], ws[1], xs[2],
        ws[2], xs[3], vs[3], c.intAttr("causal"),
        static_cast<float>(c.floatAttr("scale")), scratch.data(), out.data(),
        dk.data(), dv.data(), &dropout, AttentionLayout::HeadMajor,
        saved.empty() ? nullptr : saved.data(),
        lse.empty() ? nullptr : lse.data());
    actual["out.dq"] = out;
    actual["out.dk"] = dk;
    actual["out.dv"] = dv;
  } else if (k == "cross_entropy_grad") {
    if (!(s = c.floats("in.logits", x, &xs)) || !(s = needRank(xs, 1)) ||
        !(s = c.ints("in.labels", ids)))
      return s;
    out.assign(x.size(), NAN);
    int64_t count = -1;
    if ((s = cpu::countTargets(ids.data(), static_cast<int64_t>(ids.size()),
                               c.intAttr("ignore_index"), &count))) {
      float scale;
      if ((s = cpu::inverseCount(&count, &scale)))
        s = c.hasAttr("vocab")
                ? runVocabBlocks(c, x, xs.back(), ids, scale, nullptr, nullptr,
                                 &out)
                : cpu::crossEntropyGrad(
                      x.data(), ids.data(), static_cast<int64_t>(ids.size()),
                      xs.back(), c.intAttr("ignore_index"), scale, out.data());
    }
    actual["out.dlogits"] = out;
    ints["out.count"] = {count};
  } else if (k == "count_targets") {
    int64_t count = -1;
    if (!(s = c.ints("in.labels", ids)))
      return s;
    s = cpu::countTargets(ids.data(), static_cast<int64_t>(ids.size()),
                          c.intAttr("ignore_index"), &count);
    ints["out.count"] = {count};
  } else if (k == "pad" || k == "sum_groups") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = resultLike("out.out", out)))
      return s;
    int rank = static_cast<int>(xs.size());
    s = k == "pad"
            ? cpu::pad(x.data(), xs.data(), rank, c.intAttr("dim"),
                       c.intAttr("offset"), c.intAttr("extent"), out.data())
            : cpu::sumGroups(x.data(), xs.data(), rank, c.intAttr("dim"),
                             c.intAttr("repeats"), out.data());
    actual["out.out"] = out;
  } else {
    handled = false;
  }
  return s;
}

/// Runs one case; fills `actual` with the computed outputs by name.
Status runCase(const Case &c, FloatOutputs &actual, IntOutputs &ints,
               int64_t &count) {
  const std::string &k = c.kernel;
  if (k == "cast")
    return runCast(c);
  bool handled = false;
  if (Status s = runTrainingCase(c, actual, ints, handled); !s || handled)
    return s;
  std::vector<float> x, w, b, out;
  std::vector<int64_t> xs, ws, bs, ids;
  std::vector<float> expected;
  std::vector<int64_t> es;
  if (Status s = c.floats(k == "cross_entropy" ? "out.loss_sum" : "out.out",
                          expected, &es);
      !s)
    return s;
  out.assign(expected.size(), std::nanf(""));
  Status s = Status::ok();
  if (k == "embedding") {
    if (!(s = c.floats("in.table", w, &ws)) || !(s = needRank(ws, 2)) ||
        !(s = c.ints("in.ids", ids)))
      return s;
    s = cpu::embedding(w.data(), ws[0], ws[1], ids.data(),
                       static_cast<int64_t>(ids.size()), out.data());
  } else if (k == "linear") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = c.floats("in.w", w, &ws)) ||
        !(s = needRank(xs, 1)))
      return s;
    bool hasBias = c.has("in.b");
    if (hasBias && !(s = c.floats("in.b", b)))
      return s;
    bool inOut = c.attr("layout") == "in_out";
    int64_t kk = xs.back();
    int64_t m = product(xs) / kk;
    int64_t n = product(ws) / kk;
    s = cpu::linear(x.data(), w.data(), hasBias ? b.data() : nullptr, m, kk, n,
                    inOut ? cpu::WeightLayout::InOut : cpu::WeightLayout::OutIn,
                    out.data());
  } else if (k == "batch_matmul") {
    if (!(s = c.floats("in.lhs", x, &xs)) ||
        !(s = c.floats("in.rhs", w, &ws)) || !(s = needRank(xs, 2)) ||
        !(s = needRank(ws, xs.size())))
      return s;
    bool tl = c.intAttr("transpose_lhs"), tr = c.intAttr("transpose_rhs");
    size_t r = xs.size();
    int64_t m = tl ? xs[r - 1] : xs[r - 2];
    int64_t kk = tl ? xs[r - 2] : xs[r - 1];
    int64_t n = tr ? ws[r - 2] : ws[r - 1];
    s = cpu::batchMatmul(
        x.data(), w.data(), product(xs, 0, static_cast<int64_t>(r) - 2), m, kk,
        n, tl, tr, static_cast<float>(c.floatAttr("scale")), out.data());
  } else if (k == "layer_norm" || k == "rms_norm") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = c.floats("in.weight", w)) ||
        !(s = needRank(xs, 1)))
      return s;
    int64_t cols = xs.back();
    float eps = static_cast<float>(c.floatAttr("epsilon"));
    if (k == "layer_norm") {
      if (!(s = c.floats("in.bias", b)))
        return s;
      s = cpu::layerNorm(x.data(), w.data(), b.data(), product(xs) / cols, cols,
                         eps, out.data());
    } else {
      s = cpu::rmsNorm(x.data(), w.data(), product(xs) / cols, cols, eps,
                       out.data());
    }
  } else if (k == "gelu" || k == "silu") {
    if (!(s = c.floats("in.x", x)))
      return s;
    int64_t n = static_cast<int64_t>(x.size());
    if (k == "silu")
      s = cpu::silu(x.data(), n, out.data());
    else
      s = cpu::gelu(x.data(), n,
                    c.attr("approximation") == "tanh"
                        ? cpu::GeluApproximation::Tanh
                        : cpu::GeluApproximation::Erf,
                    out.data());
  } else if (k == "add" || k == "mul") {
    if (!(s = c.floats("in.lhs", x)) || !(s = c.floats("in.rhs", w)))
      return s;
    auto fn = k == "add" ? cpu::add : cpu::mul;
    s = fn(x.data(), static_cast<int64_t>(x.size()), w.data(),
           static_cast<int64_t>(w.size()), out.data());
  } else if (k == "softmax") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = needRank(xs, 2)))
      return s;
    size_t r = xs.size();
    s = cpu::softmax(x.data(), product(xs, 0, static_cast<int64_t>(r) - 2),
                     xs[r - 2], xs[r - 1], c.intAttr("causal"), out.data());
  } else if (k == "attention") {
    std::vector<float> v;
    std::vector<int64_t> vs;
    if (!(s = c.floats("in.q", x, &xs)) || !(s = c.floats("in.k", w, &ws)) ||
        !(s = c.floats("in.v", v, &vs)) || !(s = needRank(xs, 4)) ||
        !(s = needRank(ws, 4)) || !(s = needRank(vs, 4)))
      return s;
    std::vector<float> scratch(cpu::attentionScratchSize(xs[2], ws[2]));
    cpu::AttentionDropout dropout;
    bool hasDropout = !c.attr("rate").empty();
    if (hasDropout)
      dropout = {caseDropoutKey(c), c.floatAttr("rate")};
    // Each row's log-sum-exp too (attention_lse).
    std::vector<float> lse(static_cast<size_t>(xs[0] * xs[1] * xs[2]), NAN);
    s = cpu::attention(x.data(), w.data(), v.data(), xs[0], xs[1], ws[1], xs[2],
                       ws[2], xs[3], vs[3], c.intAttr("causal"),
                       static_cast<float>(c.floatAttr("scale")), scratch.data(),
                       out.data(), hasDropout ? &dropout : nullptr,
                       AttentionLayout::HeadMajor, lse.data());
    actual["out.lse"] = lse;
  } else if (k == "dropout") {
    if (!(s = c.floats("in.x", x)))
      return s;
    s = cpu::dropout(x.data(), static_cast<int64_t>(x.size()),
                     caseDropoutKey(c), c.floatAttr("rate"),
                     c.intAttr("first_index"), out.data());
  } else if (k == "rotary") {
    if (!(s = c.floats("in.x", x, &xs)) || !(s = needRank(xs, 2)))
      return s;
    size_t r = xs.size();
    s = cpu::rotary(x.data(), product(xs, 0, static_cast<int64_t>(r) - 2),
                    xs[r - 2], xs[r - 1], c.floatAttr("theta"),
                    c.intAttr("offset"), out.data(), c.attr("inverse") == "1");
  } else if (k == "cross_entropy") {
    if (!(s = c.floats("in.logits", x, &xs)) || !(s = needRank(xs, 1)) ||
        !(s = c.ints("in.labels", ids)))
      return s;
    out.resize(1);
    s = c.hasAttr("vocab")
            ? runVocabBlocks(c, x, xs.back(), ids, 0.0f, out.data(), &count,
                             nullptr)
            : cpu::crossEntropy(x.data(), ids.data(),
                                static_cast<int64_t>(ids.size()), xs.back(),
                                c.intAttr("ignore_index"), out.data(), &count);
    actual["out.loss_sum"] = out;
    return s;
  } else if (k == "transpose" || k == "slice" || k == "repeat") {
    if (!(s = c.floats("in.x", x, &xs)))
      return s;
    int rank = static_cast<int>(xs.size());
    if (k == "transpose") {
      std::vector<int64_t> perm;
      std::string p = c.attr("permutation");
      for (size_t pos = 0; pos < p.size();) {
        size_t end = p.find(',', pos);
        if (end == std::string::npos)
          end = p.size();
        perm.push_back(std::stoll(p.substr(pos, end - pos)));
        pos = end + 1;
      }
      s = cpu::transpose(x.data(), xs.data(), rank, perm.data(), out.data());
    } else if (k == "slice") {
      s = cpu::slice(x.data(), xs.data(), rank, c.intAttr("dim"),
                     c.intAttr("offset"), c.intAttr("size"), out.data());
    } else {
      s = cpu::repeatInterleave(x.data(), xs.data(), rank, c.intAttr("dim"),
                                c.intAttr("repeats"), out.data());
    }
  } else {
    return Status::error("unknown kernel '" + k + "'");
  }
  actual["out.out"] = out;
  return s;
}

double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return INFINITY;
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    norm += static_cast<double>(b[i]) * b[i];
  }
  if (std::isnan(diff))
    return INFINITY;
  // An all-zero reference is compared absolutely.
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tpcrt-kernel-check CASE_DIR\n");
    return 2;
  }
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(argv[1], ec))
    if (entry.path().extension() == ".safetensors")
      paths.push_back(entry.path().string());
  if (ec) {
    std::fprintf(stderr, "cannot list %s: %s\n", argv[1], ec.message().c_str());
    return 1;
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) {
    std::fprintf(stderr, "no case files in %s\n", argv[1]);
    return 1;
  }
  std::printf("GEMM: %s\n", cpu::hasOpenBlas() ? "OpenBLAS" : "fallback");
  int failures = 0;
  std::map<std::string, double> worst;
  for (const std::string &path : paths) {
    SafetensorsFile file;
    std::string name = std::filesystem::path(path).stem().string();
    Status s = SafetensorsFile::open(path, file);
    Case c{&file, {}};
    FloatOutputs actual;
    IntOutputs ints;
    int64_t count = -1;
    if (s) {
      c.kernel = c.attr("kernel");
      try {
        s = runCase(c, actual, ints, count);
      } catch (const std::exception &e) { // std::stoll on a bad attribute
        s = Status::error(std::string("bad attribute: ") + e.what());
      }
    }
    if (!s) {
      std::printf("FAIL %-28s %s\n", name.c_str(), s.message().c_str());
      ++failures;
      continue;
    }
    double caseWorst = 0.0;
    for (const auto &[outName, values] : actual) {
      std::vector<float> expected;
      if (Status es = c.floats(outName, expected); !es) {
        std::printf("FAIL %-28s %s\n", name.c_str(), es.message().c_str());
        caseWorst = INFINITY;
        continue;
      }
      caseWorst = std::max(caseWorst, relativeError(values, expected));
    }
    bool countOk = true;
    if (c.kernel == "cross_entropy")
      ints["out.count"] = {count};
    for (const auto &[outName, values] : ints) {
      std::vector<int64_t> expected;
      countOk &= c.ints(outName, expected) && expected == values;
    }
    bool ok = caseWorst <= kTolerance && countOk;
    std::printf("%s %-28s %-14s rel err %.3e%s\n", ok ? "ok  " : "FAIL",
                name.c_str(), c.kernel.c_str(), caseWorst,
                countOk ? "" : " (integer output differs)");
    failures += !ok;
    worst[c.kernel] = std::max(worst[c.kernel], caseWorst);
  }
  std::printf("max relative error per kernel:\n");
  for (const auto &[kernel, err] : worst)
    std::printf("  %-14s %.3e\n", kernel.c_str(), err);
  std::printf("%zu cases, %d failed\n", paths.size(), failures);
  return failures == 0 ? 0 : 1;
}
