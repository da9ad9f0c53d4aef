//===- LayerBalance.h - transformer layers per pipeline chunk ---*- C++ -*-===//
//
// How dist-pipeline-split divides the layers among the pipeline's chunks,
// shared with tpc-plan's closed forms so that they price and hold the
// stages the compiler makes. The standard library only.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_DIST_TRANSFORMS_LAYERBALANCE_H
#define DIALECTS_DIST_TRANSFORMS_LAYERBALANCE_H

#include <cstdint>
#include <vector>

namespace mlir::dist::pipeline {

/// Layer counts per chunk (each >= 1, adding up to the layers; needs at
/// least `chunks` layers) that minimize the largest chunk's cost, the first
/// chunk also carrying `before` and the last `after`: the classic linear
/// partition, by dynamic programming. Of equally good splits, each cut is
/// the earliest.
std::vector<int64_t> balanceLayers(const std::vector<double> &layerCosts,
                                   double before, double after, int64_t chunks);

} // namespace mlir::dist::pipeline

#endif // DIALECTS_DIST_TRANSFORMS_LAYERBALANCE_H
