func.func @loss_mean_sum_type(
    %s: tensor<4xf32>, %c: tensor<i64>) {
  %0 = tpc.loss_mean %s, %c
  return
}
