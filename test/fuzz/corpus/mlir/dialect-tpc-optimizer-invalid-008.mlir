func.func @adamw_beta1(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 1.0 beta2 0.999 eps 1.0e-8 weight_decay 0.0 : tensor<4xf32>
  return
}
