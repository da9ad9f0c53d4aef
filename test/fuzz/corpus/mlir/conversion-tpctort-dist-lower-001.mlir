dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(
    %q: tensor<2x2x4x8xf32> {tpc.input = "q",
        dist.sharding = #dist.sharding<@mesh, [[dp], [tp], [], []]>})
    -> (tensor<4x4x8xf32> {tpc.output = "o"}) attributes {dist.partitioned} {
  %c1 = arith.constant dense<1> : tensor<i64>
  %c3 = arith.constant dense<3> : tensor<i64>
  %mask = tpc.dropout_mask rate 1.000000e-01 stream 7 block %c3
      {dist.sharding = #dist.sharding<@mesh, [[dp], [], [tp]]>}
      : tensor<2x4x4xi8>
  %o = tpc.attention %q, %q, %q causal scale 5.000000e-01 dropout 1.000000e-01
      stream 5 block %c1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [tp], [], []]>}
      : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
  %dq, %dk, %dv = tpc.attention_grad %o, %q, %q, %q causal scale 5.000000e-01
      dropout 1.000000e-01 stream 5 block %c1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [tp], [], []]>}
      : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>,
        tensor<2x2x4x8xf32>
  %whole = tpc.dropout_mask rate 1.000000e-01 stream 8 block %c1
      {dist.sharding = #dist.sharding<@mesh, [[]]>} : tensor<8xi8>
  %dq2 = tpc.add %dq, %dk : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
  %f = tpc.reshape %dq2 : tensor<2x2x4x8xf32> -> tensor<2x8x8xf32>
  %g = dist.all_gather %f on @mesh axes [dp] dim 0
      : tensor<2x8x8xf32> -> tensor<4x8x8xf32>
  %o2 = tpc.slice %g dim 1 [0 : 4] : tensor<4x8x8xf32>
  return %o2 : tensor<4x4x8xf32>
}
