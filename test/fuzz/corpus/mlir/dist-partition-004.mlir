dist.mesh @mesh axes [tp = 2]
func.func @multi_query(%dw: tensor<2x16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], [], []]>}) -> tensor<1x16x8xf32> {
  %g = tpc.sum_groups %dw dim 0 times 2 : tensor<2x16x8xf32>
  return %g : tensor<1x16x8xf32>
}
