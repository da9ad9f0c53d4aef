func.func @embedding_grad_result_rank(%dy: tensor<4x8xf32>, %ids: tensor<4xi64>) {
  %0 = tpc.embedding_grad %dy[%ids] : tensor<4x8xf32>, tensor<4xi64> -> tensor<16xf32>
  return
}
