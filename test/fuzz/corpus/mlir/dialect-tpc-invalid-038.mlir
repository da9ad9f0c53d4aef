func.func @gelu_int(%x: tensor<4x64xi32>) {
  %0 = tpc.gelu %x erf : tensor<4x64xi32>
  return
}
