func.func @rms_norm_input_grad_eps(%dy: tensor<4x64xf32>, %w: tensor<64xf32>) {
  %0 = tpc.rms_norm_input_grad %dy, %dy, %w eps -1.0 : tensor<4x64xf32>, tensor<64xf32>
  return
}
