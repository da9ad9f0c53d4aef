func.func @rms_norm_int_weight(%x: tensor<4x64xf32>, %g: tensor<64xi64>) {
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<4x64xf32>, tensor<64xi64>
  return
}
