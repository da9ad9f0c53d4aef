dist.mesh @mesh axes [tp = 2]
func.func @weight_grad(%x: tensor<2x8x16xf32>, %dy: tensor<2x8x32xf32>) -> tensor<16x32xf32> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x8x16xf32>
  %dys = dist.shard %dy to <@mesh, [[], [], [tp]]> : tensor<2x8x32xf32>
  %xd = tpc.gelu %xs tanh : tensor<2x8x16xf32>
  %dyd = tpc.gelu %dys tanh : tensor<2x8x32xf32>
  %dw = tpc.linear_weight_grad %xd, %dyd layout in_out : tensor<2x8x16xf32>, tensor<2x8x32xf32> -> tensor<16x32xf32>
  return %dw : tensor<16x32xf32>
}
