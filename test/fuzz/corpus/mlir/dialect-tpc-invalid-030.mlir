func.func @layer_norm_int(%x: tensor<4x64xi32>, %g: tensor<64xf32>,
                          %b: tensor<64xf32>) {
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<4x64xi32>, tensor<64xf32>, tensor<64xf32>
  return
}
