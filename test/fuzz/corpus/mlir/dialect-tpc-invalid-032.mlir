func.func @rms_norm_weight_shape(%x: tensor<4x32x64xf32>, %g: tensor<32xf32>) {
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<4x32x64xf32>, tensor<32xf32>
  return
}
