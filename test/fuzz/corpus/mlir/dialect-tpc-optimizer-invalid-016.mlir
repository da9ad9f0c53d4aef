func.func @sgd_grad_type(%p: tensor<4xf32>, %g: tensor<8xf32>, %lr: tensor<f32>) {
  %0 = tpc.sgd_update %p, %g lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32>, tensor<8xf32>
  return
}
