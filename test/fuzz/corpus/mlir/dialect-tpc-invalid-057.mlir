func.func @mul_int(%x: tensor<4x32xf32>, %y: tensor<32xi32>) {
  %0 = tpc.mul %x, %y : tensor<4x32xf32>, tensor<32xi32>
  return
}
