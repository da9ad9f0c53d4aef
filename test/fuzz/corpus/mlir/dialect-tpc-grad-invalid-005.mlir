func.func @linear_weight_grad_result(%x: tensor<4x16xf32>, %dy: tensor<4x8xf32>) {
  %0 = tpc.linear_weight_grad %x, %dy layout out_in : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
  return
}
