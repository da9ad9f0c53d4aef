func.func @add_element_type(%x: tensor<4x64xf32>, %y: tensor<4x64xbf16>) {
  %0 = tpc.add %x, %y : tensor<4x64xf32>, tensor<4x64xbf16>
  return
}
