dist.mesh @m axes [pp = 2]
func.func @f(%x: tensor<8x16xf32>) {
  dist.send async %x on @m axes [pp] pairs [0 -> 1] channel 0 : tensor<8x16xf32>
  return
}
