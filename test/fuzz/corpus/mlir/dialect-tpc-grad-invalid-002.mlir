func.func @linear_input_grad_weight_rank(%dy: tensor<4x8xf32>, %w: tensor<8xf32>) {
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x8xf32>, tensor<8xf32>
  return
}
