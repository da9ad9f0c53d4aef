dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x6xf32>) {
  %0 = dist.shard_slice %x on @m axes [tp] dim 1 : tensor<8x6xf32> -> tensor<8x1xf32>
  return
}
