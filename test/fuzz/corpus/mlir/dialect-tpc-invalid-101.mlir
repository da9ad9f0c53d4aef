func.func @transpose_int(%x: tensor<4x32xi64>) {
  %0 = tpc.transpose %x [1, 0] : tensor<4x32xi64>
  return
}
