func.func @forward(%t: tensor<16x8xf32> {tpc.param = "t"},
                   %ids: tensor<2xi32> {tpc.input = "ids"})
    -> (tensor<2x8xf32> {tpc.output = "y"}) {
  %y = tpc.embedding %t[%ids] : tensor<16x8xf32>, tensor<2xi32>
  return %y : tensor<2x8xf32>
}
