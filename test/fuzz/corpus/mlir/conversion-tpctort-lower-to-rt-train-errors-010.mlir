func.func @train_step(%x: tensor<4x8xi64> {tpc.input = "x"})
    -> (tensor<2x4xi64> {tpc.output = "y"}) {
  %y = tensor.extract_slice %x[2, 4] [2, 4] [1, 1] : tensor<4x8xi64> to tensor<2x4xi64>
  return %y : tensor<2x4xi64>
}
