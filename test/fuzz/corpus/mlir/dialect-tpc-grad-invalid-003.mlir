func.func @linear_input_grad_out_dims(%dy: tensor<4x3x8xf32>, %w: tensor<16x4x8xf32>) {
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x3x8xf32>, tensor<16x4x8xf32>
  return
}
