func.func @batch_matmul_rank(%a: tensor<4x32x16xf32>, %b: tensor<16x8xf32>) {
  %0 = tpc.batch_matmul %a, %b : tensor<4x32x16xf32>, tensor<16x8xf32>
  return
}
