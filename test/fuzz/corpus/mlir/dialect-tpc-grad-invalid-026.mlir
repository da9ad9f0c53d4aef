func.func @attention_block_without_dropout(%q: tensor<2x4x8x16xf32>, %mb: tensor<i64>) {
  %0 = tpc.attention %q, %q, %q scale 0.25 block %mb : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}
