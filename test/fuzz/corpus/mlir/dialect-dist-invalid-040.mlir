dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%w: tensor<64x8xf32> {dist.shardin = #dist.sharding<@m, [[], []]>}) {
  return
}
