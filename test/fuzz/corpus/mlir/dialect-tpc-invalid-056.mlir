func.func @mul_not_suffix(%x: tensor<4x32xf32>, %y: tensor<4xf32>) {
  %0 = tpc.mul %x, %y : tensor<4x32xf32>, tensor<4xf32>
  return
}
