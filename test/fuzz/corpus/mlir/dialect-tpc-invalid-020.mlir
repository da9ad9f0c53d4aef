func.func @batch_matmul_contracted_transpose_lhs(%a: tensor<4x32x16xf32>,
                                                 %b: tensor<4x16x8xf32>) {
  %0 = tpc.batch_matmul %a, %b transpose_lhs
      : tensor<4x32x16xf32>, tensor<4x16x8xf32>
  return
}
