dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  %0 = dist.shard %x to <@m, [[], []], partial [sp]> : tensor<8x16xf32>
  return
}
