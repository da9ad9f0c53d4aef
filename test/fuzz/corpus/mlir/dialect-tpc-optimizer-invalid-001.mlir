func.func @sum_squares_int(%x: tensor<4xi32>) {
  %0 = tpc.sum_squares %x : tensor<4xi32>
  return
}
