func.func @layer_norm_input_grad_weight(%dy: tensor<4x64xf32>, %w: tensor<32xf32>) {
  %0 = tpc.layer_norm_input_grad %dy, %dy, %w eps 1.0e-5 : tensor<4x64xf32>, tensor<32xf32>
  return
}
