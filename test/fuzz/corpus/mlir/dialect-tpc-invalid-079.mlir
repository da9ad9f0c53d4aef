func.func @rotary_scaling_length(%q: tensor<2x8x8x16xf32>) {
  %0 = tpc.rotary %q theta 1.0e+04 scaling [2.0, 1.0] : tensor<2x8x8x16xf32>
  return
}
