func.func @add_rhs_larger(%x: tensor<32x64xf32>, %y: tensor<4x32x64xf32>) {
  %0 = tpc.add %x, %y : tensor<32x64xf32>, tensor<4x32x64xf32>
  return
}
