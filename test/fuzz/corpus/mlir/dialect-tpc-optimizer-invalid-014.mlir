func.func @sgd_momentum_without_buffer(%p: tensor<4xf32>, %lr: tensor<f32>) {
  %0 = tpc.sgd_update %p, %p lr %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>
  return
}
