func.func @embedding_dynamic_ids(%t: tensor<16x4xf32>, %ids: tensor<?xi64>) {
  %0 = tpc.embedding %t[%ids] : tensor<16x4xf32>, tensor<?xi64>
  return
}
