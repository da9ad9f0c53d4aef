func.func @cast_to_int(%x: tensor<4x64xf32>) {
  %0 = tpc.cast %x : tensor<4x64xf32> to tensor<4x64xi32>
  return
}
