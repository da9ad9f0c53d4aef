func.func @rms_norm_param_grad_shape(%dy: tensor<4x64xf32>) {
  %0 = tpc.rms_norm_param_grad %dy, %dy eps 1.0e-6 : tensor<4x64xf32> -> tensor<4x64xf32>
  return
}
