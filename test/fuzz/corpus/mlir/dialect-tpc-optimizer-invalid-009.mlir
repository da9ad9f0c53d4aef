func.func @adamw_beta2(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 0.9 beta2 -0.5 eps 1.0e-8 weight_decay 0.0 : tensor<4xf32>
  return
}
