// RUN: tpc-opt %s --dist-replicate-kv-heads=tp=4 -split-input-file | FileCheck %s

// Unfused grouped-query attention, 8 heads and 2 kv-heads over 4 devices:
// the K and V weights' kv-heads are repeated twice (each device's copy is
// the kv-head of its query heads), the repeat to the query heads shrinks
// from 4 to 2, and the types that follow are inferred again.
// CHECK-LABEL: func.func @unfused
// CHECK: %[[K:.*]] = tpc.repeat %arg1 dim 0 times 2 {tpc.layer = 0 : i64} : tensor<2x16x128xf32>
// CHECK-NEXT: %[[KP:.*]] = tpc.linear %arg0, %[[K]] layout out_in {tpc.layer = 0 : i64} : tensor<4x16x128xf32>, tensor<4x16x128xf32>
// CHECK-NEXT: %[[KT:.*]] = tpc.transpose %[[KP]] [0, 2, 1, 3] : tensor<4x16x4x16xf32>
// CHECK-NEXT: tpc.repeat %[[KT]] dim 1 times 2 : tensor<4x4x16x16xf32>
// CHECK: tpc.batch_matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<4x8x16x16xf32>, tensor<4x8x16x16xf32>
func.func @unfused(%x: tensor<4x16x128xf32>, %wk: tensor<2x16x128xf32> {tpc.param = "k"},
                   %q: tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32> {
  %k = tpc.linear %x, %wk layout out_in {tpc.layer = 0 : i64} : tensor<4x16x128xf32>, tensor<2x16x128xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x2x16xf32>
  %kr = tpc.repeat %kt dim 1 times 4 : tensor<4x2x16x16xf32>
  %s = tpc.batch_matmul %q, %kr transpose_rhs : tensor<4x8x16x16xf32>, tensor<4x8x16x16xf32>
  return %s : tensor<4x8x16x16xf32>
}

// -----

// Fused attention with one kv-head (multi-query) and a K bias: weight and
// bias repeat their kv-head 4 times; the attention reads 4 kv-heads.
// CHECK-LABEL: func.func @fused
// CHECK: %[[K:.*]] = tpc.repeat %arg1 dim 1 times 4 : tensor<128x1x16xf32>
// CHECK-NEXT: %[[B:.*]] = tpc.repeat %arg2 dim 0 times 4 : tensor<1x16xf32>
// CHECK-NEXT: %[[KP:.*]] = tpc.linear %arg0, %[[K]], %[[B]] layout in_out : tensor<4x16x128xf32>, tensor<128x4x16xf32>, tensor<4x16xf32>
// CHECK: %[[V:.*]] = tpc.repeat %arg4 dim 1 times 4 : tensor<128x1x16xf32>
// CHECK: tpc.attention %arg3, %{{.*}}, %{{.*}} causal scale 2.500000e-01 : tensor<4x8x16x16xf32>, tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>
func.func @fused(%x: tensor<4x16x128xf32>, %wk: tensor<128x1x16xf32> {tpc.param = "k"},
                 %bk: tensor<1x16xf32> {tpc.param = "k.bias"}, %q: tensor<4x8x16x16xf32>,
                 %wv: tensor<128x1x16xf32> {tpc.param = "v"}) -> tensor<4x8x16x16xf32> {
  %k = tpc.linear %x, %wk, %bk layout in_out : tensor<4x16x128xf32>, tensor<128x1x16xf32>, tensor<1x16xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x1x16xf32>
  %v = tpc.linear %x, %wv layout in_out : tensor<4x16x128xf32>, tensor<128x1x16xf32>
  %vt = tpc.transpose %v [0, 2, 1, 3] : tensor<4x16x1x16xf32>
  %o = tpc.attention %q, %kt, %vt causal scale 2.500000e-01 : tensor<4x8x16x16xf32>, tensor<4x1x16x16xf32>, tensor<4x1x16x16xf32>
  return %o : tensor<4x8x16x16xf32>
}

// -----

// As many heads as devices: one query head per kv-head copy, the unfused
// repeat to the query heads goes.
// CHECK-LABEL: func.func @one_head_per_device
// CHECK: %[[K:.*]] = tpc.repeat %arg1 dim 0 times 4 : tensor<1x16x64xf32>
// CHECK-NEXT: %[[KP:.*]] = tpc.linear %arg0, %[[K]] layout out_in : tensor<4x16x64xf32>, tensor<4x16x64xf32>
// CHECK-NEXT: %[[KT:.*]] = tpc.transpose %[[KP]] [0, 2, 1, 3] : tensor<4x16x4x16xf32>
// CHECK-NEXT: tpc.batch_matmul %arg2, %[[KT]] transpose_rhs : tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>
func.func @one_head_per_device(%x: tensor<4x16x64xf32>, %wk: tensor<1x16x64xf32> {tpc.param = "k"},
                               %q: tensor<4x4x16x16xf32>) -> tensor<4x4x16x16xf32> {
  %k = tpc.linear %x, %wk layout out_in : tensor<4x16x64xf32>, tensor<1x16x64xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x1x16xf32>
  %kr = tpc.repeat %kt dim 1 times 4 : tensor<4x1x16x16xf32>
  %s = tpc.batch_matmul %q, %kr transpose_rhs : tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>
  return %s : tensor<4x4x16x16xf32>
}

// -----

// As many kv-heads as devices, or more: Megatron splits them; unchanged.
// CHECK-LABEL: func.func @enough
// CHECK-NOT: tpc.repeat %arg1
// CHECK: tpc.linear %arg0, %arg1 layout out_in
// CHECK: tpc.repeat %{{.*}} dim 1 times 2 : tensor<4x4x16x16xf32>
func.func @enough(%x: tensor<4x16x128xf32>, %wk: tensor<4x16x128xf32> {tpc.param = "k"},
                  %q: tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32> {
  %k = tpc.linear %x, %wk layout out_in : tensor<4x16x128xf32>, tensor<4x16x128xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x4x16xf32>
  %kr = tpc.repeat %kt dim 1 times 2 : tensor<4x4x16x16xf32>
  %s = tpc.batch_matmul %q, %kr transpose_rhs : tensor<4x8x16x16xf32>, tensor<4x8x16x16xf32>
  return %s : tensor<4x8x16x16xf32>
}
