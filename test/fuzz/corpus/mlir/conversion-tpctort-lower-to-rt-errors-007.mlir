func.func @forward(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}) {
  %y = arith.addf %x, %x : tensor<2xf32>
  return %y : tensor<2xf32>
}
