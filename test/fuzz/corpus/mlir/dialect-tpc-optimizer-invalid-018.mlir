func.func @sgd_momentum_negative(%p: tensor<4xf32>, %lr: tensor<f32>) {
  %0:2 = tpc.sgd_update %p, %p momentum_buffer %p lr %lr momentum -0.9 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}
