func.func @reshape_count(%x: tensor<4x32x64xf32>) {
  %0 = tpc.reshape %x : tensor<4x32x64xf32> -> tensor<4x32x60xf32>
  return
}
