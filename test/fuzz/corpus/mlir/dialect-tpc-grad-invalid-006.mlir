func.func @linear_weight_grad_lead(%x: tensor<4x16xf32>, %dy: tensor<5x8xf32>) {
  %0 = tpc.linear_weight_grad %x, %dy layout in_out : tensor<4x16xf32>, tensor<5x8xf32> -> tensor<16x8xf32>
  return
}
