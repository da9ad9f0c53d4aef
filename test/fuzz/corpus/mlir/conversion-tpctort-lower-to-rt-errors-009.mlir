func.func @forward(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}, tensor<2xf32>) {
  %y = tpc.silu %x : tensor<2xf32>
  return %y, %y : tensor<2xf32>, tensor<2xf32>
}
