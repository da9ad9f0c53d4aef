// One microbatch or four of a batch of 8: F, B and W work on the
// microbatch's shapes, the parameters' shapes do not change, and the driver
// loops (not unrolled) over the microbatches after counting the targets of
// the whole batch.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 8 --num-layers 1 --attention unfused -o %t.mlir
// RUN: tpc-opt %t.mlir --tpc-autodiff | FileCheck %s --check-prefixes=CHECK,M1
// RUN: tpc-opt %t.mlir --tpc-autodiff=microbatches=4 | FileCheck %s --check-prefixes=CHECK,M4

// CHECK-LABEL: func.func @train_F(
// CHECK-SAME: %arg0: tensor<256x64xf32> {tpc.param = "transformer.wte.weight"}
// M1-SAME: %arg16: tensor<8x8xi64> {tpc.input = "input_ids"}, %arg17: tensor<8x8xi64> {tpc.input = "labels"}
// M4-SAME: %arg16: tensor<2x8xi64> {tpc.input = "input_ids"}, %arg17: tensor<2x8xi64> {tpc.input = "labels"}
// M1: tpc.embedding %arg0[%arg16] : tensor<256x64xf32>, tensor<8x8xi64>
// M4: tpc.embedding %arg0[%arg16] : tensor<256x64xf32>, tensor<2x8xi64>
// M1: tpc.dropout_mask rate 5.000000e-02 stream 0 block %arg18 : tensor<8x8x64xi8>
// M4: tpc.dropout_mask rate 5.000000e-02 stream 0 block %arg18 : tensor<2x8x64xi8>
// M1: tpc.softmax %{{.*}} causal {tpc.layer = 0 : i64, tpc.stash_layer = array<i64: 0>} : tensor<8x4x8x8xf32>
// M4: tpc.softmax %{{.*}} causal {tpc.layer = 0 : i64, tpc.stash_layer = array<i64: 0>} : tensor<2x4x8x8xf32>
// M1: tpc.cross_entropy %{{.*}}, %arg17 : tensor<8x8x256xf32>, tensor<8x8xi64>
// M4: tpc.cross_entropy %{{.*}}, %arg17 : tensor<2x8x256xf32>, tensor<2x8xi64>

// CHECK-LABEL: func.func @train_B(
// M1: tpc.cross_entropy_grad %{{.*}} : tensor<8x8x256xf32>, tensor<8x8xi64>
// M4: tpc.cross_entropy_grad %{{.*}} : tensor<2x8x256xf32>, tensor<2x8xi64>

// Gradients have the parameters' shapes either way.
// CHECK-LABEL: func.func @train_W(
// CHECK-SAME: -> (tensor<256x64xf32> {tpc.grad = "transformer.wte.weight"}, tensor<64x64xf32> {tpc.grad = "transformer.wpe.weight"}
// M1: tpc.linear_weight_grad %{{.*}} : tensor<8x8x64xf32>, tensor<8x8x256xf32> -> tensor<256x64xf32>
// M4: tpc.linear_weight_grad %{{.*}} : tensor<2x8x64xf32>, tensor<2x8x256xf32> -> tensor<256x64xf32>

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[IDS:arg16]]: tensor<8x8xi64> {tpc.input = "input_ids"}, %[[LABELS:arg17]]: tensor<8x8xi64> {tpc.input = "labels"})
// M1-SAME: attributes {tpc.microbatches = 1 : i64}
// M4-SAME: attributes {tpc.microbatches = 4 : i64}
// CHECK: %[[TOTAL:.*]] = tpc.count_targets %[[LABELS]] : tensor<8x8xi64>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// M1: %[[CM:.*]] = arith.constant 1 : index
// M4: %[[CM:.*]] = arith.constant 4 : index
// CHECK: %[[STEP:.*]] = arith.constant 1 : index
// M1: %[[SIZE:.*]] = arith.constant 8 : index
// M4: %[[SIZE:.*]] = arith.constant 2 : index
// CHECK: %[[LOOP:.*]]:17 = scf.for %[[I:.*]] = %[[C0]] to %[[CM]] step %[[STEP]] iter_args(
// CHECK: %[[OFF:.*]] = arith.muli %[[I]], %[[SIZE]] : index
// M1: %[[MBIDS:.*]] = tensor.extract_slice %[[IDS]][%[[OFF]], 0] [8, 8] [1, 1] : tensor<8x8xi64> to tensor<8x8xi64>
// M1: %[[MBLABELS:.*]] = tensor.extract_slice %[[LABELS]][%[[OFF]], 0] [8, 8] [1, 1] : tensor<8x8xi64> to tensor<8x8xi64>
// M4: %[[MBIDS:.*]] = tensor.extract_slice %[[IDS]][%[[OFF]], 0] [2, 8] [1, 1] : tensor<8x8xi64> to tensor<2x8xi64>
// M4: %[[MBLABELS:.*]] = tensor.extract_slice %[[LABELS]][%[[OFF]], 0] [2, 8] [1, 1] : tensor<8x8xi64> to tensor<2x8xi64>
// The microbatch index selects the dropout block.
// CHECK: %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[MB:.*]] = tensor.from_elements %[[I64]] : tensor<i64>
// CHECK: func.call @train_F({{.*}}, %[[MBIDS]], %[[MBLABELS]], %[[MB]])
// CHECK: func.call @train_B(
// CHECK: func.call @train_W(%[[MBIDS]],
// CHECK-COUNT-17: tpc.add %arg
// CHECK-NEXT: scf.yield
// CHECK-NOT: func.call
// CHECK: tpc.loss_mean %[[LOOP]]#0, %[[TOTAL]]
