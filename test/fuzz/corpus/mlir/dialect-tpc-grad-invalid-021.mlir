func.func @apply_mask_shape(%x: tensor<4x8xf32>, %m: tensor<8x4xi8>) {
  %0 = tpc.apply_mask %x, %m rate 0.1 : tensor<4x8xf32>, tensor<8x4xi8>
  return
}
