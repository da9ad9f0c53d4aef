func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<64x256xf32>) {
  %0 = tpc.linear %x, %w layout in_out : tensor<f32>, tensor<64x256xf32>
  return
}
