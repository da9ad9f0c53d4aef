//===- MatmulFlops.h - the matrix-product FLOPs of a tpc op -----*- C++ -*-===//
//
// What a tpc op's kernel computes in matrix products, 2·m·n·k, from its
// shapes: the cost that the report sums (lib/Analysis) and that the pipeline
// split balances (dist-pipeline-split). Elementwise work is not counted.
//
//===----------------------------------------------------------------------===//

#ifndef DIALECTS_TPC_IR_MATMULFLOPS_H
#define DIALECTS_TPC_IR_MATMULFLOPS_H

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace mlir::tpc {

/// The FLOPs of `op`'s matrix products: linear and its input and weight
/// gradients, batch_matmul, attention (scores and the product with v, over
/// every score, masked or not) and its gradient (FlashAttention's count:
/// the scores again, dq, dk, dv, dp); 0 for every other op. Saturates at
/// INT64_MAX.
int64_t getMatmulFlops(Operation *op);

/// Of getMatmulFlops(op), those over the scores that a causal attention's
/// mask hides (b·h·s_q·(s_q − 1)/2 of them): the model counts them, as
/// MFU's formulas do, and the kernels skip them (the time model charges
/// the rest). 0 for every other op. Saturates at INT64_MAX.
int64_t getMaskedMatmulFlops(Operation *op);

/// `a + b`, saturating at INT64_MAX.
int64_t addFlops(int64_t a, int64_t b);

} // namespace mlir::tpc

#endif // DIALECTS_TPC_IR_MATMULFLOPS_H
