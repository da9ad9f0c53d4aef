func.func @repeat_overflow(%k: tensor<4x4x32x16xf32>) {
  %0 = tpc.repeat %k dim 1 times 9223372036854775807 : tensor<4x4x32x16xf32>
  return
}
