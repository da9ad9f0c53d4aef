func.func @sum_groups_divisible(%x: tensor<4x6x8xf32>) {
  %0 = tpc.sum_groups %x dim 1 times 4 : tensor<4x6x8xf32>
  return
}
