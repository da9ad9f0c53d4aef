func.func @repeat_zero(%k: tensor<4x4x32x16xf32>) {
  %0 = tpc.repeat %k dim 1 times 0 : tensor<4x4x32x16xf32>
  return
}
