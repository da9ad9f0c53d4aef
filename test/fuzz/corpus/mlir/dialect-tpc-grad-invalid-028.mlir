func.func @rotary_grad_odd(%dy: tensor<2x4x8x15xf32>) {
  %0 = tpc.rotary_grad %dy theta 1.0e4 : tensor<2x4x8x15xf32>
  return
}
