func.func @apply_mask_rate(%x: tensor<4x8xf32>, %m: tensor<4x8xi8>) {
  %0 = tpc.apply_mask %x, %m rate -0.5 : tensor<4x8xf32>, tensor<4x8xi8>
  return
}
