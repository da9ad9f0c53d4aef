dist.mesh @mesh axes [tp = 2]
func.func @mask(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %c = arith.constant dense<0> : tensor<i64>
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x8x16xf32>
  %m = tpc.dropout_mask rate 0.1 stream 0 block %c : tensor<2x8x16xi8>
  %y = tpc.apply_mask %xs, %m rate 0.1 : tensor<2x8x16xf32>, tensor<2x8x16xi8>
  return %y : tensor<2x8x16xf32>
}
