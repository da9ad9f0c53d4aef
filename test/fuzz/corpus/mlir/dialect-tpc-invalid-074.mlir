func.func @attention_missing_scale(%q: tensor<2x8x8x16xf32>,
                                   %k: tensor<2x4x8x16xf32>,
                                   %v: tensor<2x4x8x16xf32>) {
  %0 = tpc.attention %q, %k, %v causal : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}
