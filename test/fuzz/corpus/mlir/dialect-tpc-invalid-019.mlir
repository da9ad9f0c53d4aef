func.func @batch_matmul_contracted(%q: tensor<4x32x16xf32>,
                                   %k: tensor<4x32x16xf32>) {
  %0 = tpc.batch_matmul %q, %k : tensor<4x32x16xf32>, tensor<4x32x16xf32>
  return
}
