//===- AttentionRows.h - where attention's heads lie ------------*- C++ -*-===//
//
// attention and attention_grad read and write their tensors head-major,
// [b, heads, s, d], or sequence-major, [b, s, heads, d] (kernel flag bit 1):
// the latter is how the q/k/v projections write them and the output
// projection reads them, so no transposes surround the kernel. Both devices
// address one head's rows through HeadRows (constexpr: device code calls it
// too, nvcc --expt-relaxed-constexpr).
//
//===----------------------------------------------------------------------===//

#ifndef TPCRT_ATTENTIONROWS_H
#define TPCRT_ATTENTIONROWS_H

#include <cstdint>

namespace tpcrt {

/// Where attention's tensors keep their heads.
enum class AttentionLayout : uint8_t {
  /// [b, heads, s, d]: each head's rows contiguous.
  HeadMajor,
  /// [b, s, heads, d]: a sequence position holds every head.
  SeqMajor,
};

/// The rows of one head in a tensor of `heads` heads, `seq` rows and `dim`
/// columns: row i of head h of batch b at element b * batchStride +
/// h * headStride + i * ld.
struct HeadRows {
  int64_t batchStride = 0, headStride = 0;
  /// Row stride, at least 1 (as BLAS wants).
  int64_t ld = 1;

  constexpr int64_t head(int64_t b, int64_t h) const {
    return b * batchStride + h * headStride;
  }
  constexpr int64_t at(int64_t b, int64_t h, int64_t i) const {
    return head(b, h) + i * ld;
  }
};

constexpr HeadRows headRows(AttentionLayout layout, int64_t heads, int64_t seq,
                            int64_t dim) {
  HeadRows rows;
  if (layout == AttentionLayout::SeqMajor) {
    rows.batchStride = seq * heads * dim;
    rows.headStride = dim;
    rows.ld = heads * dim;
  } else {
    rows.batchStride = heads * seq * dim;
    rows.headStride = seq * dim;
    rows.ld = dim;
  }
  if (rows.ld < 1)
    rows.ld = 1;
  return rows;
}

} // namespace tpcrt

#endif // TPCRT_ATTENTIONROWS_H
