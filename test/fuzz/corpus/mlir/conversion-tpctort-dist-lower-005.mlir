dist.mesh @mesh axes [dp = 2]
func.func @forward(%wte: tensor<16x8xf32> {tpc.param = "wte"},
                   %ids: tensor<4x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<4x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) attributes {dist.partitioned} {
  %mbids = tensor.extract_slice %ids[2, 0] [2, 4] [1, 1]
      : tensor<4x4xi64> to tensor<2x4xi64>
  %mblabels = tensor.extract_slice %labels[2, 0] [2, 4] [1, 1]
      : tensor<4x4xi64> to tensor<2x4xi64>
  %rids = dist.shard_slice %mbids on @mesh axes [dp] dim 0
      : tensor<2x4xi64> -> tensor<1x4xi64>
  %rlabels = dist.shard_slice %mblabels on @mesh axes [dp] dim 0
      : tensor<2x4xi64> -> tensor<1x4xi64>
  %x = tpc.embedding %wte[%rids] : tensor<16x8xf32>, tensor<1x4xi64>
  %logits = tpc.linear %x, %wte layout out_in
      : tensor<1x4x8xf32>, tensor<16x8xf32>
  %sum, %count = tpc.cross_entropy %logits, %rlabels
      : tensor<1x4x16xf32>, tensor<1x4xi64>
  %gsum = dist.all_reduce %sum on @mesh axes [dp] : tensor<f32>
  %gcount = dist.all_reduce %count on @mesh axes [dp] : tensor<i64>
  %loss = tpc.loss_mean %gsum, %gcount
  return %loss : tensor<f32>
}
