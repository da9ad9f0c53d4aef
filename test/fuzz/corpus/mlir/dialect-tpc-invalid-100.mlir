func.func @transpose_out_of_range(%x: tensor<4x32x64xf32>) {
  %0 = tpc.transpose %x [0, -1, 3] : tensor<4x32x64xf32>
  return
}
