// RUN: tpc-opt %s --tpc-test-sharding-rules -o /dev/null | FileCheck %s --match-full-lines

// Each backward op's sharding rule (docs/design/sharding.md): operand and
// result dimensions as factors (major first, joined by *), factor sizes and
// kinds, linearity and the operands it covers.

// Positions are summed; the vocabulary is whole (the kernel has no row
// offset); linear in the gradient only.
// CHECK: tpc.embedding_grad: ([k, l, j], [k, l]) -> ([i, j]) {i=256 blocks, j=64, k=4 reduction, l=32 reduction} linearity multilinear in 0
func.func @embedding_grad(%dx: tensor<4x32x64xbf16>, %ids: tensor<4x32xi64>) {
  %0 = tpc.embedding_grad %dx[%ids] : tensor<4x32x64xbf16>, tensor<4x32xi64> -> tensor<256x64xf32>
  return
}

// The output features [3, heads, d] are contracted: a column-parallel
// linear gives a partial input gradient.
// CHECK-NEXT: tpc.linear_input_grad: ([i, j, l, m, n], [k, l, m, n]) -> ([i, j, k]) {i=4, j=32, k=64, l=3 reduction, m=4 reduction, n=16 reduction} linearity multilinear
func.func @linear_input_grad_in_out(%dy: tensor<4x32x3x4x16xf32>, %w: tensor<64x3x4x16xf32>) {
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x32x3x4x16xf32>, tensor<64x3x4x16xf32>
  return
}

// CHECK-NEXT: tpc.linear_input_grad: ([i, j, l], [l, k]) -> ([i, j, k]) {i=4, j=32, k=64, l=128 reduction} linearity multilinear
func.func @linear_input_grad_out_in(%dy: tensor<4x32x128xf32>, %w: tensor<128x64xf32>) {
  %0 = tpc.linear_input_grad %dy, %w layout out_in : tensor<4x32x128xf32>, tensor<128x64xf32>
  return
}

// Every position is summed (partial over a data-parallel axis); the weight's
// dims keep the factors of the forward weight in either layout.
// CHECK-NEXT: tpc.linear_weight_grad: ([i, j, k], [i, j, l, m, n]) -> ([k, l, m, n]) {i=4 reduction, j=32 reduction, k=64, l=3, m=4, n=16} linearity multilinear
func.func @linear_weight_grad_in_out(%x: tensor<4x32x64xf32>, %dy: tensor<4x32x3x4x16xf32>) {
  %0 = tpc.linear_weight_grad %x, %dy layout in_out : tensor<4x32x64xf32>, tensor<4x32x3x4x16xf32> -> tensor<64x3x4x16xf32>
  return
}

// CHECK-NEXT: tpc.linear_weight_grad: ([i, j, k], [i, j, l, m, n]) -> ([l, m, n, k]) {i=4 reduction, j=32 reduction, k=64, l=3, m=4, n=16} linearity multilinear
func.func @linear_weight_grad_out_in(%x: tensor<4x32x64xbf16>, %dy: tensor<4x32x3x4x16xbf16>) {
  %0 = tpc.linear_weight_grad %x, %dy layout out_in : tensor<4x32x64xbf16>, tensor<4x32x3x4x16xbf16> -> tensor<3x4x16x64xf32>
  return
}

// CHECK-NEXT: tpc.linear_weight_grad: ([i, j], [i, k]) -> ([k, j]) {i=8 reduction, j=64, k=128} linearity multilinear
func.func @linear_weight_grad_2d(%x: tensor<8x64xf32>, %dy: tensor<8x128xf32>) {
  %0 = tpc.linear_weight_grad %x, %dy layout out_in : tensor<8x64xf32>, tensor<8x128xf32> -> tensor<128x64xf32>
  return
}

// The leading dims missing from the result are summed.
// CHECK-NEXT: tpc.sum_to: ([i, j, k]) -> ([k]) {i=4 reduction, j=32 reduction, k=256} linearity multilinear
// CHECK-NEXT: tpc.sum_to: ([i, j, k]) -> ([j, k]) {i=4 reduction, j=32, k=64} linearity multilinear
func.func @sum_to(%dy: tensor<4x32x256xbf16>, %dx: tensor<4x32x64xf32>) {
  %0 = tpc.sum_to %dy : tensor<4x32x256xbf16> -> tensor<256xf32>
  %1 = tpc.sum_to %dx : tensor<4x32x64xf32> -> tensor<32x64xf32>
  return
}

// The normalized dim is whole; the input gradient is linear in dY alone.
// CHECK-NEXT: tpc.layer_norm_input_grad: ([i, j, k], [i, j, k], [k]) -> ([i, j, k]) {i=4, j=32, k=64 whole} linearity multilinear in 0
func.func @layer_norm_input_grad(%dy: tensor<4x32x64xf32>, %x: tensor<4x32x64xf32>, %w: tensor<64xf32>) {
  %0 = tpc.layer_norm_input_grad %dy, %x, %w eps 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>
  return
}

// The positions are summed: a sequence-parallel norm's weight gradients are
// partial.
// CHECK-NEXT: tpc.layer_norm_param_grad: ([i, j, k], [i, j, k]) -> ([k], [k]) {i=4 reduction, j=32 reduction, k=64 whole} linearity multilinear in 0
func.func @layer_norm_param_grad(%dy: tensor<4x32x64xbf16>, %x: tensor<4x32x64xbf16>) {
  %0, %1 = tpc.layer_norm_param_grad %dy, %x eps 1.000000e-05 : tensor<4x32x64xbf16> -> tensor<64xf32>, tensor<64xf32>
  return
}

// CHECK-NEXT: tpc.rms_norm_input_grad: ([i, j, k], [i, j, k], [k]) -> ([i, j, k]) {i=4, j=32, k=64 whole} linearity multilinear in 0
func.func @rms_norm_input_grad(%dy: tensor<4x32x64xf32>, %x: tensor<4x32x64xf32>, %w: tensor<64xf32>) {
  %0 = tpc.rms_norm_input_grad %dy, %x, %w eps 9.999999e-07 : tensor<4x32x64xf32>, tensor<64xf32>
  return
}

// CHECK-NEXT: tpc.rms_norm_param_grad: ([i, j, k], [i, j, k]) -> ([k]) {i=4 reduction, j=32 reduction, k=64 whole} linearity multilinear in 0
func.func @rms_norm_param_grad(%dy: tensor<4x32x64xbf16>, %x: tensor<4x32x64xbf16>) {
  %0 = tpc.rms_norm_param_grad %dy, %x eps 9.999999e-07 : tensor<4x32x64xbf16> -> tensor<64xf32>
  return
}

// Elementwise; linear in dY, not in the input the derivative is taken at.
// CHECK-NEXT: tpc.gelu_grad: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=4, j=32, k=256} linearity multilinear in 0
func.func @gelu_grad(%dy: tensor<4x32x256xf32>, %x: tensor<4x32x256xf32>) {
  %0 = tpc.gelu_grad %dy, %x tanh : tensor<4x32x256xf32>
  return
}

// CHECK-NEXT: tpc.silu_grad: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=4, j=32, k=176} linearity multilinear in 0
func.func @silu_grad(%dy: tensor<4x32x176xf32>, %x: tensor<4x32x176xf32>) {
  %0 = tpc.silu_grad %dy, %x : tensor<4x32x176xf32>
  return
}

// The softmax dim is whole; the query rows stay parallel even after a causal
// softmax (masked elements have y = 0).
// CHECK-NEXT: tpc.softmax_grad: ([i, j, k, l], [i, j, k, l]) -> ([i, j, k, l]) {i=4, j=8, k=32, l=32 whole} linearity multilinear in 0
func.func @softmax_grad(%dp: tensor<4x8x32x32xf32>, %p: tensor<4x8x32x32xf32>) {
  %0 = tpc.softmax_grad %dp, %p : tensor<4x8x32x32xf32>
  return
}

// The mask is drawn at global indices: every dim parallel.
// CHECK-NEXT: tpc.dropout_mask: () -> ([i, j, k]) {i=2, j=32, k=64} linearity none
// CHECK-NEXT: tpc.dropout_mask: ([]) -> ([i, j, k]) {i=2, j=32, k=64} linearity none
func.func @dropout_mask(%mb: tensor<i64>) {
  %0 = tpc.dropout_mask rate 1.000000e-01 stream 3 : tensor<2x32x64xi8>
  %1 = tpc.dropout_mask rate 1.000000e-01 stream 3 block %mb : tensor<2x32x64xi8>
  return
}

// CHECK-NEXT: tpc.apply_mask: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=2, j=32, k=64} linearity multilinear in 0
func.func @apply_mask(%x: tensor<2x32x64xf32>, %m: tensor<2x32x64xi8>) {
  %0 = tpc.apply_mask %x, %m rate 1.000000e-01 : tensor<2x32x64xf32>, tensor<2x32x64xi8>
  return
}

// Only batch and heads split: dk and dv sum over the query positions, dq
// over the keys, and the score gradient over the value head dim (n).
// CHECK-NEXT: tpc.attention_grad: ([i, j, k, n], [i, j, k, m], [i, j, l, m], [i, j, l, n]) -> ([i, j, k, m], [i, j, l, m], [i, j, l, n]) {i=4, j=8, k=32 whole, l=32 whole, m=16 whole, n=8 whole} linearity multilinear in 0
func.func @attention_grad(%do: tensor<4x8x32x8xf32>, %q: tensor<4x8x32x16xf32>, %k: tensor<4x8x32x16xf32>, %v: tensor<4x8x32x8xf32>) {
  %0:3 = tpc.attention_grad %do, %q, %k, %v scale 2.500000e-01 : tensor<4x8x32x8xf32>, tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x8x32x8xf32>
  return
}

// Grouped-query: the query heads are [kv_heads, group]; a kv head's
// gradient sums over its group, so only the kv heads (j) split.
// CHECK-NEXT: tpc.attention_grad: ([i, j*k, l, o], [i, j*k, l, n], [i, j, m, n], [i, j, m, o], []) -> ([i, j*k, l, n], [i, j, m, n], [i, j, m, o]) {i=4, j=4, k=2 whole, l=32 whole, m=32 whole, n=16 whole, o=16 whole} linearity multilinear in 0
func.func @attention_grad_gqa_causal(%do: tensor<4x8x32x16xf32>, %q: tensor<4x8x32x16xf32>, %k: tensor<4x4x32x16xf32>, %v: tensor<4x4x32x16xf32>, %mb: tensor<i64>) {
  %0:3 = tpc.attention_grad %do, %q, %k, %v causal scale 2.500000e-01 dropout 1.000000e-01 stream 2 block %mb : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return
}

// Sequence-major: the same factors, sequences before heads.
// CHECK-NEXT: tpc.attention_grad: ([i, l, j*k, o], [i, l, j*k, n], [i, m, j, n], [i, m, j, o]) -> ([i, l, j*k, n], [i, m, j, n], [i, m, j, o]) {i=4, j=4, k=2 whole, l=32 whole, m=32 whole, n=16 whole, o=16 whole} linearity multilinear in 0
func.func @attention_grad_seq_major(%do: tensor<4x32x8x16xf32>, %q: tensor<4x32x8x16xf32>, %k: tensor<4x32x4x16xf32>, %v: tensor<4x32x4x16xf32>) {
  %0:3 = tpc.attention_grad %do, %q, %k, %v causal seq_major scale 2.500000e-01 : tensor<4x32x8x16xf32>, tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>
  return
}

// Like rotary: the angles depend on the global position.
// CHECK-NEXT: tpc.rotary_grad: ([i, j, k, l]) -> ([i, j, k, l]) {i=4, j=8, k=32 whole, l=16 whole} linearity multilinear
func.func @rotary_grad(%dq: tensor<4x8x32x16xf32>) {
  %0 = tpc.rotary_grad %dq theta 1.000000e+04 offset 3 : tensor<4x8x32x16xf32>
  return
}

// Per position, the vocabulary whole; linear in the loss-sum gradient.
// CHECK-NEXT: tpc.cross_entropy_grad: ([i, j, k], [i, j], []) -> ([i, j, k]) {i=4, j=32, k=256 blocks} linearity multilinear in 2
func.func @cross_entropy_grad(%logits: tensor<4x32x256xf32>, %labels: tensor<4x32xi64>, %dsum: tensor<f32>) {
  %0 = tpc.cross_entropy_grad %logits, %labels, %dsum : tensor<4x32x256xf32>, tensor<4x32xi64>
  return
}

// A sharded count is a partial i64 sum.
// CHECK-NEXT: tpc.count_targets: ([i, j]) -> ([]) {i=8 reduction, j=32 reduction} linearity none
func.func @count_targets(%labels: tensor<8x32xi64>) {
  %0 = tpc.count_targets %labels : tensor<8x32xi64>
  return
}

// CHECK-NEXT: tpc.inverse_count: ([]) -> ([]) {} linearity none
func.func @inverse_count(%count: tensor<i64>) {
  %0 = tpc.inverse_count %count
  return
}

// The padded dim is whole on both sides, like a sliced one.
// CHECK-NEXT: tpc.pad: ([i, j]) -> ([k, j]) {i=32 whole, j=64, k=1024 whole} linearity multilinear
func.func @pad(%dpos: tensor<32x64xf32>) {
  %0 = tpc.pad %dpos dim 0 offset 0 to 1024 : tensor<32x64xf32>
  return
}

// The input dim is [result, repeats]; the repeats are summed.
// CHECK-NEXT: tpc.sum_groups: ([i, j*m, k, l]) -> ([i, j, k, l]) {i=4, j=4, k=32, l=16, m=2 reduction} linearity multilinear
func.func @sum_groups(%dk: tensor<4x8x32x16xf32>) {
  %0 = tpc.sum_groups %dk dim 1 times 2 : tensor<4x8x32x16xf32>
  return
}

// One group (multi-query attention's kv-head, the copies of a replicated
// K/V weight): the input dim is the repeats alone, so a split of it makes
// the result a partial sum.
// CHECK-NEXT: tpc.sum_groups: ([l, j, k]) -> ([i, j, k]) {i=1, j=16, k=128, l=2 reduction} linearity multilinear
func.func @sum_groups_one_group(%dw: tensor<2x16x128xf32>) {
  %0 = tpc.sum_groups %dw dim 0 times 2 : tensor<2x16x128xf32>
  return
}
