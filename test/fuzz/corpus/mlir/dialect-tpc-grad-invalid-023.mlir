func.func @attention_grad_output(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x8xf32>) {
  %0:3 = tpc.attention_grad %do, %q, %q, %v scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>
  return
}
