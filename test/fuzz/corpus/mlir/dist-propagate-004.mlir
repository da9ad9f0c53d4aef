dist.mesh @mesh axes [dp = 2]
func.func @loss_sums(%l0: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[dp], [], []]>},
                     %l1: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[dp], [], []]>},
                     %y: tensor<2x8xi64> {dist.sharding = #dist.sharding<@mesh, [[dp], []]>}) -> tensor<f32> {
  %s0, %c0 = tpc.cross_entropy %l0, %y : tensor<2x8x16xf32>, tensor<2x8xi64>
  %s1, %c1 = tpc.cross_entropy %l1, %y : tensor<2x8x16xf32>, tensor<2x8xi64>
  %s = tpc.add %s0, %s1 : tensor<f32>, tensor<f32>
  %m = tpc.loss_mean %s, %c0
  return %m : tensor<f32>
}
