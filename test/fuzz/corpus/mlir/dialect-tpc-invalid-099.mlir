func.func @transpose_length(%x: tensor<4x32x64xf32>) {
  %0 = tpc.transpose %x [1, 0] : tensor<4x32x64xf32>
  return
}
