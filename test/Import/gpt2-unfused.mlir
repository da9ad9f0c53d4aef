// --attention unfused: the Megatron-style chain with the scale folded into
// QK^T and the causal mask inside the softmax; --dropout overrides or removes
// every dropout.
//
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --attention unfused \
// RUN:   | FileCheck %s --implicit-check-not=tpc.attention \
// RUN:       --implicit-check-not=tpc.dropout --implicit-check-not=tpc.mul
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --attention unfused --dropout 0 \
// RUN:   | FileCheck %s --check-prefix=NODROP
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --dropout 0 \
// RUN:   | FileCheck %s --check-prefix=NODROP
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --attention unfused --dropout 0.2 \
// RUN:   | FileCheck %s --check-prefix=RATE --implicit-check-not=tpc.dropout
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --dropout 0.2 \
// RUN:   | FileCheck %s --check-prefix=FUSED-RATE --implicit-check-not=tpc.dropout --implicit-check-not=' dropout '

// CHECK-LABEL: func.func @forward(
// CHECK: %[[X:.*]] = tpc.dropout %{{.*}} rate 5.000000e-02 stream 0 : tensor<4x32x64xf32>
// CHECK: tpc.slice
// CHECK: %[[Q:.*]] = tpc.transpose {{.*}} {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32>
// CHECK: tpc.slice
// CHECK: %[[K:.*]] = tpc.transpose {{.*}} {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32>
// CHECK: tpc.slice
// CHECK: %[[V:.*]] = tpc.transpose {{.*}} {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32>
// The scores come straight from the product (scale 1/sqrt(16) folded in) into
// the causal softmax: no separate scale or mask op in between.
// CHECK-NEXT: %[[SCORES:.*]] = tpc.batch_matmul %[[Q]], %[[K]] transpose_rhs scale 2.500000e-01 {tpc.layer = 0 : i64} : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK-NEXT: %[[PROBS:.*]] = tpc.softmax %[[SCORES]] causal {tpc.layer = 0 : i64} : tensor<4x4x32x32xf32>
// CHECK-NEXT: %[[DROPPED:.*]] = tpc.dropout %[[PROBS]] rate 1.000000e-01 stream 1 {tpc.layer = 0 : i64} : tensor<4x4x32x32xf32>
// CHECK-NEXT: %[[O:.*]] = tpc.batch_matmul %[[DROPPED]], %[[V]] {tpc.layer = 0 : i64} : tensor<4x4x32x32xf32>, tensor<4x4x32x16xf32>
// CHECK-NEXT: tpc.transpose %[[O]] [0, 2, 1, 3] {tpc.layer = 0 : i64} : tensor<4x4x32x16xf32>
// CHECK: tpc.dropout {{.*}} rate 1.500000e-01 stream 2 {tpc.layer = 0 : i64}
// CHECK: tpc.dropout {{.*}} rate 1.500000e-01 stream 3 {tpc.layer = 0 : i64}
// CHECK: tpc.batch_matmul {{.*}} transpose_rhs scale 2.500000e-01 {tpc.layer = 1 : i64}
// CHECK-NEXT: tpc.softmax {{.*}} causal {tpc.layer = 1 : i64}
// CHECK-NEXT: tpc.dropout {{.*}} rate 1.000000e-01 stream 4 {tpc.layer = 1 : i64}
// CHECK-NEXT: tpc.batch_matmul
// CHECK: tpc.dropout {{.*}} rate 1.500000e-01 stream 5 {tpc.layer = 1 : i64}
// CHECK: tpc.dropout {{.*}} rate 1.500000e-01 stream 6 {tpc.layer = 1 : i64}
// CHECK: return

// --dropout 0 removes every dropout op and the fused attention's dropout.
// NODROP-LABEL: func.func @forward(
// NODROP-NOT: dropout
// NODROP: return

// --dropout 0.2 replaces embd_pdrop, attn_pdrop and resid_pdrop.
// RATE-LABEL: func.func @forward(
// RATE-COUNT-7: tpc.dropout {{.*}} rate 2.000000e-01 stream
// RATE: return

// FUSED-RATE-LABEL: func.func @forward(
// FUSED-RATE: tpc.dropout {{.*}} rate 2.000000e-01 stream 0
// FUSED-RATE: tpc.attention {{.*}} dropout 2.000000e-01 stream 1
// FUSED-RATE: tpc.dropout {{.*}} rate 2.000000e-01 stream 2
// FUSED-RATE: tpc.dropout {{.*}} rate 2.000000e-01 stream 3
// FUSED-RATE: tpc.attention {{.*}} dropout 2.000000e-01 stream 4
// FUSED-RATE: tpc.dropout {{.*}} rate 2.000000e-01 stream 5
// FUSED-RATE: tpc.dropout {{.*}} rate 2.000000e-01 stream 6
// FUSED-RATE: return
