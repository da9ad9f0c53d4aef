dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(
    %wte: tensor<16x8xf32> {tpc.param = "wte"},
    %w1: tensor<8x4xf32> {tpc.param = "w1",
                          dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
    %w2: tensor<4x8xf32> {tpc.param = "w2", tpc.hf_shape = array<i64: 64>,
                          dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %b: tensor<8xf32> {tpc.param = "b",
                       dist.sharding = #dist.sharding<@mesh, [[]]>},
    %ids: tensor<2x4xi64> {tpc.input = "input_ids",
                           dist.sharding = #dist.sharding<@mesh, [[dp], []]>})
    -> (tensor<4x4x8xf32> {tpc.output = "y"},
        tensor<2x4x8xf32> {tpc.output = "reduced"}) attributes {dist.partitioned} {
  %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %w1 layout in_out : tensor<2x4x8xf32>, tensor<8x4xf32>
  %d = tpc.dropout %h rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [], [tp]]>}
      : tensor<2x4x4xf32>
  %p = tpc.linear %d, %w2 layout in_out : tensor<2x4x4xf32>, tensor<4x8xf32>
  %r = dist.all_reduce %p on @mesh axes [tp] : tensor<2x4x8xf32>
  %rb = tpc.add %r, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %s = dist.reduce_scatter %p on @mesh axes [tp] dim 1
      : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
  %m = dist.all_reduce %s on @mesh axes [tp] reduce max : tensor<2x2x8xf32>
  %t = dist.all_to_all %s on @mesh axes [tp] split 2 concat 1
      : tensor<2x2x8xf32> -> tensor<2x4x4xf32>
  %u = dist.shard_slice %rb on @mesh axes [tp] dim 2
      : tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %g = dist.all_gather %rb on @mesh axes [tp, dp] dim 0
      : tensor<2x4x8xf32> -> tensor<8x4x8xf32>
  %y = dist.all_gather %rb on @mesh axes [dp] dim 0
      : tensor<2x4x8xf32> -> tensor<4x4x8xf32>
  return %y, %rb : tensor<4x4x8xf32>, tensor<2x4x8xf32>
}
