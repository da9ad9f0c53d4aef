func.func @batch_matmul_element_type(%a: tensor<32x16xf32>,
                                     %b: tensor<16x8xbf16>) {
  %0 = tpc.batch_matmul %a, %b : tensor<32x16xf32>, tensor<16x8xbf16>
  return
}
