func.func @loss_mean_count_type(%s: tensor<f32>, %c: tensor<i32>) {
  %0 = "tpc.loss_mean"(%s, %c) : (tensor<f32>, tensor<i32>) -> tensor<f32>
  return
}
