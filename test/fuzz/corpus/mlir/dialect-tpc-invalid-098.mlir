func.func @transpose_duplicate(%x: tensor<4x32x64xf32>) {
  %0 = tpc.transpose %x [0, 0, 1] : tensor<4x32x64xf32>
  return
}
