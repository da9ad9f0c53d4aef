dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x",
                   dist.sharding = #dist.sharding<@mesh, [[dp], []]>})
    -> (tensor<2x4xf32> {tpc.output = "x"}) attributes {dist.partitioned} {
  return %x : tensor<2x4xf32>
}
