//===- AttentionRows.h - where attention's heads lie ------------*- C++ -*-===//
//
// attention and attention_grad read and write their tensors head-major,
// [b, heads, s, d], or sequence-major, [b, s, heads, d] (kernel flag bit 1):
// the latter is how the q/k/v projections write them and the output
// projection reads them, so no transposes surround the kernel.
// attention_qkv(_grad) read q, k and v where one projection wrote them all,
// the parts of [b, s, 3, heads, d] (GPT-2's c_attn), so no slices precede
// the kernel and no concatenation follows its gradient. Both devices
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
  /// q, k and v (and their gradients) the parts 0, 1, 2 along dim 2 of one
  /// [b, s, 3, heads, d] tensor, one kv head per head, d = d_v, s_q = s_k;
  /// the result and dO [b, s, heads, d].
  PackedQkv,
};

/// The parts of a PackedQkv tensor.
constexpr int64_t kQkvParts = 3;

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

/// The rows of q, k or v (or their gradients) in `layout`; in PackedQkv from
/// the part's first element (qkvPartOffset).
constexpr HeadRows headRows(AttentionLayout layout, int64_t heads, int64_t seq,
                            int64_t dim) {
  HeadRows rows;
  if (layout != AttentionLayout::HeadMajor) {
    int64_t parts = layout == AttentionLayout::PackedQkv ? kQkvParts : 1;
    rows.batchStride = seq * parts * heads * dim;
    rows.headStride = dim;
    rows.ld = parts * heads * dim;
  } else {
    rows.batchStride = heads * seq * dim;
    rows.headStride = seq * dim;
    rows.ld = dim;
  }
  if (rows.ld < 1)
    rows.ld = 1;
  return rows;
}

/// The rows of the result (and dO) in `layout`: PackedQkv's are
/// sequence-major.
constexpr HeadRows resultRows(AttentionLayout layout, int64_t heads,
                              int64_t seq, int64_t dim) {
  return headRows(
      layout == AttentionLayout::PackedQkv ? AttentionLayout::SeqMajor : layout,
      heads, seq, dim);
}

/// Where part `part` (0: q, 1: k, 2: v) of a PackedQkv tensor of `heads`
/// heads of `dim` starts, in elements from its first.
constexpr int64_t qkvPartOffset(int64_t part, int64_t heads, int64_t dim) {
  return part * heads * dim;
}

} // namespace tpcrt

#endif // TPCRT_ATTENTIONROWS_H
