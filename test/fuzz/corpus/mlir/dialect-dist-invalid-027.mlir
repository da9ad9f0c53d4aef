dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  %0 = dist.broadcast %x on @m axes [tp] root 4 : tensor<8x16xf32>
  return
}
