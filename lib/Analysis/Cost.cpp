//===- Cost.cpp - roofline and alpha-beta costs ---------------------------===//

#include "tpc/Analysis/Cost.h"

#include <algorithm>

using namespace mlir::tpc;

double mlir::tpc::memoryBoundSeconds(const Hardware &hw, double bytes) {
  return hw.kernelLaunchSeconds +
         bytes / (hw.memoryBytesPerSecond * hw.elementwiseEfficiency);
}

double mlir::tpc::matmulSeconds(const Hardware &hw, double flops, double bytes,
                                double peak) {
  double compute = flops / (peak * hw.gemm.at(flops));
  double memory = bytes / (hw.memoryBytesPerSecond * hw.elementwiseEfficiency);
  return hw.kernelLaunchSeconds + std::max(compute, memory);
}

double mlir::tpc::attentionSeconds(const Hardware &hw, double flops,
                                   double bytes, double peak) {
  double compute = flops / (peak * hw.attentionEfficiency);
  double memory = bytes / (hw.memoryBytesPerSecond * hw.elementwiseEfficiency);
  return hw.kernelLaunchSeconds + std::max(compute, memory);
}

double mlir::tpc::collectiveSeconds(const Hardware &hw, CollectiveKind kind,
                                    double bytes, int64_t groupSize,
                                    bool interNode) {
  if (groupSize <= 1 && kind != CollectiveKind::PointToPoint)
    return 0;
  const Link &link = interNode ? hw.interNode : hw.intraNode;
  double n = static_cast<double>(groupSize);
  double factor = 1;
  switch (kind) {
  case CollectiveKind::AllReduce:
    factor = 2 * (n - 1) / n;
    break;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    factor = (n - 1) / n;
    break;
  case CollectiveKind::PointToPoint:
    factor = 1;
    break;
  }
  return link.latencySeconds +
         factor * bytes / (link.busBandwidth.at(bytes) * link.bytesPerSecond);
}

bool mlir::tpc::groupSpansNodes(const std::vector<int64_t> &meshSizes,
                                const std::vector<unsigned> &groupAxes,
                                int64_t devicesPerNode) {
  int64_t ranks = 1;
  for (int64_t size : meshSizes)
    ranks *= size;
  if (ranks <= devicesPerNode)
    return false;
  // Row-major strides; a rank's group leader has zero coordinates on the
  // group's axes. Every rank is in a node with its leader iff no group spans.
  std::vector<int64_t> strides(meshSizes.size(), 1);
  for (size_t i = meshSizes.size(); i-- > 1;)
    strides[i - 1] = strides[i] * meshSizes[i];
  for (int64_t rank = 0; rank < ranks; ++rank) {
    int64_t leader = rank;
    for (unsigned axis : groupAxes)
      leader -= ((rank / strides[axis]) % meshSizes[axis]) * strides[axis];
    if (rank / devicesPerNode != leader / devicesPerNode)
      return true;
  }
  return false;
}
