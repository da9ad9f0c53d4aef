func.func @batch_matmul_int(%a: tensor<32x16xi32>, %b: tensor<16x8xf32>) {
  %0 = tpc.batch_matmul %a, %b : tensor<32x16xi32>, tensor<16x8xf32>
  return
}
