//===- Cost.h - the time of a kernel or a collective on a device -*- C++ -*-===//
//
// The cost model (docs/design/cost-model.md): a roofline per kernel with the
// hardware description's achievable fractions, and an alpha-beta model per
// collective with B the per-direction bus bandwidth of the link its group
// crosses. Read-only and MLIR-free: the compile's prediction (PlanSimulation)
// and tpc-plan's closed forms call the same functions.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_ANALYSIS_COST_H
#define TPC_ANALYSIS_COST_H

#include "tpc/Analysis/Hardware.h"

#include <cstdint>
#include <vector>

namespace mlir::tpc {

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  /// One message between two devices.
  PointToPoint,
};

/// One matrix product of `flops` (2·m·n·k) reading and writing `bytes`:
/// the slower of flops / (peak · gemm efficiency(flops)) and the bytes at
/// the memory-bound rate, plus the launch overhead. 0 peak for `dtype` is the
/// caller's error (checked by requirePeak). `boundByMemory`, where given, is
/// set to whether the bytes' side was the slower. `ceiling` > 0 caps the
/// gemm efficiency (Hardware::gemmUnaligned: a product whose rows are not
/// whole 16-byte units).
double matmulSeconds(const Hardware &hw, double flops, double bytes,
                     double peak, bool *boundByMemory = nullptr,
                     double ceiling = 0);
/// A fused attention kernel (or its gradient) of `flops` matrix FLOPs:
/// those over the scores it computes (attentionScores), as the attention
/// efficiency of the hardware descriptions is measured (FlashAttention's
/// count: causal about half). `efficiency` > 0 replaces the description's
/// attention efficiency (Hardware::ownAttentionEfficiency's).
/// `extraSeconds` is the time spent beside the products (per score and per
/// query row: Hardware::attentionExtraSeconds), added to theirs.
/// `boundByMemory` as matmulSeconds'.
double attentionSeconds(const Hardware &hw, double flops, double bytes,
                        double peak, double efficiency = 0,
                        double extraSeconds = 0, bool *boundByMemory = nullptr);
/// The scores a fused attention computes over `rows` = b·heads·s_q query
/// rows of `seqQ` and `seqK` keys: all of them, or with a causal mask
/// (aligned bottom-right, s_k ≥ s_q) all less the s_q·(s_q − 1)/2 per head
/// it hides (getMaskedMatmulFlops counts those in the IR); with
/// `blockRows` > 0 (Hardware::attentionBlockRows), each block of that many
/// query rows up to its last row's keys.
double attentionScores(double rows, double seqQ, double seqK, bool causal,
                       int64_t blockRows = 0);
/// A memory-bound kernel reading and writing `bytes`; `efficiency` > 0
/// replaces the description's elementwise efficiency (a kind's,
/// Hardware::elementwiseEfficiencyOf).
double memoryBoundSeconds(const Hardware &hw, double bytes,
                          double efficiency = 0);

/// A collective of `bytes` (the full logical tensor: an all_reduce's tensor,
/// an all_gather's result, a reduce_scatter's input, an all_to_all's input,
/// a message) over `groupSize` devices, `perNode` of them on each node:
/// latency + factor · bytes / (bus fraction(bytes) · B), factor 2(n−1)/n
/// for all_reduce, (n−1)/n for the others, 1 for a message. Inside one node
/// (perNode ≥ groupSize) on NVLink; across nodes hierarchically, as NCCL
/// runs it: the node's part over NVLink, then the nodes' over their NICs,
/// each device's NIC carrying 1/perNode of the bytes. 0 for a group of one.
double collectiveSeconds(const Hardware &hw, CollectiveKind kind,
                         double bytes, int64_t groupSize, int64_t perNode);

/// The fewest members of one group over `groupAxes` (indices into
/// `meshSizes`, sizes major first; ranks numbered row-major over the mesh)
/// that share a node (`devicesPerNode` consecutive ranks each): the group
/// size when every group fits in a node, 1 when no two members share one.
int64_t groupMembersPerNode(const std::vector<int64_t> &meshSizes,
                            const std::vector<unsigned> &groupAxes,
                            int64_t devicesPerNode);

} // namespace mlir::tpc

#endif // TPC_ANALYSIS_COST_H
