func.func @embedding_table_scalar(%t: tensor<f32>, %ids: tensor<8xi64>) {
  %0 = tpc.embedding %t[%ids] : tensor<f32>, tensor<8xi64>
  return
}
