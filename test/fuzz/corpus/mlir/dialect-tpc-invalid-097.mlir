func.func @reshape_dynamic(%x: tensor<4x64xf32>) {
  %0 = tpc.reshape %x : tensor<4x64xf32> -> tensor<?x64xf32>
  return
}
