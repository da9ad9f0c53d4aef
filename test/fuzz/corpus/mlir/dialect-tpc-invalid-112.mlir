func.func @cast_shape(%x: tensor<4x32x64xf32>) {
  %0 = tpc.cast %x : tensor<4x32x64xf32> to tensor<4x32x32xbf16>
  return
}
