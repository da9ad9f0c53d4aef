func.func @linear_weight_rank(%x: tensor<4x64xf32>, %w: tensor<64xf32>) {
  %0 = tpc.linear %x, %w layout in_out : tensor<4x64xf32>, tensor<64xf32>
  return
}
