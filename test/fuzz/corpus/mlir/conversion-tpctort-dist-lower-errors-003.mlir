dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<4xf32> {tpc.input = "x",
    dist.sharding = #dist.sharding<@mesh, [[dp]], partial [tp]>})
    -> (tensor<4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  %y = dist.all_reduce %x on @mesh axes [tp] : tensor<4xf32>
  return %y : tensor<4xf32>
}
