dist.mesh @mesh axes [tp = 2]
func.func @conflict(%x: tensor<4x16xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                    %w: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>}) -> tensor<4x8xf32> {
  %y = tpc.linear %x, %w layout in_out : tensor<4x16xf32>, tensor<16x8xf32>
  return %y : tensor<4x8xf32>
}
