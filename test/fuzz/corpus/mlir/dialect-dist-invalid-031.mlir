dist.mesh @m axes [pp = 4]
func.func @f() {
  %0 = dist.recv on @m axes [pp] pairs [1 -> 3, 2 -> 3] channel 0 : tensor<8x16xf32>
  return
}
