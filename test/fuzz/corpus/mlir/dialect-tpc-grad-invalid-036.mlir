func.func @sum_groups_repeats(%x: tensor<4x6x8xf32>) {
  %0 = tpc.sum_groups %x dim 1 times 0 : tensor<4x6x8xf32>
  return
}
