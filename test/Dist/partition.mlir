// dist-partition: local types and the collectives that move each operand
// to the layout its op needs, each located at the op it serves with the
// transition it performs.
// RUN: tpc-opt %s --dist-propagate --dist-partition -split-input-file --mlir-print-debuginfo | FileCheck %s

dist.mesh @mesh axes [dp = 2, tp = 2]
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[dp], [], []]>}
// CHECK-SAME: %{{.*}}: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp]]>}
// CHECK-SAME: %{{.*}}: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], []]>}
// CHECK-SAME: -> tensor<4x8x16xf32>
func.func @mlp(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[dp], [], []]>},
               %w1: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
               %w2: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
               %b2: tensor<16xf32>) -> tensor<4x8x16xf32> {
  // CHECK: tpc.linear {{.*}} : tensor<2x8x16xf32>, tensor<16x16xf32>
  %h = tpc.linear %x, %w1 layout in_out : tensor<4x8x16xf32>, tensor<16x32xf32>
  %a = tpc.gelu %h tanh : tensor<4x8x32xf32>
  // CHECK: tpc.linear {{.*}} : tensor<2x8x16xf32>, tensor<16x16xf32>
  %y = tpc.linear %a, %w2 layout in_out : tensor<4x8x32xf32>, tensor<32x16xf32>
  // CHECK-NEXT: dist.all_reduce %{{.*}} on @mesh axes [tp] : tensor<2x8x16xf32> loc([[AR:#loc[0-9]*]])
  // CHECK-NEXT: tpc.add
  %z = tpc.add %y, %b2 : tensor<4x8x16xf32>, tensor<16xf32>
  // The result is whole: the batch is gathered over dp.
  // CHECK-NEXT: dist.all_gather %{{.*}} on @mesh axes [dp] dim 0 : tensor<2x8x16xf32> -> tensor<4x8x16xf32> loc([[AG:#loc[0-9]*]])
  // CHECK-NEXT: return
  return %z : tensor<4x8x16xf32>
}
// CHECK-DAG: [[AR]] = loc("tpc.add operand 0: {{\[}}[dp], [], []] partial [tp] -> {{\[}}[dp], [], []]"
// CHECK-DAG: [[AG]] = loc("func.return operand 0: {{\[}}[dp], [], []] -> {{\[}}[], [], []]"

// -----

// Sequence parallelism: a partial sum wanted split along the sequence is
// reduce-scattered; a sequence shard read by a column-parallel matmul is
// gathered, once per phase of the step (the backward gathers the stashed
// shard again).
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @sequence
func.func @sequence(%x: tensor<2x8x16xf32>,
                    %w: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                    %v: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>})
    -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %g = arith.constant dense<1.0> : tensor<16xf32>
  %bb = arith.constant dense<0.0> : tensor<16xf32>
  %xs = dist.shard %x to <@mesh, [[], [], [tp]]> : tensor<2x8x16xf32>
  // CHECK: dist.shard_slice %{{.*}} on @mesh axes [tp] dim 2 : tensor<2x8x16xf32> -> tensor<2x8x8xf32>
  // CHECK: tpc.linear
  %p = tpc.linear %xs, %w layout in_out : tensor<2x8x16xf32>, tensor<16x16xf32>
  // CHECK-NEXT: dist.reduce_scatter %{{.*}} on @mesh axes [tp] dim 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
  %s = dist.shard %p to <@mesh, [[], [tp], []]> : tensor<2x8x16xf32>
  // CHECK: tpc.layer_norm {{.*}} : tensor<2x4x16xf32>
  %n = tpc.layer_norm %s, %g, %bb eps 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK-NEXT: %[[G:.*]] = dist.all_gather %{{.*}} on @mesh axes [tp] dim 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: tpc.linear %[[G]]
  %c1 = tpc.linear %n, %v layout in_out {tpc.phase = "train_F"} : tensor<2x8x16xf32>, tensor<16x32xf32>
  // A reader of the same phase shares the gather.
  // CHECK-NEXT: tpc.linear %[[G]]
  %c3 = tpc.linear %n, %v layout in_out {tpc.phase = "train_F"} : tensor<2x8x16xf32>, tensor<16x32xf32>
  // A reader of another phase (the backward) gathers the shard again.
  // CHECK-NEXT: %[[G2:.*]] = dist.all_gather %{{.*}} on @mesh axes [tp] dim 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: tpc.linear %[[G2]]
  %c2 = tpc.linear %n, %v layout in_out {tpc.phase = "train_W"} : tensor<2x8x16xf32>, tensor<16x32xf32>
  return %c1, %c2 : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// The global norm counts a replicated gradient once: each group of equally
// split operands is summed and reduced on its own.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @norm
func.func @norm(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
                %b: tensor<16xf32>) -> tensor<f32> {
  // CHECK: %[[SPLIT:.*]] = tpc.sum_squares %{{.*}} : tensor<8x8xf32>
  // CHECK-NEXT: %[[REDUCED:.*]] = dist.all_reduce %[[SPLIT]] on @mesh axes [tp] : tensor<f32>
  // CHECK-NEXT: %[[WHOLE:.*]] = tpc.sum_squares %{{.*}} : tensor<16xf32>
  // CHECK-NEXT: tpc.add %[[REDUCED]], %[[WHOLE]]
  %s = tpc.sum_squares %a, %b : tensor<8x16xf32>, tensor<16xf32>
  return %s : tensor<f32>
}

// -----

// The weight gradient of kv-heads replicated over tp (dist-replicate-kv-heads:
// 2 kv-heads repeated to 4 copies, one per device): the copies' gradient is
// split finer than the 2 groups it sums, so each device pads its copy with
// zeros (no communication) and the sum is a partial sum, reduced where it
// is needed whole.
dist.mesh @mesh axes [tp = 4]
// CHECK-LABEL: func.func @replicated_kv_heads
func.func @replicated_kv_heads(%dw: tensor<4x16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], [], []]>}) -> tensor<2x16x8xf32> {
  // CHECK: %[[P:.*]] = dist.shard_pad %arg0 on @mesh axes [tp] dim 0 : tensor<1x16x8xf32> -> tensor<4x16x8xf32> loc([[PAD:#loc[0-9]*]])
  // CHECK-NEXT: %[[S:.*]] = tpc.sum_groups %[[P]] dim 0 times 2 : tensor<4x16x8xf32>
  // CHECK-NEXT: dist.all_reduce %[[S]] on @mesh axes [tp] : tensor<2x16x8xf32>
  %g = tpc.sum_groups %dw dim 0 times 2 : tensor<4x16x8xf32>
  return %g : tensor<2x16x8xf32>
}
// CHECK: [[PAD]] = loc("tpc.sum_groups operand 0: {{\[}}[tp], [], []] -> {{\[}}[], [], []] partial [tp]"

// -----

// One kv-head (multi-query attention) repeated to 2 copies over tp = 2: the
// copies are the dimension's only factor, a reduction: each device sums its
// share of them (1), and the result is a partial sum.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @multi_query
func.func @multi_query(%dw: tensor<2x16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], [], []]>}) -> tensor<1x16x8xf32> {
  // CHECK: %[[S:.*]] = tpc.sum_groups %arg0 dim 0 times 1 : tensor<1x16x8xf32>
  // CHECK-NEXT: dist.all_reduce %[[S]] on @mesh axes [tp] : tensor<1x16x8xf32>
  %g = tpc.sum_groups %dw dim 0 times 2 : tensor<2x16x8xf32>
  return %g : tensor<1x16x8xf32>
}

// -----

// A vocabulary-parallel table's gradient is computed in each device's
// block of rows (the optimizer's shard): its dY and ids, split over tp along
// the sequence, are gathered (4 x 16 floats, against the 8 x 16 of the
// whole table's gradient that a reduce-scatter would move), the kernel
// told its block (dist.vocab_axes); the norm of the block is all-reduced
// over tp and nothing else moves the table.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @table_grad_in_blocks
func.func @table_grad_in_blocks(
    %w: tensor<8x16xf32> {tpc.param = "w", dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %dy: tensor<1x4x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp], []]>},
    %ids: tensor<1x4xi64> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>})
    -> (tensor<f32>, tensor<8x16xf32> {tpc.grad = "w"}) {
  // CHECK: %[[DY:.*]] = dist.all_gather %arg1 on @mesh axes [tp] dim 1 : tensor<1x2x16xf32> -> tensor<1x4x16xf32>
  // CHECK-NEXT: %[[IDS:.*]] = dist.all_gather %arg2 on @mesh axes [tp] dim 1 : tensor<1x2xi64> -> tensor<1x4xi64>
  // CHECK-NEXT: %[[BLOCK:.*]] = tpc.embedding_grad %[[DY]][%[[IDS]]] {dist.vocab_axes = ["tp"]} : tensor<1x4x16xf32>, tensor<1x4xi64> -> tensor<4x16xf32>
  // CHECK-NEXT: %[[SUM:.*]] = tpc.sum_squares %[[BLOCK]] : tensor<4x16xf32>
  // CHECK-NEXT: dist.all_reduce %[[SUM]] on @mesh axes [tp] : tensor<f32>
  // CHECK-NEXT: return %{{.*}}, %[[BLOCK]]
  %g = tpc.embedding_grad %dy[%ids] : tensor<1x4x16xf32>, tensor<1x4xi64> -> tensor<8x16xf32>
  %n = tpc.sum_squares %g : tensor<8x16xf32>
  return %n, %g : tensor<f32>, tensor<8x16xf32>
}

// -----

// Where dY outweighs the table (32 positions of 16 floats against 8 rows),
// the table's gradient is computed over the whole vocabulary from the
// sequence split over tp (a partial sum) and reduce-scattered; the gradient
// norm reads it in the shard the optimizer's gradient takes: one
// reduce-scatter serves both, the norm of the shard is all-reduced over
// tp, and no all-reduce of the whole table beside it.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @norm_reads_the_shard
func.func @norm_reads_the_shard(
    %w: tensor<8x16xf32> {tpc.param = "w", dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %dy: tensor<1x32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp], []]>},
    %ids: tensor<1x32xi64> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>})
    -> (tensor<f32>, tensor<8x16xf32> {tpc.grad = "w"}) {
  // CHECK: %[[TABLE:.*]] = tpc.embedding_grad {{.*}} -> tensor<8x16xf32>
  // CHECK-NOT: dist.all_reduce %[[TABLE]]
  // CHECK: %[[SHARD:.*]] = dist.reduce_scatter %[[TABLE]] on @mesh axes [tp] dim 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK-NOT: dist.all_reduce %[[TABLE]]
  // CHECK: %[[SUM:.*]] = tpc.sum_squares %[[SHARD]] : tensor<4x16xf32>
  // CHECK-NEXT: dist.all_reduce %[[SUM]] on @mesh axes [tp] : tensor<f32>
  // CHECK-NOT: dist.all_reduce %[[TABLE]]
  // CHECK: return %{{.*}}, %[[SHARD]]
  %g = tpc.embedding_grad %dy[%ids] : tensor<1x32x16xf32>, tensor<1x32xi64> -> tensor<8x16xf32>
  %n = tpc.sum_squares %g : tensor<8x16xf32>
  return %n, %g : tensor<f32>, tensor<8x16xf32>
}

// -----

// Through the microbatches' sum: each microbatch's gradient is computed in
// the block the optimizer's shard needs (found through the add); dY is
// whole, so nothing moves (before: the whole table's gradient, sliced).
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @blocks_through_the_sum
func.func @blocks_through_the_sum(
    %w: tensor<8x16xf32> {tpc.param = "w", dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %dy0: tensor<1x4x16xf32>, %dy1: tensor<1x4x16xf32>,
    %ids0: tensor<1x4xi64>, %ids1: tensor<1x4xi64>)
    -> (tensor<8x16xf32> {tpc.grad = "w"}) {
  // CHECK: %[[G0:.*]] = tpc.embedding_grad %arg1[%arg3] {dist.vocab_axes = ["tp"]} : tensor<1x4x16xf32>, tensor<1x4xi64> -> tensor<4x16xf32>
  // CHECK-NEXT: %[[G1:.*]] = tpc.embedding_grad %arg2[%arg4] {dist.vocab_axes = ["tp"]} : tensor<1x4x16xf32>, tensor<1x4xi64> -> tensor<4x16xf32>
  // CHECK-NEXT: %[[SUM:.*]] = tpc.add %[[G0]], %[[G1]] : tensor<4x16xf32>, tensor<4x16xf32>
  // CHECK-NEXT: return %[[SUM]]
  %g0 = tpc.embedding_grad %dy0[%ids0] : tensor<1x4x16xf32>, tensor<1x4xi64> -> tensor<8x16xf32>
  %g1 = tpc.embedding_grad %dy1[%ids1] : tensor<1x4x16xf32>, tensor<1x4xi64> -> tensor<8x16xf32>
  %sum = tpc.add %g0, %g1 : tensor<8x16xf32>, tensor<8x16xf32>
  return %sum : tensor<8x16xf32>
}

// -----

// A row-parallel linear's output gradient is a partial sum over tp until
// the all-reduce its weight gradient needs; the bias gradient (sum_to),
// linear in it, reads the reduced value too: one all-reduce, and the bias
// gradient is whole, with no reduction of its own (before 2026-12-05 it
// summed the partial value and was all-reduced itself).
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @bias_grad_reads_the_reduced_dy
func.func @bias_grad_reads_the_reduced_dy(
    %h: tensor<4x8x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [], [tp]]>},
    %w: tensor<32x16xf32> {tpc.param = "w", dist.sharding = #dist.sharding<@mesh, [[tp], []]>})
    -> (tensor<32x16xf32>, tensor<16xf32>) {
  // CHECK: %[[P:.*]] = tpc.linear %arg0, %arg1 {{.*}}: tensor<4x8x16xf32>, tensor<16x16xf32>
  // CHECK-NEXT: %[[DY:.*]] = dist.all_reduce %[[P]] on @mesh axes [tp] : tensor<4x8x16xf32>
  // CHECK-NEXT: %[[DW:.*]] = tpc.linear_weight_grad %arg0, %[[DY]] {{.*}} -> tensor<16x16xf32>
  // CHECK-NEXT: %[[DB:.*]] = tpc.sum_to %[[DY]] {{.*}} -> tensor<16xf32>
  // CHECK-NOT: dist.all_reduce
  // CHECK: return %{{.*}}, %[[DB]]
  %dy = tpc.linear %h, %w layout in_out : tensor<4x8x32xf32>, tensor<32x16xf32>
  %dw = tpc.linear_weight_grad %h, %dy layout in_out : tensor<4x8x32xf32>, tensor<4x8x16xf32> -> tensor<32x16xf32>
  %db = tpc.sum_to %dy : tensor<4x8x16xf32> -> tensor<16xf32>
  return %dw, %db : tensor<32x16xf32>, tensor<16xf32>
}
