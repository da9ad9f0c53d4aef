func.func @embedding_int_table(%t: tensor<16x4xi32>, %ids: tensor<8xi32>) {
  %0 = tpc.embedding %t[%ids] : tensor<16x4xi32>, tensor<8xi32>
  return
}
