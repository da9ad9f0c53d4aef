// RUN: tpc-opt %s --tpc-test-sharding-rules -o /dev/null | FileCheck %s
// RUN: tpc-opt %s --tpc-test-sharding-rules | FileCheck %s --check-prefix=IR

// Each forward op's sharding rule: operand and result dimensions as factors
// (major first, joined by *), factor sizes and kinds, linearity.

// CHECK:      tpc.embedding: ([i, j], [k, l]) -> ([k, l, j]) {i=256 reduction blocks, j=64, k=4, l=32} linearity multilinear
// CHECK-NEXT: tpc.linear: ([i, j, k], [k, l, m, n], [l, m, n]) -> ([i, j, l, m, n]) {i=4, j=32, k=64 whole, l=3, m=4, n=16} linearity none
// CHECK-NEXT: tpc.linear: ([i, j, k], [l, k]) -> ([i, j, l]) {i=4, j=32, k=64 reduction, l=128} linearity multilinear
// CHECK-NEXT: tpc.batch_matmul: ([i, j, k, m], [i, j, l, m]) -> ([i, j, k, l]) {i=4, j=8, k=32, l=32, m=16 reduction} linearity multilinear
// CHECK-NEXT: tpc.layer_norm: ([i, j, k], [k], [k]) -> ([i, j, k]) {i=4, j=32, k=64 whole} linearity none
// CHECK-NEXT: tpc.rms_norm: ([i, j, k], [k]) -> ([i, j, k]) {i=4, j=32, k=64 whole} linearity none
// CHECK-NEXT: tpc.gelu: ([i, j, k]) -> ([i, j, k]) {i=4, j=32, k=64} linearity none
// CHECK-NEXT: tpc.silu: ([i, j, k]) -> ([i, j, k]) {i=4, j=32, k=64} linearity none
// CHECK-NEXT: tpc.dropout: ([i, j, k]) -> ([i, j, k]) {i=4, j=32, k=64} linearity multilinear
// CHECK-NEXT: tpc.softmax: ([i, j, k, l]) -> ([i, j, k, l]) {i=4, j=8, k=32 whole, l=32 whole} linearity none
// CHECK-NEXT: tpc.add: ([i, j, k], [j, k]) -> ([i, j, k]) {i=4, j=32, k=64} linearity additive
// CHECK-NEXT: tpc.mul: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=4, j=32, k=64} linearity multilinear
// CHECK-NEXT: tpc.attention: ([i, j*k, l, n], [i, j, m, n], [i, j, m, o]) -> ([i, j*k, l, o]) {i=4, j=4, k=2, l=32 whole, m=32 whole, n=16 whole, o=16} linearity none
// CHECK-NEXT: tpc.rotary: ([i, j, k, l]) -> ([i, j, k, l]) {i=4, j=8, k=32 whole, l=16 whole} linearity multilinear
// CHECK-NEXT: tpc.cross_entropy: ([i, j, k], [i, j]) -> ([], []) {i=4 reduction, j=32 reduction, k=256 blocks} linearity none
// CHECK-NEXT: tpc.loss_mean: ([], []) -> ([]) {} linearity none
// CHECK-NEXT: tpc.reshape: ([i, j, k, l]) -> ([i, j, k*l]) {i=4, j=32, k=4, l=16} linearity multilinear
// CHECK-NEXT: tpc.transpose: ([i, j, k, l]) -> ([i, k, j, l]) {i=4, j=32, k=4, l=16} linearity multilinear
// CHECK-NEXT: tpc.slice: ([i, j]) -> ([k, j]) {i=32 whole, j=64, k=16 whole} linearity multilinear
// CHECK-NEXT: tpc.repeat: ([i, j, k, l]) -> ([i, j*m, k, l]) {i=4, j=4, k=32, l=16, m=2} linearity multilinear
// CHECK-NEXT: tpc.cast: ([i, j, k]) -> ([i, j, k]) {i=4, j=32, k=64} linearity multilinear
// CHECK:      tpc.softmax: ([i, j, k, l]) -> ([i, j, k, l]) {i=4, j=8, k=32, l=32 whole} linearity none
// CHECK-NEXT: tpc.attention: ([i, j, k, m], [i, j, l, m], [i, j, l, n]) -> ([i, j, k, n]) {i=4, j=8, k=32, l=32 whole, m=16 whole, n=8} linearity none
// CHECK-NEXT: tpc.reshape: ([i, j]) -> ([k, l]) {i=6 whole, j=4 whole, k=4 whole, l=6 whole} linearity multilinear
// CHECK-NEXT: tpc.reshape: ([i, 1, j]) -> ([i*j]) {i=2, j=12} linearity multilinear
// CHECK-NEXT: tpc.batch_matmul: ([k, i], [k, j]) -> ([i, j]) {i=4, j=128, k=64 reduction} linearity multilinear
// A single index repeated (multi-query attention's kv-head; a replicated
// K/V weight's copies): the result dim is the repeats alone, splittable.
// CHECK-NEXT: tpc.repeat: ([i, j, k, l]) -> ([i, m, k, l]) {i=4, j=1, k=32, l=16, m=8} linearity multilinear
// Sequence-major attention: the same factors, sequences before heads.
// CHECK-NEXT: tpc.attention: ([i, l, j*k, n], [i, m, j, n], [i, m, j, o]) -> ([i, l, j*k, o]) {i=4, j=4, k=2, l=32 whole, m=32 whole, n=16 whole, o=8} linearity none
// CHECK-NEXT: tpc.rotary: ([i, j, k, l]) -> ([i, j, k, l]) {i=4, j=32 whole, k=8, l=16 whole} linearity multilinear

// The pass leaves the IR unchanged.
// IR-LABEL: func.func @f
// IR: tpc.cast

func.func @f(%wte: tensor<256x64xf32>, %ids: tensor<4x32xi64>, %w: tensor<64x3x4x16xf32>, %b: tensor<3x4x16xf32>,
  %wo: tensor<128x64xf32>, %q: tensor<4x8x32x16xf32>, %k: tensor<4x4x32x16xf32>, %g: tensor<64xf32>,
  %labels: tensor<4x32xi64>, %logits: tensor<4x32x256xf32>, %pos: tensor<32x64xf32>, %x4: tensor<4x32x4x16xf32>) {
  %x = tpc.embedding %wte[%ids] : tensor<256x64xf32>, tensor<4x32xi64>
  %qkv = tpc.linear %x, %w, %b layout in_out : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>
  %y = tpc.linear %x, %wo layout out_in : tensor<4x32x64xf32>, tensor<128x64xf32>
  %s = tpc.batch_matmul %q, %q transpose_rhs scale 2.500000e-01 : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>
  %ln = tpc.layer_norm %x, %g, %g eps 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
  %rn = tpc.rms_norm %x, %g eps 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>
  %ge = tpc.gelu %x tanh : tensor<4x32x64xf32>
  %si = tpc.silu %x : tensor<4x32x64xf32>
  %dr = tpc.dropout %x rate 1.000000e-01 stream 3 : tensor<4x32x64xf32>
  %sm = tpc.softmax %s causal : tensor<4x8x32x32xf32>
  %ad = tpc.add %x, %pos : tensor<4x32x64xf32>, tensor<32x64xf32>
  %mu = tpc.mul %x, %x : tensor<4x32x64xf32>, tensor<4x32x64xf32>
  %at = tpc.attention %q, %k, %k causal scale 2.500000e-01 : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  %ro = tpc.rotary %q theta 1.000000e+04 : tensor<4x8x32x16xf32>
  %sum, %count = tpc.cross_entropy %logits, %labels : tensor<4x32x256xf32>, tensor<4x32xi64>
  %loss = tpc.loss_mean %sum, %count
  %re = tpc.reshape %x4 : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
  %tr = tpc.transpose %x4 [0, 2, 1, 3] : tensor<4x32x4x16xf32>
  %sl = tpc.slice %pos dim 0 [0 : 16] : tensor<32x64xf32>
  %rp = tpc.repeat %k dim 1 times 2 : tensor<4x4x32x16xf32>
  %ca = tpc.cast %x : tensor<4x32x64xf32> to tensor<4x32x64xbf16>
  return
}
func.func @g(%s: tensor<4x8x32x32xf32>, %q: tensor<4x8x32x16xf32>, %v: tensor<4x8x32x8xf32>, %a: tensor<6x4xf32>, %b: tensor<2x1x12xf32>, %l: tensor<64x4xf32>, %w: tensor<64x128xf32>, %k1: tensor<4x1x32x16xf32>, %qs: tensor<4x32x8x16xf32>, %ks: tensor<4x32x4x16xf32>, %vs: tensor<4x32x4x8xf32>) {
  %sm = tpc.softmax %s : tensor<4x8x32x32xf32>
  %at = tpc.attention %q, %q, %v scale 2.500000e-01 : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x8x32x8xf32>
  %r1 = tpc.reshape %a : tensor<6x4xf32> -> tensor<4x6xf32>
  %r2 = tpc.reshape %b : tensor<2x1x12xf32> -> tensor<24xf32>
  %bm = tpc.batch_matmul %l, %w transpose_lhs : tensor<64x4xf32>, tensor<64x128xf32>
  %mq = tpc.repeat %k1 dim 1 times 8 : tensor<4x1x32x16xf32>
  %sq = tpc.attention %qs, %ks, %vs causal seq_major scale 2.500000e-01 : tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x8xf32>
  %sr = tpc.rotary %qs seq_major theta 1.000000e+04 : tensor<4x32x8x16xf32>
  return
}
