dist.mesh @mesh axes [tp = 2]
func.func @norm(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
                %b: tensor<16xf32>) -> tensor<f32> {
  %s = tpc.sum_squares %a, %b : tensor<8x16xf32>, tensor<16xf32>
  return %s : tensor<f32>
}
