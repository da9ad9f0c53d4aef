dist.mesh @m axes [pp = 2]
func.func @f() {
  %0 = dist.recv async on @m axes [pp] pairs [0 -> 1] channel 0 : tensor<8x16xf32>
  dist.wait %0 : tensor<8x16xf32>
  dist.wait %0 : tensor<8x16xf32>
  return
}
