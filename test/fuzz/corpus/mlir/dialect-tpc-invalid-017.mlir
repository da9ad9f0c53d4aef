func.func @batch_matmul_vectors(%a: tensor<16xf32>, %b: tensor<16xf32>) {
  %0 = tpc.batch_matmul %a, %b : tensor<16xf32>, tensor<16xf32>
  return
}
