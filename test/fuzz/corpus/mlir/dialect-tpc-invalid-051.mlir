func.func @softmax_f64(%x: tensor<4x32xf64>) {
  %0 = tpc.softmax %x : tensor<4x32xf64>
  return
}
