dist.mesh @mesh axes [tp = 2]
func.func @mlp(%x: tensor<2x4x16xf32>,
               %w1: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>, tpc.param = "fc.weight"},
               %w2: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>, tpc.param = "proj.weight"},
               %b2: tensor<8xf32> {tpc.param = "proj.bias"}) -> tensor<2x4x8xf32> {
  %xs = dist.shard %x to <@mesh, [[], [tp], []]> : tensor<2x4x16xf32>
  %h = tpc.linear %xs, %w1 layout in_out {tpc.layer = 0 : i64} : tensor<2x4x16xf32>, tensor<16x8xf32>
  %a = tpc.gelu %h tanh {tpc.layer = 0 : i64} : tensor<2x4x8xf32>
  %y = tpc.linear %a, %w2, %b2 layout in_out {tpc.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>
  return %y : tensor<2x4x8xf32>
}
