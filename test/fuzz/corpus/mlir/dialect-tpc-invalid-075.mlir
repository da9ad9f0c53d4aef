func.func @attention_result_type(%q: tensor<2x8x8x16xf32>,
                                 %k: tensor<2x4x8x16xf32>,
                                 %v: tensor<2x4x8x32xf32>) {
  %0 = "tpc.attention"(%q, %k, %v) <{scale = 2.500000e-01 : f64}>
      : (tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>)
      -> tensor<2x8x8x16xf32>
  return
}
