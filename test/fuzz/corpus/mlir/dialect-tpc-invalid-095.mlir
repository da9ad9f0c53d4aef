func.func @reshape_element_type(%x: tensor<4x64xf32>) {
  %0 = tpc.reshape %x : tensor<4x64xf32> -> tensor<256xbf16>
  return
}
