dist.mesh @m axes [pp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  dist.send %x on @m axes [pp] pairs [0 -> 1, 0 -> 2] channel 0 : tensor<8x16xf32>
  return
}
