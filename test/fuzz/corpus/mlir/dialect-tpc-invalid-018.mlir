func.func @batch_matmul_batch(%a: tensor<4x32x16xf32>, %b: tensor<2x16x8xf32>) {
  %0 = tpc.batch_matmul %a, %b : tensor<4x32x16xf32>, tensor<2x16x8xf32>
  return
}
