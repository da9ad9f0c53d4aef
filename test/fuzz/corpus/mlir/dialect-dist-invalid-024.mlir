dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  %0 = dist.all_to_all %x on @m axes [tp] split 1 concat 0 : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}
