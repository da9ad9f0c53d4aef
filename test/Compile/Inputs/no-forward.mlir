func.func @main(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}) {
  %y = tpc.silu %x : tensor<2xf32>
  return %y : tensor<2xf32>
}
