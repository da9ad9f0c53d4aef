// tpc-lower-to-rt of a partitioned module (what dist-partition leaves): one
// rank's program on the module's mesh. Arguments keep their global layout in
// dist.sharding (the buffers are local blocks), collectives become kernels
// 44-48 with the mesh axes as indices, and the dropout ops' layouts become
// kernel splits with first indices counted in global elements.
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt | FileCheck %s
// Every collective's buffers get an arena offset like any kernel's.
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt \
// RUN:   --rt-plan-memory=check | FileCheck %s --check-prefix=PLAN

// The dist.mesh moves onto the program (nothing else names it).
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK-NOT: dist.
// CHECK: rt.program @forward mesh [dp = 2, tp = 2] {
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(
    // Replicated: no splits, the buffer is the whole tensor.
    // CHECK-NEXT: %[[WTE:.*]] = rt.param "wte" hf_shape [16, 8] init normal : memref<16x8xf32>
    %wte: tensor<16x8xf32> {tpc.param = "wte"},
    // Column-parallel [8, 8] over tp: the view and hf_shape are global.
    // CHECK-NEXT: %[[W1:.*]] = rt.param "w1" hf_shape [8, 8] splits {{\[}}[], [tp]] init normal : memref<8x4xf32>
    %w1: tensor<8x4xf32> {tpc.param = "w1",
                          dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
    // Row-parallel, with a checkpoint shape of its own.
    // CHECK-NEXT: %[[W2:.*]] = rt.param "w2" hf_shape [64] splits {{\[}}[tp], []] init normal : memref<4x8xf32>
    %w2: tensor<4x8xf32> {tpc.param = "w2", tpc.hf_shape = array<i64: 64>,
                          dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    // A sharding that splits nothing is no split. (A bias: it is added to
    // the all-reduced row-parallel linear.)
    // CHECK-NEXT: %[[B:.*]] = rt.param "b" hf_shape [8] init zeros : memref<8xf32>
    %b: tensor<8xf32> {tpc.param = "b",
                       dist.sharding = #dist.sharding<@mesh, [[]]>},
    // The batch over dp: every rank reads the [4, 4] tensor.
    // CHECK-NEXT: %[[IDS:.*]] = rt.input "input_ids" bound 16 splits {{\[}}[dp], []] : memref<2x4xi64>
    %ids: tensor<2x4xi64> {tpc.input = "input_ids",
                           dist.sharding = #dist.sharding<@mesh, [[dp], []]>})
    -> (tensor<4x4x8xf32> {tpc.output = "y"},
        tensor<2x4x8xf32> {tpc.output = "reduced"}) attributes {dist.partitioned} {
  // CHECK-NEXT: %[[X:.*]] = rt.alloc : memref<2x4x8xf32>
  // CHECK-NEXT: rt.kernel embedding(%[[WTE]], %[[IDS]]) -> (%[[X]])
  %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  // CHECK: rt.kernel linear(%[[X]], %[[W1]]) -> (%[[H:.*]]) :
  %h = tpc.linear %x, %w1 layout in_out : tensor<2x4x8xf32>, tensor<8x4xf32>
  // The dropout's global [4, 4, 8] is split over dp and tp.
  // CHECK: rt.kernel dropout(%[[H]]) -> (%[[D:.*]]) ints [1] floats [1.000000e-01] splits {{\[}}[dp], [], [tp]] : memref<2x4x4xf32> -> memref<2x4x4xf32>
  %d = tpc.dropout %h rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [], [tp]]>}
      : tensor<2x4x4xf32>
  // A partial sum over tp.
  // CHECK: rt.kernel linear(%[[D]], %[[W2]]) -> (%[[P:.*]]) :
  %p = tpc.linear %d, %w2 layout in_out : tensor<2x4x4xf32>, tensor<4x8xf32>
  // Axis tp is mesh axis 1, dp axis 0.
  // CHECK: %[[R:.*]] = rt.alloc : memref<2x4x8xf32>
  // CHECK-NEXT: rt.kernel all_reduce(%[[P]]) -> (%[[R]]) ints [1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
  %r = dist.all_reduce %p on @mesh axes [tp] : tensor<2x4x8xf32>
  // CHECK: rt.kernel add(%[[R]], %[[B]]) -> (%[[RB:.*]]) :
  %rb = tpc.add %r, %b : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: rt.kernel reduce_scatter(%[[P]]) -> (%[[S:.*]]) ints [1, 1] : memref<2x4x8xf32> -> memref<2x2x8xf32>
  %s = dist.reduce_scatter %p on @mesh axes [tp] dim 1
      : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
  // reduce max is flag 1.
  // CHECK: rt.kernel all_reduce(%[[S]]) -> (%{{.*}}) ints [1] flags 1 : memref<2x2x8xf32> -> memref<2x2x8xf32>
  %m = dist.all_reduce %s on @mesh axes [tp] reduce max : tensor<2x2x8xf32>
  // CHECK: rt.kernel all_to_all(%[[S]]) -> (%{{.*}}) ints [2, 1, 1] : memref<2x2x8xf32> -> memref<2x4x4xf32>
  %t = dist.all_to_all %s on @mesh axes [tp] split 2 concat 1
      : tensor<2x2x8xf32> -> tensor<2x4x4xf32>
  // CHECK: rt.kernel shard_slice(%[[RB]]) -> (%{{.*}}) ints [2, 1] : memref<2x4x8xf32> -> memref<2x4x4xf32>
  %u = dist.shard_slice %rb on @mesh axes [tp] dim 2
      : tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  // Two axes, major first: a group of all four ranks.
  // CHECK: rt.kernel all_gather(%[[RB]]) -> (%[[G:.*]]) ints [0, 1, 0] : memref<2x4x8xf32> -> memref<8x4x8xf32>
  %g = dist.all_gather %rb on @mesh axes [tp, dp] dim 0
      : tensor<2x4x8xf32> -> tensor<8x4x8xf32>
  // CHECK: rt.kernel all_gather(%[[RB]]) -> (%[[Y:.*]]) ints [0, 0] : memref<2x4x8xf32> -> memref<4x4x8xf32>
  %y = dist.all_gather %rb on @mesh axes [dp] dim 0
      : tensor<2x4x8xf32> -> tensor<4x4x8xf32>
  // Outputs produced by collectives are whole.
  // CHECK: rt.output "y" %[[Y]] : memref<4x4x8xf32>
  // CHECK-NEXT: rt.output "reduced" %[[RB]] : memref<2x4x8xf32>
  return %y, %rb : tensor<4x4x8xf32>, tensor<2x4x8xf32>
}

// rt-plan-memory=check found no two live buffers overlapping; every alloc,
// the collectives' too, has its offset.
// PLAN-LABEL: module attributes {rt.arena_bytes =
// PLAN: rt.program @forward mesh [dp = 2, tp = 2] {
// PLAN-NOT: rt.alloc :
// PLAN: rt.kernel all_reduce
// PLAN-NOT: rt.alloc :
// PLAN: rt.kernel reduce_scatter
// PLAN-NOT: rt.alloc :
// PLAN: rt.kernel all_reduce
// PLAN-NOT: rt.alloc :
// PLAN: rt.kernel all_to_all
// PLAN-NOT: rt.alloc :
// PLAN: rt.kernel shard_slice
// PLAN-NOT: rt.alloc :
// PLAN: rt.kernel all_gather
// PLAN-NOT: rt.alloc :
// PLAN: rt.output "y"

// -----

// The dropout draws of a training step: the first index of block n is n
// times one block's GLOBAL elements, whatever this rank's block is.
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK: rt.program @forward mesh [dp = 2, tp = 2] {
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(
    // CHECK-NEXT: %[[Q:.*]] = rt.input "q" splits {{\[}}[dp], [tp], [], []] : memref<2x2x4x8xf32>
    %q: tensor<2x2x4x8xf32> {tpc.input = "q",
        dist.sharding = #dist.sharding<@mesh, [[dp], [tp], [], []]>})
    -> (tensor<4x4x8xf32> {tpc.output = "o"}) attributes {dist.partitioned} {
  %c1 = arith.constant dense<1> : tensor<i64>
  %c3 = arith.constant dense<3> : tensor<i64>
  // The mask's global [4, 4, 8] has 128 elements: block 3 starts at 384
  // (its local [2, 4, 4] alone would give 96).
  // CHECK: rt.kernel dropout_mask() -> (%{{.*}}) ints [7, 384] floats [1.000000e-01] splits {{\[}}[dp], [], [tp]] :  -> memref<2x4x4xi8>
  %mask = tpc.dropout_mask rate 1.000000e-01 stream 7 block %c3
      {dist.sharding = #dist.sharding<@mesh, [[dp], [], [tp]]>}
      : tensor<2x4x4xi8>
  // Probabilities [b, h, sq, sk]: b, h and sq split as the result's
  // dimensions 0-2, sk whole: 4 * 4 * 4 * 4 = 256 per block.
  // CHECK: rt.kernel attention(%[[Q]], %[[Q]], %[[Q]]) -> (%[[O:.*]]) ints [5, 256] floats [5.000000e-01, 1.000000e-01] flags 1 splits {{\[}}[dp], [tp], [], []] :
  %o = tpc.attention %q, %q, %q causal scale 5.000000e-01 dropout 1.000000e-01
      stream 5 block %c1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [tp], [], []]>}
      : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
  // CHECK: rt.kernel attention_grad(%[[O]], %[[Q]], %[[Q]], %[[Q]]) -> ({{.*}}) ints [5, 256] floats [5.000000e-01, 1.000000e-01] flags 1 splits {{\[}}[dp], [tp], [], []] :
  %dq, %dk, %dv = tpc.attention_grad %o, %q, %q, %q causal scale 5.000000e-01
      dropout 1.000000e-01 stream 5 block %c1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [tp], [], []]>}
      : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>,
        tensor<2x2x4x8xf32>
  // A replicated draw has no splits: every rank draws the whole mask.
  // CHECK: rt.kernel dropout_mask() -> (%{{.*}}) ints [8, 8] floats [1.000000e-01] :  -> memref<8xi8>
  %whole = tpc.dropout_mask rate 1.000000e-01 stream 8 block %c1
      {dist.sharding = #dist.sharding<@mesh, [[]]>} : tensor<8xi8>
  %dq2 = tpc.add %dq, %dk : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
  %f = tpc.reshape %dq2 : tensor<2x2x4x8xf32> -> tensor<2x8x8xf32>
  %g = dist.all_gather %f on @mesh axes [dp] dim 0
      : tensor<2x8x8xf32> -> tensor<4x8x8xf32>
  %o2 = tpc.slice %g dim 1 [0 : 4] : tensor<4x8x8xf32>
  return %o2 : tensor<4x4x8xf32>
}

// -----

// A training step's optimizer state has its parameter's layout; the
// gradient binds the parameter's local block. The dist.mesh stays while
// another function still names it.
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK: dist.mesh @mesh axes [dp = 2, tp = 2]
// CHECK: func.func @other
// CHECK: rt.program @forward mesh [dp = 2, tp = 2] {
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dist.all_reduce %x on @mesh axes [dp] : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @forward(
    // CHECK-NEXT: %[[W:.*]] = rt.param "w" hf_shape [8, 4] splits {{\[}}[tp], []] init normal : memref<4x4xf32>
    %w: tensor<4x4xf32> {tpc.param = "w",
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    // CHECK-NEXT: %[[M:.*]] = rt.state "momentum" of "w" : memref<4x4xf32>
    %m: tensor<4x4xf32> {tpc.state = {name = "momentum", param = "w"},
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<4x4xf32> {tpc.grad = "w"},
        tensor<4x4xf32> {tpc.update = "w"},
        tensor<4x4xf32> {tpc.state = {name = "momentum", param = "w"}}) attributes {dist.partitioned} {
  // CHECK: rt.kernel all_reduce(%[[W]]) -> (%[[DW:.*]]) ints [0] :
  %dw = dist.all_reduce %w on @mesh axes [dp] : tensor<4x4xf32>
  // CHECK: rt.kernel sgd_update(%[[W]], %[[DW]], %[[M]], %{{.*}}) -> (%[[W]], %[[M]])
  %nw, %nm = tpc.sgd_update %w, %dw momentum_buffer %m lr %lr
      momentum 9.000000e-01 weight_decay 0.000000e+00
      : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK: rt.grad "w" %[[DW]] : memref<4x4xf32>
  return %dw, %nw, %nm : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Token ids are global: a vocabulary-parallel table bounds them by its
// global row count (16), not by this rank's 8 rows.
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK: rt.param "wte" hf_shape [16, 8] splits {{\[}}[tp], []] init normal : memref<8x8xf32>
// CHECK-NEXT: rt.input "input_ids" bound 16 : memref<2x4xi64>
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(
    %wte: tensor<8x8xf32> {tpc.param = "wte",
                           dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %ids: tensor<2x4xi64> {tpc.input = "input_ids"})
    -> (tensor<2x4x8xf32> {tpc.output = "x"}) attributes {dist.partitioned} {
  %x = tpc.embedding %wte[%ids] : tensor<8x8xf32>, tensor<2x4xi64>
  %r = dist.all_reduce %x on @mesh axes [tp] : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// dist-partition adds a row-parallel linear's bias after the reduction: it
// is still a bias (init zeros), wherever the sum is reduced. An add to
// anything else is no bias.
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK: rt.param "b1" hf_shape [8] init zeros : memref<8xf32>
// CHECK-NEXT: rt.param "b2" hf_shape [8] init zeros : memref<8xf32>
// CHECK-NEXT: rt.param "c" hf_shape [8] init normal : memref<8xf32>
dist.mesh @mesh axes [tp = 2]
func.func @forward(
    %w: tensor<2x8xf32> {tpc.param = "w",
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %b1: tensor<8xf32> {tpc.param = "b1"}, %b2: tensor<8xf32> {tpc.param = "b2"},
    %c: tensor<8xf32> {tpc.param = "c"},
    %x: tensor<2x4x2xf32> {tpc.input = "x",
                           dist.sharding = #dist.sharding<@mesh, [[], [], [tp]]>})
    -> (tensor<2x4x8xf32> {tpc.output = "y"},
        tensor<2x4x8xf32> {tpc.output = "z"}) attributes {dist.partitioned} {
  %p = tpc.linear %x, %w layout in_out : tensor<2x4x2xf32>, tensor<2x8xf32>
  %r = dist.all_reduce %p on @mesh axes [tp] : tensor<2x4x8xf32>
  %y = tpc.add %r, %b1 : tensor<2x4x8xf32>, tensor<8xf32>
  %s = dist.reduce_scatter %p on @mesh axes [tp] dim 1
      : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
  %sb = tpc.add %s, %b2 : tensor<2x2x8xf32>, tensor<8xf32>
  %g = dist.all_gather %sb on @mesh axes [tp] dim 1
      : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
  %z = tpc.add %g, %c : tensor<2x4x8xf32>, tensor<8xf32>
  return %y, %z : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A microbatch of replicated inputs, of which each dp rank takes its rows:
// the bounds look through the slices and shard_slices.
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK: rt.input "input_ids" bound 16 : memref<4x4xi64>
// CHECK-NEXT: rt.input "labels" bound 16 : memref<4x4xi64>
dist.mesh @mesh axes [dp = 2]
func.func @forward(%wte: tensor<16x8xf32> {tpc.param = "wte"},
                   %ids: tensor<4x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<4x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) attributes {dist.partitioned} {
  %mbids = tensor.extract_slice %ids[2, 0] [2, 4] [1, 1]
      : tensor<4x4xi64> to tensor<2x4xi64>
  %mblabels = tensor.extract_slice %labels[2, 0] [2, 4] [1, 1]
      : tensor<4x4xi64> to tensor<2x4xi64>
  %rids = dist.shard_slice %mbids on @mesh axes [dp] dim 0
      : tensor<2x4xi64> -> tensor<1x4xi64>
  %rlabels = dist.shard_slice %mblabels on @mesh axes [dp] dim 0
      : tensor<2x4xi64> -> tensor<1x4xi64>
  %x = tpc.embedding %wte[%rids] : tensor<16x8xf32>, tensor<1x4xi64>
  %logits = tpc.linear %x, %wte layout out_in
      : tensor<1x4x8xf32>, tensor<16x8xf32>
  %sum, %count = tpc.cross_entropy %logits, %rlabels
      : tensor<1x4x16xf32>, tensor<1x4xi64>
  %gsum = dist.all_reduce %sum on @mesh axes [dp] : tensor<f32>
  %gcount = dist.all_reduce %count on @mesh axes [dp] : tensor<i64>
  %loss = tpc.loss_mean %gsum, %gcount
  return %loss : tensor<f32>
}
