func.func @forward(%w: tensor<2xf32> {tpc.param = "w"}, %x: tensor<2xf32>)
    -> (tensor<2xf32> {tpc.output = "y"}) {
  %y = tpc.add %x, %w : tensor<2xf32>, tensor<2xf32>
  return %y : tensor<2xf32>
}
