func.func @attention_grad_block_without_dropout(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %mb: tensor<i64>) {
  %0:3 = tpc.attention_grad %do, %q, %q, %q scale 0.25 block %mb : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}
