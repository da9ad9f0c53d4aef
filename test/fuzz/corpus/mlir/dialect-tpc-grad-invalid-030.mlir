func.func @cross_entropy_grad_labels(%lg: tensor<4x8x16xf32>, %lb: tensor<4x7xi64>, %ds: tensor<f32>) {
  %0 = tpc.cross_entropy_grad %lg, %lb, %ds : tensor<4x8x16xf32>, tensor<4x7xi64>
  return
}
