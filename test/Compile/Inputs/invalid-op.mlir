func.func @forward(%x: tensor<2x3xf32> {tpc.input = "x"})
    -> (tensor<3x2xf32> {tpc.output = "y"}) {
  %y = tpc.reshape %x : tensor<2x3xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
