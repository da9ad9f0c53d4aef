func.func @count_targets_float(%lb: tensor<4xf32>) {
  %0 = tpc.count_targets %lb : tensor<4xf32>
  return
}
