// dist-propagate: each op's decision from its rule and its operands'
// layouts. Annotated arguments are kept; a split reduction factor makes a
// partial sum; a partial sum flows through what is linear in it and is
// reduced before what is not.
// RUN: tpc-opt %s --dist-propagate -split-input-file | FileCheck %s

dist.mesh @mesh axes [dp = 2, tp = 2]
// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<4x8x16xf32>,
               %w1: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
               %w2: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
               %b2: tensor<16xf32>) -> tensor<4x8x16xf32> {
  // Column-parallel: the output features are split.
  // CHECK: tpc.linear {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [], [tp]]>]
  %h = tpc.linear %x, %w1 layout in_out : tensor<4x8x16xf32>, tensor<16x32xf32>
  // CHECK: tpc.gelu {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [], [tp]]>]
  %a = tpc.gelu %h tanh : tensor<4x8x32xf32>
  // Row-parallel: the contracted features are split, the result is partial.
  // CHECK: tpc.linear {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [], []], partial [tp]>]
  %y = tpc.linear %a, %w2 layout in_out : tensor<4x8x32xf32>, tensor<32x16xf32>
  // A partial sum meets a whole bias: it must be reduced first.
  // CHECK: tpc.add {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], [], []]>, #dist.sharding<@mesh, {{\[}}[]]>], dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [], []]>]
  %z = tpc.add %y, %b2 : tensor<4x8x16xf32>, tensor<16xf32>
  return %z : tensor<4x8x16xf32>
}

// -----

dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @partials
func.func @partials(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
                    %b: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
                    %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // CHECK: tpc.linear {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], []], partial [tp]>]
  %p = tpc.linear %a, %w layout in_out : tensor<8x16xf32>, tensor<16x4xf32>
  // CHECK: tpc.linear {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], []], partial [tp]>]
  %q = tpc.linear %b, %w layout in_out : tensor<8x16xf32>, tensor<16x4xf32>
  // Two partial sums over the same axes add without a reduction.
  // CHECK: tpc.add {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], []], partial [tp]>, #dist.sharding<@mesh, {{\[}}[], []], partial [tp]>], dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], []], partial [tp]>]
  %s = tpc.add %p, %q : tensor<8x4xf32>, tensor<8x4xf32>
  // Dropout is linear: the partial sum passes.
  // CHECK: tpc.dropout {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], []], partial [tp]>]
  %d = tpc.dropout %s rate 0.1 stream 0 : tensor<8x4xf32>
  // gelu is not: reduced before it.
  // CHECK: tpc.gelu {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], []]>]
  %g = tpc.gelu %d tanh : tensor<8x4xf32>
  // CHECK: return {dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], []]>]}
  return %g : tensor<8x4xf32>
}

// -----

// A weight gradient keeps its weight's split and gathers an input split
// along the contracted sequence (sequence parallelism), rather than the
// reverse.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @weight_grad
func.func @weight_grad(%x: tensor<2x8x16xf32>, %dy: tensor<2x8x32xf32>) -> tensor<16x32xf32> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x8x16xf32>
  %dys = dist.shard %dy to <@mesh, [[], [], [tp]]> : tensor<2x8x32xf32>
  // Derived (not annotated) values, as in a real backward.
  %xd = tpc.gelu %xs tanh : tensor<2x8x16xf32>
  %dyd = tpc.gelu %dys tanh : tensor<2x8x32xf32>
  // CHECK: tpc.linear_weight_grad {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], [], []]>, #dist.sharding<@mesh, {{\[}}[], [], [tp]]>], dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [tp]]>]
  %dw = tpc.linear_weight_grad %xd, %dyd layout in_out : tensor<2x8x16xf32>, tensor<2x8x32xf32> -> tensor<16x32xf32>
  return %dw : tensor<16x32xf32>
}

// -----

// A dropout mask takes the layout its reader needs instead of being drawn
// whole and sliced.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @mask
func.func @mask(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %c = arith.constant dense<0> : tensor<i64>
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x8x16xf32>
  // CHECK: tpc.dropout_mask {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [tp], []]>]
  %m = tpc.dropout_mask rate 0.1 stream 0 block %c : tensor<2x8x16xi8>
  %y = tpc.apply_mask %xs, %m rate 0.1 : tensor<2x8x16xf32>, tensor<2x8x16xi8>
  return %y : tensor<2x8x16xf32>
}

// -----

// Partial scalars (microbatch loss sums) stay partial through their add:
// only whole scalars (a dropout block) say nothing about a layout.
dist.mesh @mesh axes [dp = 2]
// CHECK-LABEL: func.func @loss_sums
func.func @loss_sums(%l0: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[dp], [], []]>},
                     %l1: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[dp], [], []]>},
                     %y: tensor<2x8xi64> {dist.sharding = #dist.sharding<@mesh, [[dp], []]>}) -> tensor<f32> {
  %s0, %c0 = tpc.cross_entropy %l0, %y : tensor<2x8x16xf32>, tensor<2x8xi64>
  %s1, %c1 = tpc.cross_entropy %l1, %y : tensor<2x8x16xf32>, tensor<2x8xi64>
  // CHECK: tpc.add {{.*}}dist.result_shardings = [#dist.sharding<@mesh, [], partial [dp]>]
  %s = tpc.add %s0, %s1 : tensor<f32>, tensor<f32>
  // CHECK: tpc.loss_mean {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, []>, #dist.sharding<@mesh, []>]
  %m = tpc.loss_mean %s, %c0
  return %m : tensor<f32>
}

// -----

// A parameter's split wins over an activation's, whatever their sizes: the
// sequence-split input (32x64x16, larger than the weight) is gathered, the
// column-parallel weight, cast to the model's precision, keeps its split.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @parameter_wins
func.func @parameter_wins(%x: tensor<32x64x16xbf16>,
                          %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>, tpc.param = "fc.weight"}) -> tensor<32x64x32xbf16> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<32x64x16xbf16>
  %xn = tpc.gelu %xs tanh : tensor<32x64x16xbf16>
  // CHECK: tpc.cast {{.*}}dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [tp]]>]
  %wb = tpc.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  // CHECK: tpc.linear {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], [], []]>, #dist.sharding<@mesh, {{\[}}[], [tp]]>], dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [], [tp]]>]
  %y = tpc.linear %xn, %wb layout in_out : tensor<32x64x16xbf16>, tensor<16x32xbf16>
  return %y : tensor<32x64x32xbf16>
}

// -----

// An annotated activation (dist.shard) gives way to a parameter too: held
// alike they would be an error, but a parameter is held firmer.
dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @annotated_activation
func.func @annotated_activation(%x: tensor<2x8x16xf32>,
                                %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>, tpc.param = "fc.weight"}) -> tensor<2x8x32xf32> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x8x16xf32>
  // CHECK: tpc.linear {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], [], []]>, #dist.sharding<@mesh, {{\[}}[], [tp]]>], dist.result_shardings = [#dist.sharding<@mesh, {{\[}}[], [], [tp]]>]
  %y = tpc.linear %xs, %w layout in_out : tensor<2x8x16xf32>, tensor<16x32xf32>
  return %y : tensor<2x8x32xf32>
}
