func.func @linear_in_out_features(%x: tensor<4x32xf32>, %w: tensor<64x256xf32>) {
  %0 = tpc.linear %x, %w layout in_out : tensor<4x32xf32>, tensor<64x256xf32>
  return
}
