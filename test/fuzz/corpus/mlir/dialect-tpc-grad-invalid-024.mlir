func.func @attention_grad_heads(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) {
  %0:3 = tpc.attention_grad %do, %q, %k, %k scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  return
}
