func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  %d = tpc.dropout %x rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@mesh, [[dp], []]>} : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}
