dist.mesh @mesh axes [dp = 2]
func.func @forward(%x: tensor<4xf32> {tpc.input = "x"})
    -> (tensor<4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  %s = dist.shard %x to <@mesh, [[dp]]> : tensor<4xf32>
  %y = tpc.silu %s : tensor<4xf32>
  return %y : tensor<4xf32>
}
