func.func @linear_bias_shape(%x: tensor<4x64xf32>, %w: tensor<64x256xf32>,
                             %b: tensor<64xf32>) {
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x64xf32>, tensor<64x256xf32>, tensor<64xf32>
  return
}
