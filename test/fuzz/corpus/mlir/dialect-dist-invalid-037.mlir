dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%w: tensor<64x6xf32> {dist.sharding = #dist.sharding<@m, [[], [tp]]>}) {
  return
}
