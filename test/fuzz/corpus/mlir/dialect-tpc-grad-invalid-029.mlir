func.func @rotary_grad_offset(%dy: tensor<2x4x8x16xf32>) {
  %0 = tpc.rotary_grad %dy theta 1.0e4 offset -1 : tensor<2x4x8x16xf32>
  return
}
