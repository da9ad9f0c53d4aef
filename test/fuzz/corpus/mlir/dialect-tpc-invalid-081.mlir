func.func @rotary_offset(%q: tensor<2x8x8x16xf32>) {
  %0 = tpc.rotary %q theta 1.0e+04 offset -1 : tensor<2x8x8x16xf32>
  return
}
