dist.mesh @mesh axes [dp = 2]
func.func @f(%x: tensor<2x4611686018427387904xf32>) -> tensor<1x9223372036854775807xf32> {
  %t = dist.all_to_all %x on @mesh axes [dp] split 0 concat 1
      : tensor<2x4611686018427387904xf32> -> tensor<1x9223372036854775807xf32>
  return %t : tensor<1x9223372036854775807xf32>
}
