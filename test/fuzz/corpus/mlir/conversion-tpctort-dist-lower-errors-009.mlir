dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x2xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  %y = dist.reduce_scatter %x on @mesh axes [tp] dim 1 reduce max
      : tensor<2x4xf32> -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
