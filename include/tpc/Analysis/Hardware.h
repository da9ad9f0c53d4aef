//===- Hardware.h - a device and its links, for the cost model --*- C++ -*-===//
//
// What the cost model (tpc/Analysis/Cost.h) knows of a machine: peak
// matrix-multiply FLOP/s per element type, memory bandwidth, the links inside
// and between nodes, and the achievable fractions of each, read from a JSON
// file a user edits (docs/design/hardware-format.md). The standard library
// and LLVM's JSON reader only, so that tpc-plan evaluates thousands of plans
// without touching MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TPC_ANALYSIS_HARDWARE_H
#define TPC_ANALYSIS_HARDWARE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mlir::tpc {

/// A fraction as a function of a size: `[size, fraction]` points, sizes
/// ascending, interpolated linearly in log(size) and clamped at the ends.
struct EfficiencyCurve {
  std::vector<std::pair<double, double>> points;

  double at(double size) const;
};

/// One kind of link of a device: NVLink inside a node, its NIC between
/// nodes. Bandwidth per direction.
struct Link {
  double bytesPerSecond = 0;
  double latencySeconds = 0;
  /// The bus bandwidth a collective of a given size achieves, as a fraction
  /// of bytesPerSecond.
  EfficiencyCurve busBandwidth;
};

struct Hardware {
  std::string name, description;
  /// Where it was read from (for messages and the report).
  std::string path;
  int64_t memoryBytes = 0;
  int64_t devicesPerNode = 1;
  /// Dense matrix-multiply FLOP/s per element type; 0 where the file has
  /// none.
  double peakBf16 = 0, peakFp16 = 0, peakFp32 = 0;
  double memoryBytesPerSecond = 0;
  Link intraNode, interNode;
  EfficiencyCurve gemm;
  /// The most a 16-bit matrix product reaches (a fraction of its peak)
  /// where a row of one of its operands or of its result is not a whole
  /// number of 16 bytes (kGemmRowAlignmentBytes: GPT-2's 50257 vocabulary
  /// rows unpadded): tensor-core kernels need 16-byte aligned rows, and
  /// cuBLASLt falls back to slower ones. 0: no such limit (the product runs
  /// at the gemm curve). Per opcode mnemonic (linear, linear_input_grad,
  /// ...) in gemmUnalignedKinds where measured apart.
  double gemmUnaligned = 0;
  std::map<std::string, double> gemmUnalignedKinds;
  double attentionEfficiency = 0, elementwiseEfficiency = 0;
  /// The CUDA device's own attention kernels (where cuDNN refuses a call:
  /// dropout, fp32), measured, forward and backward (of the products the
  /// simulation counts: seven in the backward), without and with an
  /// attention dropout (drawn per score); 0: attentionEfficiency.
  double ownAttentionForward = 0, ownAttentionBackward = 0,
         ownAttentionForwardDropout = 0, ownAttentionBackwardDropout = 0;
  /// Seconds per score (counted as attentionScores counts them) that the
  /// attention kernels spend beside their products (the softmax's exp;
  /// with an attention dropout, its draws), forward and backward, without
  /// and with the dropout; 0 where the description has none (its kernels'
  /// time is their products').
  double attentionScoreForward = 0, attentionScoreBackward = 0,
         attentionScoreForwardDropout = 0, attentionScoreBackwardDropout = 0;
  /// Where the attention kernels compute the scores of blocks of this many
  /// query rows, each block up to its last row's keys (a causal mask skips
  /// whole blocks only: the CPU device's kernels), the scores they compute
  /// (attentionScores' blockRows) price their products and per-score time;
  /// 0: the scores the mask leaves.
  int64_t attentionBlockRows = 0;
  /// Seconds per query row (b·heads·s_q) the attention kernels spend
  /// beside their products and scores (each row's and block's fixed work),
  /// forward and backward; 0 where the description has none.
  double attentionRowForward = 0, attentionRowBackward = 0;
  /// Per kind of memory-bound kernel, its fraction of memoryBytesPerSecond
  /// in place of elementwiseEfficiency: a kind as the replay names it (an
  /// opcode's mnemonic, a fused group's joined by '+', a batch's
  /// "a,b batch"). Above 1 where the kind's tensors stay in a cache.
  std::map<std::string, double> elementwiseKinds;
  double kernelLaunchSeconds = 0;
  /// The tpc-run device that runs plans on it: "cuda" (the prediction
  /// prices its load-time fusions, runtime/cuda/FusionPlan.h: a fused
  /// group is one kernel moving the group's outside bytes) or "cpu" (every
  /// kernel alone; the default).
  std::string runtimeDevice = "cpu";

  /// The efficiency of the device's own attention kernels (backward or
  /// forward, with an attention dropout or without), or 0 where the
  /// description has none.
  double ownAttentionEfficiency(bool backward, bool dropout) const {
    if (dropout)
      return backward ? ownAttentionBackwardDropout
                      : ownAttentionForwardDropout;
    return backward ? ownAttentionBackward : ownAttentionForward;
  }

  /// The seconds per score of an attention kernel beside its products
  /// (backward or forward, with an attention dropout or without).
  double attentionScoreSeconds(bool backward, bool dropout) const {
    if (dropout)
      return backward ? attentionScoreBackwardDropout
                      : attentionScoreForwardDropout;
    return backward ? attentionScoreBackward : attentionScoreForward;
  }

  /// The fraction of memoryBytesPerSecond a memory-bound kernel of `kind`
  /// achieves: its own, or elementwiseEfficiency.
  double elementwiseEfficiencyOf(llvm::StringRef kind) const {
    auto it = elementwiseKinds.find(kind.str());
    return it == elementwiseKinds.end() ? elementwiseEfficiency : it->second;
  }

  /// The most a 16-bit matrix product of opcode `kind` whose rows are not
  /// whole 16-byte units reaches: its own fraction, gemmUnaligned, or 0
  /// (no limit).
  double gemmUnalignedEfficiencyOf(llvm::StringRef kind) const {
    auto it = gemmUnalignedKinds.find(kind.str());
    return it == gemmUnalignedKinds.end() ? gemmUnaligned : it->second;
  }

  /// The seconds of an attention kernel (backward or forward) beside its
  /// products over `scores` scores and `rows` query rows.
  double attentionExtraSeconds(bool backward, bool dropout, double scores,
                               double rows) const {
    return scores * attentionScoreSeconds(backward, dropout) +
           rows * (backward ? attentionRowBackward : attentionRowForward);
  }

  /// The multiple an executable for runtimeDevice pads the vocabulary to
  /// (tpc-compile --target's --pad-vocab), per tensor-parallel block.
  int64_t vocabPadding() const;

  /// peak FLOP/s for "bf16", "fp16" or "fp32"; 0 if unknown.
  double peakFlops(llvm::StringRef dtype) const;
};

/// The row length, in bytes, that a 16-bit matrix product's operands and
/// result need for the tensor cores' fast kernels (Hardware::gemmUnaligned).
constexpr int64_t kGemmRowAlignmentBytes = 16;

/// Whether every row length of `rowElements` (elements of `elementBytes`
/// each) is a whole number of kGemmRowAlignmentBytes.
inline bool gemmRowsAligned(std::initializer_list<int64_t> rowElements,
                            int64_t elementBytes) {
  for (int64_t elements : rowElements)
    if (elements * elementBytes % kGemmRowAlignmentBytes != 0)
      return false;
  return true;
}

/// tpc-compile --target cuda's --pad-vocab: a tensor-core GEMM tile's rows
/// (a GEMM over an odd vocabulary, GPT-2's 50257, runs at a fraction of
/// the tensor cores' speed).
constexpr int64_t kCudaVocabPadding = 64;

/// Reads a description from JSON text; errors name `path` and the key.
llvm::Expected<Hardware> parseHardware(llvm::StringRef text,
                                       llvm::StringRef path);

/// `a100`, `h100`, `h200`, `cpu` or a path to a JSON file: a name is looked
/// up in $TPC_HARDWARE_PATH, then in `<dir of toolPath>/../share/tpc/
/// hardware/` (where the build puts the tree's files and the tests a
/// measured cpu.json). The error for a missing `cpu` says how to make one.
llvm::Expected<Hardware> loadHardware(llvm::StringRef nameOrPath,
                                      llvm::StringRef toolPath);

} // namespace mlir::tpc

#endif // TPC_ANALYSIS_HARDWARE_H
