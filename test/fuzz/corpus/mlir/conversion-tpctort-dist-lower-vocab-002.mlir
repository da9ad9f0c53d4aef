func.func @forward(%logits: tensor<2x4x8xf32> {tpc.input = "logits"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) {
  %sum, %count = tpc.cross_entropy %logits, %labels vocab 6
      : tensor<2x4x8xf32>, tensor<2x4xi64>
  %loss = tpc.loss_mean %sum, %count
  return %loss : tensor<f32>
}
