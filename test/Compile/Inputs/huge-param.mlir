func.func @forward(%w: tensor<1152921504606846976xf32> {tpc.param = "w"},
                   %v: tensor<1152921504606846976xf32> {tpc.param = "v"},
                   %x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}) {
  %y = tpc.silu %x : tensor<2xf32>
  return %y : tensor<2xf32>
}
