func.func @adamw_state_shape(%p: tensor<4xf32>, %m: tensor<5xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  %0:3 = "tpc.adamw_update"(%p, %p, %m, %p, %lr, %s) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<5xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}
