//===- MatmulFlops.cpp - the matrix-product FLOPs of a tpc op -------------===//

#include "dialects/Tpc/IR/MatmulFlops.h"

#include "dialects/Tpc/IR/TpcOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::tpc;

namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

/// The product of `factors`, saturating at INT64_MAX.
int64_t product(std::initializer_list<int64_t> factors) {
  int64_t result = 1;
  for (int64_t factor : factors)
    if (llvm::MulOverflow(result, factor, result))
      return kSaturated;
  return result;
}

int64_t elements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// 2·m·n·k of a linear (or one of its gradients) from its input [..., k]
/// and its result (or dY), whatever the weight's layout.
int64_t linearFlops(Value input, Value output) {
  int64_t k = cast<RankedTensorType>(input.getType()).getShape().back();
  return product({2, elements(output), k});
}

/// Scores of an attention: b·h·sq·sk.
/// [b, heads, s_q, s_k] (either layout: b * heads * s_q is q's elements
/// over d).
int64_t scores(Value query, Value key, unsigned seqDim) {
  auto q = cast<RankedTensorType>(query.getType());
  auto k = cast<RankedTensorType>(key.getType());
  return product({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                  k.getDimSize(seqDim)});
}

int64_t dimOf(Value value, int64_t dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

/// Scores that a causal mask hides: b·h·s_q·(s_q − 1)/2 (the mask aligned
/// bottom-right, query row i sees s_k − s_q + i + 1 keys); 0 without one.
int64_t maskedScores(Value query, unsigned seqDim, bool causal) {
  if (!causal)
    return 0;
  int64_t seqQ = dimOf(query, seqDim);
  if (seqQ < 2)
    return 0;
  // b·h·s_q is q's elements over d, whichever layout.
  int64_t rows = elements(query) / dimOf(query, 3);
  int64_t masked = product({rows, seqQ - 1});
  return masked == kSaturated ? kSaturated : masked / 2;
}

/// The factor that turns an attention's scores into its products' FLOPs:
/// 2·(d + d_v) for the forward (q·kᵀ, p·v), 2·(3d + 2d_v) for the gradient
/// (the scores again, dq and dk over d; dv and dp over d_v).
int64_t attentionFactor(AttentionOp op) {
  return 2 * (dimOf(op.getQuery(), 3) + dimOf(op.getValue(), 3));
}
int64_t attentionFactor(AttentionGradOp op) {
  return 2 * (3 * dimOf(op.getQuery(), 3) + 2 * dimOf(op.getValue(), 3));
}

int64_t flopsOfOp(Operation *op) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([](LinearOp op) {
        return linearFlops(op.getInput(), op.getResult());
      })
      .Case([](LinearInputGradOp op) {
        return linearFlops(op.getResult(), op.getGrad());
      })
      .Case([](LinearWeightGradOp op) {
        return linearFlops(op.getInput(), op.getGrad());
      })
      .Case([](BatchMatmulOp op) {
        auto lhs = cast<RankedTensorType>(op.getLhs().getType());
        int64_t k =
            lhs.getDimSize(lhs.getRank() - (op.getTransposeLhs() ? 2 : 1));
        return product({2, elements(op.getResult()), k});
      })
      .Case<AttentionOp, AttentionGradOp>([](auto op) {
        return product({scores(op.getQuery(), op.getKey(), op.getSeqDim()),
                        attentionFactor(op)});
      })
      .Default([](Operation *) { return int64_t(0); });
}

} // namespace

int64_t mlir::tpc::getMatmulFlops(Operation *op) { return flopsOfOp(op); }

int64_t mlir::tpc::getMaskedMatmulFlops(Operation *op) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case<AttentionOp, AttentionGradOp>([](auto op) {
        return product(
            {maskedScores(op.getQuery(), op.getSeqDim(), op.getCausal()),
             attentionFactor(op)});
      })
      .Default([](Operation *) { return int64_t(0); });
}

int64_t mlir::tpc::addFlops(int64_t a, int64_t b) {
  int64_t sum;
  return llvm::AddOverflow(a, b, sum) ? kSaturated : sum;
}
