func.func @rotary_scaling_bands(%q: tensor<2x8x8x16xf32>) {
  %0 = tpc.rotary_grad %q theta 1.0e+04 scaling [8.0, 4.0, 1.0, 8192.0] : tensor<2x8x8x16xf32>
  return
}
