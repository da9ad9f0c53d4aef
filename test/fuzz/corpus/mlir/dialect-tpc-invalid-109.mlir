func.func @repeat_scalar(%k: tensor<f32>) {
  %0 = tpc.repeat %k dim 0 times 2 : tensor<f32>
  return
}
