func.func @softmax_grad_scalar(%dy: tensor<f32>) {
  %0 = tpc.softmax_grad %dy, %dy : tensor<f32>
  return
}
