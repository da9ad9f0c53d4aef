func.func @embedding_grad_shape(%dy: tensor<4x8xf32>, %ids: tensor<5xi64>) {
  %0 = tpc.embedding_grad %dy[%ids] : tensor<4x8xf32>, tensor<5xi64> -> tensor<16x8xf32>
  return
}
