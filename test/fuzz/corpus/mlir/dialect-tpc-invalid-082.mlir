func.func @rotary_int(%q: tensor<2x8x8x16xi32>) {
  %0 = tpc.rotary %q theta 1.0e+04 : tensor<2x8x8x16xi32>
  return
}
