//===- AttentionRace.h - cuDNN or the own kernels, as measured -*- C++ -*-===//
//
// With TPCRT_CUDA_ATTENTION unset (or =auto) the CUDA device runs an
// attention kernel through cuDNN's fused attention only where cuDNN measured
// faster than the device's own kernels: at prepare, each shape that cuDNN
// takes (the calls of one cuDNN plan) is timed both ways on its first
// call's buffers, and the shape's calls keep cuDNN only where its fastest run
// beats the own kernels' fastest by the margin. The race itself is plain C++
// over a function that times one run (runtime/test/AttentionRaceTest.cpp
// drives it with made-up times); the device gives it CUDA events.
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_CUDA_ATTENTIONRACE_H
#define TPCRT_CUDA_ATTENTIONRACE_H

#include "tpcrt/Status.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace tpcrt::cuda {

class AttentionRace {
public:
  /// A shape in the race: the calls that share one cuDNN plan.
  struct Shape {
    const void *key = nullptr;
    std::string name;
    std::vector<uint32_t> calls;
    /// The fastest run of each, in seconds (0 before the race).
    double own = 0, cudnn = 0;
    /// cuDNN's error, where one of its runs failed (the own kernels keep
    /// the shape).
    std::string failure;
    bool cudnnWins = false;
  };

  /// Warm-up runs each way before the timed ones (cuDNN's first run builds
  /// its variant pack), the timed runs each way (alternating), and how much
  /// faster cuDNN must be, as a fraction of the own kernels' time: a near
  /// tie stays with the own kernels (the ones checked against the CPU
  /// device on every shape), and a margin keeps noise from flipping the
  /// choice between runs of one program.
  static constexpr int kWarmupRuns = 1;
  static constexpr int kTimedRuns = 5;
  static constexpr double kMargin = 0.03;

  /// Call `index`, of the shape that cuDNN plan `key` stands for (`name`
  /// describes it in the summary), joins the race.
  void add(const void *key, uint32_t index, const std::string &name) {
    for (Shape &shape : shapes_)
      if (shape.key == key) {
        shape.calls.push_back(index);
        return;
      }
    Shape shape;
    shape.key = key;
    shape.name = name;
    shape.calls.push_back(index);
    shapes_.push_back(std::move(shape));
  }

  /// Races every shape: `time(index, cudnn, seconds)` runs call `index`
  /// once, through cuDNN or the own kernels, and gives the run's seconds.
  /// An own kernel's error ends the race with it; a cuDNN error leaves the
  /// shape to the own kernels (said in summary()).
  template <typename TimeRun> Status run(TimeRun &&time) {
    for (Shape &shape : shapes_) {
      const uint32_t index = shape.calls.front();
      double fastest[2] = {std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::infinity()};
      for (int i = 0; i < kWarmupRuns + kTimedRuns && shape.failure.empty();
           ++i)
        for (int cudnn = 0; cudnn < 2; ++cudnn) {
          double seconds = 0;
          Status s = time(index, cudnn == 1, seconds);
          if (!s && !cudnn)
            return s.withContext(shape.name + ", timed on the own kernels");
          if (!s) {
            shape.failure = s.message();
            break;
          }
          if (i >= kWarmupRuns)
            fastest[cudnn] = std::min(fastest[cudnn], seconds);
        }
      if (!shape.failure.empty())
        continue;
      shape.own = fastest[0];
      shape.cudnn = fastest[1];
      shape.cudnnWins = shape.cudnn < shape.own * (1 - kMargin);
    }
    return Status::ok();
  }

  /// Whether call `index` runs through cuDNN (after run()).
  bool cudnnRuns(uint32_t index) const {
    for (const Shape &shape : shapes_)
      if (shape.cudnnWins && std::find(shape.calls.begin(), shape.calls.end(),
                                       index) != shape.calls.end())
        return true;
    return false;
  }

  const std::vector<Shape> &shapes() const { return shapes_; }

  /// One line: how many calls and shapes cuDNN took, and each shape's
  /// times (or cuDNN's error).
  std::string summary() const {
    size_t calls = 0, taken = 0, won = 0;
    std::string detail;
    for (const Shape &shape : shapes_) {
      calls += shape.calls.size();
      if (shape.cudnnWins) {
        taken += shape.calls.size();
        ++won;
      }
      detail += detail.empty() ? " (" : "; ";
      detail += shape.name + ": ";
      if (!shape.failure.empty()) {
        detail += "cuDNN failed, " + shape.failure;
        continue;
      }
      char times[96];
      std::snprintf(times, sizeof(times), "own %.3f ms, cuDNN %.3f ms",
                    shape.own * 1e3, shape.cudnn * 1e3);
      detail += times;
    }
    if (!detail.empty())
      detail += ")";
    return "cuDNN measured faster for " + std::to_string(won) + " of " +
           std::to_string(shapes_.size()) + " shapes, runs " +
           std::to_string(taken) + " of " + std::to_string(calls) + " kernels" +
           detail;
  }

private:
  std::vector<Shape> shapes_;
};

} // namespace tpcrt::cuda

#endif // TPCRT_CUDA_ATTENTIONRACE_H
