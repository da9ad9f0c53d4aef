func.func @linear_out_in_features(%x: tensor<4x64xf32>, %w: tensor<64x256xf32>) {
  %0 = tpc.linear %x, %w layout out_in : tensor<4x64xf32>, tensor<64x256xf32>
  return
}
