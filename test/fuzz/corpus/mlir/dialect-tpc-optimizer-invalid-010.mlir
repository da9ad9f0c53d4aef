func.func @adamw_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 0.9 beta2 0.999 eps 0.0 weight_decay 0.0 : tensor<4xf32>
  return
}
