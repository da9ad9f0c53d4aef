func.func @sum_to_not_suffix(%dy: tensor<4x32x64xf32>) {
  %0 = tpc.sum_to %dy : tensor<4x32x64xf32> -> tensor<32xf32>
  return
}
