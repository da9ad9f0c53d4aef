func.func @add_result_type(%x: tensor<4x64xf32>, %y: tensor<64xf32>) {
  %0 = "tpc.add"(%x, %y) : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return
}
