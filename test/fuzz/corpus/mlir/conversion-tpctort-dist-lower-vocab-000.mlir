dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%wte: tensor<8x8xf32> {tpc.param = "wte", tpc.hf_shape = array<i64: 15, 8>,
                       dist.unpadded_shape = array<i64: 15, 8>,
                       dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) attributes {dist.partitioned} {
  %x = tpc.embedding %wte[%ids] {dist.vocab_axes = ["tp"]}
      : tensor<8x8xf32>, tensor<2x4xi64>
  %r = dist.all_reduce %x on @mesh axes [tp] : tensor<2x4x8xf32>
  %logits = tpc.linear %r, %wte layout out_in : tensor<2x4x8xf32>, tensor<8x8xf32>
  %sum, %count = tpc.cross_entropy %logits, %labels vocab 15 blocks 2 {dist.vocab_axes = ["tp"]}
      : tensor<2x4x8xf32>, tensor<2x4xi64>
  %loss = tpc.loss_mean %sum, %count
  return %loss : tensor<f32>
}
