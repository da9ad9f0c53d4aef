func.func @layer_norm_epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>,
                              %b: tensor<64xf32>) {
  %0 = tpc.layer_norm %x, %g, %b eps 0.0
      : tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}
