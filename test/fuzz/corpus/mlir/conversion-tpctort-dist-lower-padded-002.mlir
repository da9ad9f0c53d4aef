dist.mesh @mesh axes [dp = 2]
func.func @forward(
    %ids: tensor<2x4xi64> {tpc.input = "input_ids",
                           dist.sharding = #dist.sharding<@mesh, [[dp], []]>,
                           dist.unpadded_shape = array<i64: 3, 4>})
    -> (tensor<4x4xi64> {tpc.output = "ids"}) attributes {dist.partitioned} {
  %g = dist.all_gather %ids on @mesh axes [dp] dim 0
      : tensor<2x4xi64> -> tensor<4x4xi64>
  return %g : tensor<4x4xi64>
}
