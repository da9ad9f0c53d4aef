func.func @rotary_odd_head_dim(%q: tensor<2x8x8x15xf32>) {
  %0 = tpc.rotary %q theta 1.0e+04 : tensor<2x8x8x15xf32>
  return
}
