// dist-report-collectives: the collectives dist-partition inserted, per
// phase and layer of the op each serves, with the bytes one device moves,
// and the parameters all-gathered.
// RUN: tpc-opt %s --dist-propagate=gather-parameters=true --dist-partition --dist-report-collectives -o /dev/null | FileCheck %s --match-full-lines

dist.mesh @mesh axes [tp = 2]
// CHECK:      // collectives of @mlp: phase layer: kind [axes] x count, bytes per device
// A function that is no unrolled training step is all forward. Layer 0:
// the sequence shard is gathered before the column-parallel matmul (the
// annotated activation gives way to the parameter's split). Layer 1: a
// linear with a bias needs its contracted dim whole, so its input and (as
// gather-parameters allows) its weight are gathered, 256 bytes each; the
// weight is named.
// CHECK-NEXT: forward 0: all_gather [tp] x1, 512 bytes
// CHECK-NEXT: forward 1: all_gather [tp] x2, 512 bytes
// CHECK-NEXT: parameters all-gathered: 1 (proj.weight)
func.func @mlp(%x: tensor<2x4x16xf32>,
               %w1: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>, tpc.param = "fc.weight"},
               %w2: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>, tpc.param = "proj.weight"},
               %b2: tensor<8xf32> {tpc.param = "proj.bias"}) -> tensor<2x4x8xf32> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x4x16xf32>
  %h = tpc.linear %xs, %w1 layout in_out {tpc.layer = 0 : i64} : tensor<2x4x16xf32>, tensor<16x8xf32>
  %a = tpc.gelu %h tanh {tpc.layer = 0 : i64} : tensor<2x4x8xf32>
  %y = tpc.linear %a, %w2, %b2 layout in_out {tpc.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>
  return %y : tensor<2x4x8xf32>
}
