//===- Cost.cpp - roofline and alpha-beta costs ---------------------------===//

#include "tpc/Analysis/Cost.h"

#include <algorithm>

using namespace mlir::tpc;

double mlir::tpc::memoryBoundSeconds(const Hardware &hw, double bytes,
                                     double efficiency) {
  return hw.kernelLaunchSeconds +
         bytes / (hw.memoryBytesPerSecond *
                  (efficiency > 0 ? efficiency : hw.elementwiseEfficiency));
}

/// The launch overhead plus the slower side of the roofline.
static double roofline(const Hardware &hw, double computeSeconds, double bytes,
                       bool *boundByMemory) {
  double memory = bytes / (hw.memoryBytesPerSecond * hw.elementwiseEfficiency);
  if (boundByMemory)
    *boundByMemory = memory > computeSeconds;
  return hw.kernelLaunchSeconds + std::max(computeSeconds, memory);
}

double mlir::tpc::matmulSeconds(const Hardware &hw, double flops, double bytes,
                                double peak, bool *boundByMemory,
                                double ceiling) {
  double efficiency = hw.gemm.at(flops);
  if (ceiling > 0)
    efficiency = std::min(efficiency, ceiling);
  return roofline(hw, flops / (peak * efficiency), bytes, boundByMemory);
}

double mlir::tpc::attentionSeconds(const Hardware &hw, double flops,
                                   double bytes, double peak, double efficiency,
                                   double extraSeconds, bool *boundByMemory) {
  double compute =
      flops / (peak * (efficiency > 0 ? efficiency : hw.attentionEfficiency)) +
      extraSeconds;
  return roofline(hw, compute, bytes, boundByMemory);
}

double mlir::tpc::attentionScores(double rows, double seqQ, double seqK,
                                  bool causal, int64_t blockRows) {
  double scores = rows * seqK;
  if (!causal || seqQ <= 0)
    return scores;
  if (blockRows <= 0)
    return scores - rows / seqQ * seqQ * (seqQ - 1) / 2;
  // Per head: block j of r rows from row i0 computes r x (i0 + r + s_k -
  // s_q) scores.
  double perHead = 0, block = static_cast<double>(blockRows);
  for (double i0 = 0; i0 < seqQ; i0 += block) {
    double r = std::min(block, seqQ - i0);
    perHead += r * (i0 + r + seqK - seqQ);
  }
  return rows / seqQ * perHead;
}

namespace {

double factorOf(CollectiveKind kind, double n) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) / n;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n;
  case CollectiveKind::PointToPoint:
    break;
  }
  return 1;
}

double linkSeconds(const Link &link, double factor, double bytes) {
  return link.latencySeconds +
         factor * bytes / (link.busBandwidth.at(bytes) * link.bytesPerSecond);
}

} // namespace

double mlir::tpc::collectiveSeconds(const Hardware &hw, CollectiveKind kind,
                                    double bytes, int64_t groupSize,
                                    int64_t perNode) {
  if (kind == CollectiveKind::PointToPoint)
    return linkSeconds(perNode >= 2 ? hw.intraNode : hw.interNode, 1, bytes);
  if (groupSize <= 1)
    return 0;
  perNode = std::max<int64_t>(1, std::min(perNode, groupSize));
  if (perNode == groupSize)
    return linkSeconds(hw.intraNode,
                       factorOf(kind, static_cast<double>(groupSize)), bytes);
  double nodes = static_cast<double>(groupSize / perNode);
  double inside =
      perNode > 1 ? linkSeconds(hw.intraNode,
                                factorOf(kind, static_cast<double>(perNode)),
                                bytes)
                  : 0;
  return inside + linkSeconds(hw.interNode, factorOf(kind, nodes),
                              bytes / static_cast<double>(perNode));
}

int64_t mlir::tpc::groupMembersPerNode(const std::vector<int64_t> &meshSizes,
                                       const std::vector<unsigned> &groupAxes,
                                       int64_t devicesPerNode) {
  int64_t ranks = 1, group = 1;
  for (int64_t size : meshSizes)
    ranks *= size;
  for (unsigned axis : groupAxes)
    group *= meshSizes[axis];
  // Row-major strides; a rank's group leader has zero coordinates on the
  // group's axes. Count, per leader, the members in the leader's node.
  std::vector<int64_t> strides(meshSizes.size(), 1);
  for (size_t i = meshSizes.size(); i-- > 1;)
    strides[i - 1] = strides[i] * meshSizes[i];
  std::vector<int64_t> together(ranks, 0);
  for (int64_t rank = 0; rank < ranks; ++rank) {
    int64_t leader = rank;
    for (unsigned axis : groupAxes)
      leader -= ((rank / strides[axis]) % meshSizes[axis]) * strides[axis];
    if (rank / devicesPerNode == leader / devicesPerNode)
      ++together[leader];
  }
  int64_t fewest = group;
  for (int64_t rank = 0; rank < ranks; ++rank)
    if (together[rank] > 0)
      fewest = std::min(fewest, together[rank]);
  return fewest;
}
