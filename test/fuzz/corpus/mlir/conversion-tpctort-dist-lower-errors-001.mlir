dist.mesh @mesh axes [dp = 2]
func.func @forward(%x: tensor<4xf32> {tpc.input = "x",
                   dist.sharding = #dist.sharding<@mesh, [[dp]]>})
    -> (tensor<4xf32> {tpc.output = "y"}) {
  %y = tpc.silu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
