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
