func.func @linear_weight_element_type(%x: tensor<4x64xf32>,
                                      %w: tensor<64x256xbf16>) {
  %0 = tpc.linear %x, %w layout in_out : tensor<4x64xf32>, tensor<64x256xbf16>
  return
}
