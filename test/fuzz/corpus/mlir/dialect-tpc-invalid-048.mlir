func.func @softmax_scalar(%x: tensor<f32>) {
  %0 = tpc.softmax %x : tensor<f32>
  return
}
