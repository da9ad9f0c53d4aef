func.func @repeat_dim(%k: tensor<4x4x32x16xf32>) {
  %0 = tpc.repeat %k dim 4 times 2 : tensor<4x4x32x16xf32>
  return
}
