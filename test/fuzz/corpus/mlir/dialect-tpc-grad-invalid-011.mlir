func.func @layer_norm_param_grad_shape(%dy: tensor<4x64xf32>) {
  %0:2 = tpc.layer_norm_param_grad %dy, %dy eps 1.0e-5 : tensor<4x64xf32> -> tensor<64xf32>, tensor<32xf32>
  return
}
