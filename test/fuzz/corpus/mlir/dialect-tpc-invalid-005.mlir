func.func @embedding_result_type(%t: tensor<16x4xf32>, %ids: tensor<8xi64>) {
  %0 = "tpc.embedding"(%t, %ids)
      : (tensor<16x4xf32>, tensor<8xi64>) -> tensor<8x5xf32>
  return
}
