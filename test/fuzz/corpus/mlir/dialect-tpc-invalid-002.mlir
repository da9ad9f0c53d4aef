func.func @embedding_float_ids(%t: tensor<16x4xf32>, %ids: tensor<8xf32>) {
  %0 = tpc.embedding %t[%ids] : tensor<16x4xf32>, tensor<8xf32>
  return
}
