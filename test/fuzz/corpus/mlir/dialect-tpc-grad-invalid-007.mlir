func.func @linear_weight_grad_element(%x: tensor<4x16xbf16>, %dy: tensor<4x8xf32>) {
  %0 = tpc.linear_weight_grad %x, %dy layout in_out : tensor<4x16xbf16>, tensor<4x8xf32> -> tensor<16x8xf32>
  return
}
