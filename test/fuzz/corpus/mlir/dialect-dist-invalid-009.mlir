dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x6xf32>) {
  %0 = dist.shard %x to <@m, [[], [dp, tp]]> : tensor<8x6xf32>
  return
}
