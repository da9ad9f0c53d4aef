func.func @layer_norm_input_grad_types(%dy: tensor<4x64xbf16>, %x: tensor<4x64xf32>, %w: tensor<64xf32>) {
  %0 = "tpc.layer_norm_input_grad"(%dy, %x, %w) {epsilon = 1.0e-5 : f64} : (tensor<4x64xbf16>, tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}
