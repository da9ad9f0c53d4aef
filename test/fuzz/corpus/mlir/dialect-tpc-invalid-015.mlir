func.func @linear_bad_layout(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) {
  %0 = tpc.linear %x, %w layout io : tensor<4x64xf32>, tensor<64x64xf32>
  return
}
