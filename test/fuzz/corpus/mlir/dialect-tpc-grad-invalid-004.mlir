func.func @linear_input_grad_element(%dy: tensor<4x8xbf16>, %w: tensor<16x8xf32>) {
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x8xbf16>, tensor<16x8xf32>
  return
}
