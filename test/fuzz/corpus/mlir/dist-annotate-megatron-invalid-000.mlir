dist.mesh @mesh axes [tp = 4]
func.func @ffn(%x: tensor<2x4x8xf32>, %w1: tensor<8x6xf32> {tpc.param = "fc"},
               %w2: tensor<6x8xf32> {tpc.param = "proj"}) -> tensor<2x4x8xf32> {
  %h = tpc.linear %x, %w1 layout in_out : tensor<2x4x8xf32>, tensor<8x6xf32>
  %a = tpc.gelu %h tanh : tensor<2x4x6xf32>
  %y = tpc.linear %a, %w2 layout in_out : tensor<2x4x6xf32>, tensor<6x8xf32>
  return %y : tensor<2x4x8xf32>
}
