//===- CpuOptimizerKernels.cpp - training driver and optimizer kernels ----===//
//
// The optimizers follow torch.optim's single-tensor code paths operation by
// operation, in float with the scalars computed in double as Python computes
// them, so that a trajectory of several steps stays within rounding of
// torch's.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "tpcrt/CpuTrainingKernels.h"

#include <cmath>
#include <string>

namespace tpcrt {
namespace cpu {

using namespace detail;

Status countTargets(const int64_t *labels, int64_t count, int64_t ignoreIndex,
                    int64_t *out) {
  if (Status s = checkNonNegative("count_targets", {count}); !s)
    return s;
  int64_t n = 0;
  for (int64_t i = 0; i < count; ++i)
    n += labels[i] != ignoreIndex;
  *out = n;
  return Status::ok();
}

Status inverseCount(const int64_t *count, float *out) {
  if (*count < 0)
    return Status::error("inverse_count: negative count " +
                         std::to_string(*count));
  *out = *count == 0 ? 0.0f
                     : static_cast<float>(1.0 / static_cast<double>(*count));
  return Status::ok();
}

namespace {

Status checkStep(const char *kernel, int64_t step) {
  if (step < 1)
    return Status::error(std::string(kernel) + ": step " +
                         std::to_string(step) + " is not a 1-based step");
  return Status::ok();
}

} // namespace

Status adamwUpdate(float *param, const float *grad, float *expAvg,
                   float *expAvgSq, int64_t count, float lr, int64_t step,
                   const AdamWOptions &options, float gradScale) {
  if (Status s = checkNonNegative("adamw_update", {count}); !s)
    return s;
  if (Status s = checkStep("adamw_update", step); !s)
    return s;
  double lrValue = lr;
  auto decay = static_cast<float>(1.0 - lrValue * options.weightDecay);
  auto beta1 = static_cast<float>(options.beta1);
  auto beta2 = static_cast<float>(options.beta2);
  auto oneMinusBeta1 = static_cast<float>(1.0 - options.beta1);
  auto oneMinusBeta2 = static_cast<float>(1.0 - options.beta2);
  auto stepValue = static_cast<double>(step);
  double biasCorrection1 = 1.0 - std::pow(options.beta1, stepValue);
  double biasCorrection2 = 1.0 - std::pow(options.beta2, stepValue);
  auto negStepSize = static_cast<float>(-(lrValue / biasCorrection1));
  auto biasCorrection2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));
  auto eps = static_cast<float>(options.eps);
  for (int64_t i = 0; i < count; ++i) {
    float g = grad[i] * gradScale;
    float p = param[i] * decay;
    float m = expAvg[i] * beta1 + oneMinusBeta1 * g;
    float v = expAvgSq[i] * beta2 + oneMinusBeta2 * g * g;
    float denom = std::sqrt(v) / biasCorrection2Sqrt + eps;
    expAvg[i] = m;
    expAvgSq[i] = v;
    param[i] = p + negStepSize * m / denom;
  }
  return Status::ok();
}

Status sgdUpdate(float *param, const float *grad, float *momentumBuffer,
                 int64_t count, float lr, double momentum, double weightDecay,
                 float gradScale) {
  if (Status s = checkNonNegative("sgd_update", {count}); !s)
    return s;
  auto decay = static_cast<float>(weightDecay);
  auto mu = static_cast<float>(momentum);
  float negLr = -lr;
  for (int64_t i = 0; i < count; ++i) {
    float d = grad[i] * gradScale;
    if (weightDecay != 0.0)
      d = d + decay * param[i];
    if (!momentumBuffer) {
      param[i] = param[i] + negLr * d;
      continue;
    }
    float buf = momentumBuffer[i] * mu + d;
    momentumBuffer[i] = buf;
    param[i] = param[i] + negLr * buf;
  }
  return Status::ok();
}

Status sumSquares(const float *x, int64_t count, double *sum) {
  if (Status s = checkNonNegative("sum_squares", {count}); !s)
    return s;
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i)
    total += static_cast<double>(x[i]) * x[i];
  *sum += total;
  return Status::ok();
}

Status clipCoefficient(float sumSquares, double maxNorm, float *norm,
                       float *coefficient) {
  if (!(sumSquares >= 0.0f))
    return Status::error("clip_coefficient: sum of squares " +
                         std::to_string(sumSquares) + " is not >= 0");
  if (!(maxNorm >= 0.0))
    return Status::error("clip_coefficient: max norm " +
                         std::to_string(maxNorm) + " is not >= 0");
  *norm = std::sqrt(sumSquares);
  *coefficient = 1.0f;
  if (maxNorm > 0.0)
    *coefficient =
        std::min(1.0f, static_cast<float>(maxNorm) / (*norm + 1e-6f));
  return Status::ok();
}

constexpr double kPi = 3.14159265358979323846;

Status lrSchedule(int64_t step, const LrScheduleOptions &options, float *lr) {
  if (Status s = checkStep("lr_schedule", step); !s)
    return s;
  double value = options.lr;
  if (options.kind == LrScheduleKind::Cosine) {
    auto t = static_cast<double>(step);
    auto warmup = static_cast<double>(options.warmupSteps);
    auto decay = static_cast<double>(options.decaySteps);
    if (options.warmupSteps < 0 || options.decaySteps <= options.warmupSteps)
      return Status::error("lr_schedule: decay steps " +
                           std::to_string(options.decaySteps) +
                           " must exceed warm-up steps " +
                           std::to_string(options.warmupSteps) + " >= 0");
    if (step <= options.warmupSteps) {
      value = options.lr * t / warmup;
    } else {
      double progress = std::min(1.0, (t - warmup) / (decay - warmup));
      value = options.minLr + (options.lr - options.minLr) * 0.5 *
                                  (1.0 + std::cos(kPi * progress));
    }
  }
  *lr = static_cast<float>(value);
  return Status::ok();
}

} // namespace cpu
} // namespace tpcrt
