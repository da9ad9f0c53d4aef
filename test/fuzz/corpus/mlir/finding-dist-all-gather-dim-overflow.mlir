dist.mesh @mesh axes [dp = 2]
func.func @f(%x: tensor<4611686018427387904x2xf32>) -> tensor<1x2xf32> {
  %g = dist.all_gather %x on @mesh axes [dp] dim 0
      : tensor<4611686018427387904x2xf32> -> tensor<1x2xf32>
  return %g : tensor<1x2xf32>
}
