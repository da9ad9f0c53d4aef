func.func @linear_bias_element_type(%x: tensor<4x64xf32>, %w: tensor<256x64xf32>,
                                    %b: tensor<256xf16>) {
  %0 = tpc.linear %x, %w, %b layout out_in
      : tensor<4x64xf32>, tensor<256x64xf32>, tensor<256xf16>
  return
}
