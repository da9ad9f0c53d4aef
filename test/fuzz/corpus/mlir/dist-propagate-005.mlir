dist.mesh @mesh axes [tp = 2]
func.func @parameter_wins(%x: tensor<32x64x16xbf16>,
                          %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>, tpc.param = "fc.weight"}) -> tensor<32x64x32xbf16> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<32x64x16xbf16>
  %xn = tpc.gelu %xs tanh : tensor<32x64x16xbf16>
  %wb = tpc.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %y = tpc.linear %xn, %wb layout in_out : tensor<32x64x16xbf16>, tensor<16x32xbf16>
  return %y : tensor<32x64x32xbf16>
}
