// tpc-lower-to-rt of a padded parameter: a vocabulary of 15 rows split over
// tp = 2 is padded to 16; its argument carries the unpadded global view in
// dist.unpadded_shape. The rt.param gets view (15 rows) and padded (16 rows,
// twice its 8-row block).
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt -verify-diagnostics \
// RUN:   | FileCheck %s

// The hf_shape defaults to the unpadded view; the ids are bounded by the 15
// rows that exist.
// CHECK-LABEL: module attributes {rt.seed = 0 : i64} {
// CHECK: rt.program @forward mesh [dp = 2, tp = 2] {
// CHECK-NEXT: %[[WTE:.*]] = rt.param "wte" hf_shape [15, 8] view [15, 8] padded [16, 8] splits {{\[}}[tp], []] init normal : memref<8x8xf32>
// A state in its parameter's layout, padding included.
// CHECK-NEXT: rt.state "exp_avg" of "wte" : memref<8x8xf32>
// CHECK-NEXT: rt.input "input_ids" bound 15 splits {{\[}}[dp], []] : memref<2x4xi64>
// Padding to the global shape itself is no padding.
// CHECK-NEXT: rt.param "w" hf_shape [16, 8] splits {{\[}}[tp], []] init normal : memref<8x8xf32>
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(
    %wte: tensor<8x8xf32> {tpc.param = "wte",
                           dist.sharding = #dist.sharding<@mesh, [[tp], []]>,
                           dist.unpadded_shape = array<i64: 15, 8>},
    %m: tensor<8x8xf32> {tpc.state = {name = "exp_avg", param = "wte"},
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>,
                         dist.unpadded_shape = array<i64: 15, 8>},
    %ids: tensor<2x4xi64> {tpc.input = "input_ids",
                           dist.sharding = #dist.sharding<@mesh, [[dp], []]>},
    %w: tensor<8x8xf32> {tpc.param = "w",
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>,
                         dist.unpadded_shape = array<i64: 16, 8>})
    -> (tensor<4x4x8xf32> {tpc.output = "x"}) attributes {dist.partitioned} {
  %x = tpc.embedding %wte[%ids] : tensor<8x8xf32>, tensor<2x4xi64>
  %r = dist.all_reduce %x on @mesh axes [tp] : tensor<2x4x8xf32>
  %g = dist.all_gather %r on @mesh axes [dp] dim 0
      : tensor<2x4x8xf32> -> tensor<4x4x8xf32>
  return %g : tensor<4x4x8xf32>
}

// -----

// The unpadded view is no larger than the padded global shape.
dist.mesh @mesh axes [tp = 2]
// expected-error @+1 {{argument 0 ('wte'): 'dist.unpadded_shape' [17, 8] must have the rank of the global shape [16, 8] and be no larger in any dimension}}
func.func @forward(
    %wte: tensor<8x8xf32> {tpc.param = "wte",
                           dist.sharding = #dist.sharding<@mesh, [[tp], []]>,
                           dist.unpadded_shape = array<i64: 17, 8>},
    %ids: tensor<2x4xi64> {tpc.input = "input_ids"})
    -> (tensor<2x4x8xf32> {tpc.output = "x"}) attributes {dist.partitioned} {
  %x = tpc.embedding %wte[%ids] : tensor<8x8xf32>, tensor<2x4xi64>
  %r = dist.all_reduce %x on @mesh axes [tp] : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// Inputs are never padded.
dist.mesh @mesh axes [dp = 2]
// expected-error @+1 {{argument 0 ('input_ids'): 'dist.unpadded_shape' must be an array<i64> on a parameter or state, but is array<i64: 3, 4>}}
func.func @forward(
    %ids: tensor<2x4xi64> {tpc.input = "input_ids",
                           dist.sharding = #dist.sharding<@mesh, [[dp], []]>,
                           dist.unpadded_shape = array<i64: 3, 4>})
    -> (tensor<4x4xi64> {tpc.output = "ids"}) attributes {dist.partitioned} {
  %g = dist.all_gather %ids on @mesh axes [dp] dim 0
      : tensor<2x4xi64> -> tensor<4x4xi64>
  return %g : tensor<4x4xi64>
}

// -----

// A state padded otherwise than its parameter.
dist.mesh @mesh axes [tp = 2]
// expected-error @+1 {{argument 1 (a state of 'wte') must have its parameter's layout ('dist.sharding' and 'dist.unpadded_shape')}}
func.func @forward(
    %wte: tensor<8x8xf32> {tpc.param = "wte",
                           dist.sharding = #dist.sharding<@mesh, [[tp], []]>,
                           dist.unpadded_shape = array<i64: 15, 8>},
    %m: tensor<8x8xf32> {tpc.state = {name = "exp_avg", param = "wte"},
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %ids: tensor<2x4xi64> {tpc.input = "input_ids"})
    -> (tensor<2x4x8xf32> {tpc.output = "x"}) attributes {dist.partitioned} {
  %x = tpc.embedding %wte[%ids] : tensor<8x8xf32>, tensor<2x4xi64>
  %r = dist.all_reduce %x on @mesh axes [tp] : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}
