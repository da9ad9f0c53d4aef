func.func @batch_matmul_scale_nan(%a: tensor<32x16xf32>, %b: tensor<16x8xf32>) {
  %0 = tpc.batch_matmul %a, %b scale 0x7FF8000000000000
      : tensor<32x16xf32>, tensor<16x8xf32>
  return
}
