func.func @layer_norm_result_type(%x: tensor<4x64xf32>, %g: tensor<64xf32>,
                                  %b: tensor<64xf32>) {
  %0 = "tpc.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f64}>
      : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x64xbf16>
  return
}
