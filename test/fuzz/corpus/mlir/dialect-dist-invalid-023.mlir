dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4xf32>) {
  %0 = dist.shard_pad %x on @m axes [tp] dim 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return
}
