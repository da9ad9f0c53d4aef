// RUN: tpc-opt %s --tpc-fold-attention-transposes --split-input-file | FileCheck %s

// GPT-2's pattern: q, k, v transposed from [b, s, heads, d], the result
// transposed back. All four transposes go; the attention is sequence-major
// and keeps its attributes (causal, scale, dropout, block).
// CHECK-LABEL: func.func @gpt2
// CHECK-SAME: (%[[Q:.*]]: tensor<2x5x3x4xf32>, %[[K:.*]]: tensor<2x5x3x4xf32>, %[[V:.*]]: tensor<2x5x3x6xf32>, %[[MB:.*]]: tensor<i64>)
// CHECK-NOT: tpc.transpose
// CHECK: %[[O:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] causal seq_major scale 5.000000e-01 dropout 1.000000e-01 stream 3 block %[[MB]] {tpc.layer = 0 : i64} : tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3x6xf32>
// CHECK-NOT: tpc.transpose
// CHECK: return %[[O]] : tensor<2x5x3x6xf32>
func.func @gpt2(%q: tensor<2x5x3x4xf32>, %k: tensor<2x5x3x4xf32>, %v: tensor<2x5x3x6xf32>, %mb: tensor<i64>) -> tensor<2x5x3x6xf32> {
  %qt = tpc.transpose %q [0, 2, 1, 3] : tensor<2x5x3x4xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<2x5x3x4xf32>
  %vt = tpc.transpose %v [0, 2, 1, 3] : tensor<2x5x3x6xf32>
  %o = tpc.attention %qt, %kt, %vt causal scale 5.000000e-01 dropout 1.000000e-01 stream 3 block %mb {tpc.layer = 0 : i64} : tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x6xf32>
  %ot = tpc.transpose %o [0, 2, 1, 3] : tensor<2x3x5x6xf32>
  return %ot : tensor<2x5x3x6xf32>
}

// -----

// Grouped kv heads (6 query heads, 2 kv heads); a reader of the head-major
// result that is no transpose reads one transpose of the new result; a
// transposed operand that something else reads stays.
// CHECK-LABEL: func.func @gqa_other_readers
// CHECK-SAME: (%[[Q:.*]]: tensor<1x7x6x4xf32>, %[[K:.*]]: tensor<1x9x2x4xf32>, %[[V:.*]]: tensor<1x9x2x4xf32>)
// CHECK: %[[QT:.*]] = tpc.transpose %[[Q]] [0, 2, 1, 3]
// CHECK-NEXT: %[[O:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] seq_major scale 2.500000e-01 : tensor<1x7x6x4xf32>, tensor<1x9x2x4xf32>, tensor<1x9x2x4xf32>
// CHECK-NEXT: %[[OT:.*]] = tpc.transpose %[[O]] [0, 2, 1, 3] : tensor<1x7x6x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = tpc.add %[[OT]], %[[QT]] : tensor<1x6x7x4xf32>, tensor<1x6x7x4xf32>
// CHECK-NEXT: return %[[SUM]], %[[O]]
func.func @gqa_other_readers(%q: tensor<1x7x6x4xf32>, %k: tensor<1x9x2x4xf32>, %v: tensor<1x9x2x4xf32>) -> (tensor<1x6x7x4xf32>, tensor<1x7x6x4xf32>) {
  %qt = tpc.transpose %q [0, 2, 1, 3] : tensor<1x7x6x4xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<1x9x2x4xf32>
  %vt = tpc.transpose %v [0, 2, 1, 3] : tensor<1x9x2x4xf32>
  %o = tpc.attention %qt, %kt, %vt scale 2.500000e-01 : tensor<1x6x7x4xf32>, tensor<1x2x9x4xf32>, tensor<1x2x9x4xf32>
  %sum = tpc.add %o, %qt : tensor<1x6x7x4xf32>, tensor<1x6x7x4xf32>
  %ot = tpc.transpose %o [0, 2, 1, 3] : tensor<1x6x7x4xf32>
  return %sum, %ot : tensor<1x6x7x4xf32>, tensor<1x7x6x4xf32>
}

// -----

// An operand that is no such transpose (Llama's rotated q and k; another
// permutation) leaves the attention head-major, its transposes in place.
// CHECK-LABEL: func.func @not_all_swapped
// CHECK-NOT: seq_major
// CHECK-COUNT-2: tpc.transpose %{{.*}} [0, 2, 1, 3]
// CHECK-NEXT: tpc.attention %arg0, %{{.*}}, %{{.*}} scale 2.500000e-01 :
// CHECK-NEXT: tpc.transpose %{{.*}} [0, 2, 1, 3]
// CHECK-NEXT: tpc.transpose %arg3 [0, 1, 3, 2]
// CHECK-NEXT: tpc.attention
// CHECK-NEXT: tpc.transpose %{{.*}} [0, 2, 1, 3]
// CHECK-NOT: seq_major
func.func @not_all_swapped(%q: tensor<1x3x5x4xf32>, %k: tensor<1x5x3x4xf32>, %v: tensor<1x5x3x4xf32>, %w: tensor<1x3x4x5xf32>) -> (tensor<1x5x3x4xf32>, tensor<1x5x3x4xf32>) {
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<1x5x3x4xf32>
  %vt = tpc.transpose %v [0, 2, 1, 3] : tensor<1x5x3x4xf32>
  %o = tpc.attention %q, %kt, %vt scale 2.500000e-01 : tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>
  %ot = tpc.transpose %o [0, 2, 1, 3] : tensor<1x3x5x4xf32>
  %wt = tpc.transpose %w [0, 1, 3, 2] : tensor<1x3x4x5xf32>
  %p = tpc.attention %wt, %kt, %vt scale 2.500000e-01 : tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>
  %pt = tpc.transpose %p [0, 2, 1, 3] : tensor<1x3x5x4xf32>
  return %ot, %pt : tensor<1x5x3x4xf32>, tensor<1x5x3x4xf32>
}

// -----

// Llama's pattern: q and k rotated after their transposes (each rotary read
// by the attention alone), v only transposed. The rotaries become
// sequence-major rotaries of the projections (same theta, offset, scaling)
// and no transpose is left.
// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[Q:.*]]: tensor<2x5x6x4xf32>, %[[K:.*]]: tensor<2x5x2x4xf32>, %[[V:.*]]: tensor<2x5x2x4xf32>)
// CHECK-NOT: tpc.transpose
// CHECK-DAG: %[[QR:.*]] = tpc.rotary %[[Q]] seq_major theta 5.000000e+05 offset 3 scaling [8.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03] {tpc.layer = 1 : i64} : tensor<2x5x6x4xf32>
// CHECK-DAG: %[[KR:.*]] = tpc.rotary %[[K]] seq_major theta 5.000000e+05 offset 3 scaling [8.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03] : tensor<2x5x2x4xf32>
// CHECK: %[[O:.*]] = tpc.attention %[[QR]], %[[KR]], %[[V]] causal seq_major scale 5.000000e-01
// CHECK-NOT: tpc.transpose
// CHECK: return %[[O]]
func.func @llama(%q: tensor<2x5x6x4xf32>, %k: tensor<2x5x2x4xf32>, %v: tensor<2x5x2x4xf32>) -> tensor<2x5x6x4xf32> {
  %qt = tpc.transpose %q [0, 2, 1, 3] : tensor<2x5x6x4xf32>
  %qr = tpc.rotary %qt theta 5.000000e+05 offset 3 scaling [8.0, 1.0, 4.0, 8192.0] {tpc.layer = 1 : i64} : tensor<2x6x5x4xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<2x5x2x4xf32>
  %kr = tpc.rotary %kt theta 5.000000e+05 offset 3 scaling [8.0, 1.0, 4.0, 8192.0] : tensor<2x2x5x4xf32>
  %vt = tpc.transpose %v [0, 2, 1, 3] : tensor<2x5x2x4xf32>
  %o = tpc.attention %qr, %kr, %vt causal scale 5.000000e-01 : tensor<2x6x5x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>
  %ot = tpc.transpose %o [0, 2, 1, 3] : tensor<2x6x5x4xf32>
  return %ot : tensor<2x5x6x4xf32>
}

// -----

// A rotary that something else reads too stays head-major, and so does
// its attention (folding would rotate twice).
// CHECK-LABEL: func.func @rotary_read_twice
// CHECK-NOT: seq_major
func.func @rotary_read_twice(%q: tensor<2x5x6x4xf32>, %k: tensor<2x5x2x4xf32>, %v: tensor<2x5x2x4xf32>) -> (tensor<2x6x5x4xf32>, tensor<2x6x5x4xf32>) {
  %qt = tpc.transpose %q [0, 2, 1, 3] : tensor<2x5x6x4xf32>
  %qr = tpc.rotary %qt theta 1.000000e+04 : tensor<2x6x5x4xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<2x5x2x4xf32>
  %vt = tpc.transpose %v [0, 2, 1, 3] : tensor<2x5x2x4xf32>
  %o = tpc.attention %qr, %kt, %vt scale 5.000000e-01 : tensor<2x6x5x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>
  return %o, %qr : tensor<2x6x5x4xf32>, tensor<2x6x5x4xf32>
}
