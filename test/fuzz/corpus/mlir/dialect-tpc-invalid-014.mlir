func.func @linear_int_input(%x: tensor<4x64xi32>, %w: tensor<64x64xf32>) {
  %0 = tpc.linear %x, %w layout in_out : tensor<4x64xi32>, tensor<64x64xf32>
  return
}
