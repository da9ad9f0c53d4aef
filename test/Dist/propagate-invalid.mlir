// dist-propagate refuses what annotations make impossible, at the op.
// RUN: tpc-opt %s --dist-propagate -split-input-file -verify-diagnostics

dist.mesh @mesh axes [tp = 2]
func.func @conflict(%x: tensor<4x16xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                    %w: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>}) -> tensor<4x8xf32> {
  // expected-error @+1 {{conflicting shardings of operands 0 and 1: [[tp], []] and [[], [tp]] cannot both hold (both are annotated)}}
  %y = tpc.linear %x, %w layout in_out : tensor<4x16xf32>, tensor<16x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

dist.mesh @mesh axes [tp = 4]
// The dialect verifies argument shardings before any pass runs.
// expected-error @+1 {{dimension 0 of 'tensor<6x16xf32>' (size 6) is not divisible by 4, the product of the sizes of its mesh axes}}
func.func @indivisible(%x: tensor<6x16xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>}) -> tensor<6x16xf32> {
  return %x : tensor<6x16xf32>
}

// -----

// expected-error @+1 {{expected exactly one dist.mesh in the module, found 0}}
module {
  func.func @nomesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// A parameter is never gathered as a side effect: a linear with a bias needs
// its contracted dim whole (dist-annotate-megatron splits the bias off).
dist.mesh @mesh axes [tp = 2]
func.func @gathered_parameter(%x: tensor<4x16xf32>,
                              %w: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>, tpc.param = "proj.weight"},
                              %b: tensor<8xf32> {tpc.param = "proj.bias"}) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand 1 would gather parameter 'proj.weight' from [[tp], []] to [[], []] (a parameter's split is kept; gather-parameters allows this)}}
  %y = tpc.linear %x, %w, %b layout in_out : tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
