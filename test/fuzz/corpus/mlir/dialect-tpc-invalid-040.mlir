func.func @gelu_result_type(%x: tensor<4x64xf32>) {
  %0 = "tpc.gelu"(%x) <{approximation = #tpc<gelu tanh>}>
      : (tensor<4x64xf32>) -> tensor<64x4xf32>
  return
}
