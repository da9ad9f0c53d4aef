// What tpc-compile --train does before lowering, for one microbatch:
// inlining the driver's calls and canonicalizing leaves one straight-line
// @train_step with no loop, no call, no zero accumulator and a constant
// dropout block.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 2 --num-layers 1 \
// RUN:   | tpc-opt --tpc-autodiff --tpc-optimizer --inline --canonicalize \
// RUN:   | FileCheck %s

// F, B and W stay (public: the pipeline passes schedule them apart).
// CHECK: func.func @train_F(
// CHECK: func.func @train_B(
// CHECK: func.func @train_W(
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: scf.for
// CHECK-NOT: call
// CHECK-NOT: dense<0.000000e+00>
// CHECK: %[[BLOCK:.*]] = arith.constant dense<0> : tensor<i64>
// CHECK: tpc.dropout_mask rate 5.000000e-02 stream 0 block %[[BLOCK]]
// CHECK: tpc.cross_entropy
// CHECK: tpc.cross_entropy_grad
// CHECK: tpc.embedding_grad
// CHECK: tpc.adamw_update
// CHECK: tpc.sum_squares
// CHECK-NOT: scf.for
// CHECK-NOT: call
// CHECK: return
