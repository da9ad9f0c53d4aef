dist.mesh @mesh axes [tp = 4]
func.func @forward(%logits: tensor<2x4x8xf32> {tpc.input = "logits"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"},
                   %d: tensor<f32> {tpc.input = "d"})
    -> (tensor<2x4x8xf32> {tpc.output = "g"}) attributes {dist.partitioned} {
  %g = tpc.cross_entropy_grad %logits, %labels, %d blocks 4 {dist.vocab_axes = ["tp"]}
      : tensor<2x4x8xf32>, tensor<2x4xi64>
  %w = dist.all_gather %g on @mesh axes [tp] dim 2 : tensor<2x4x8xf32> -> tensor<2x4x32xf32>
  %s = tpc.slice %w dim 2 [0 : 8] : tensor<2x4x32xf32>
  return %s : tensor<2x4x8xf32>
}
