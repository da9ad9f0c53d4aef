dist.mesh @mesh axes [tp = 2]
func.func @gathered_parameter(%x: tensor<4x16xf32>,
                              %w: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>, tpc.param = "proj.weight"},
                              %b: tensor<8xf32> {tpc.param = "proj.bias"}) -> tensor<4x8xf32> {
  %y = tpc.linear %x, %w, %b layout in_out : tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
