dist.mesh @mesh axes [tp = 2]
func.func @forward(%dy: tensor<2x4x8xf32> {tpc.input = "dy"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"})
    -> (tensor<8x8xf32> {tpc.output = "g"}) attributes {dist.partitioned} {
  %g = tpc.embedding_grad %dy[%ids] {dist.vocab_axes = ["tp"]}
      : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}
