dist.mesh @m axes [pp = 4]
func.func @f() {
  %0 = dist.recv on @m axes [pp] pairs [-1 -> 0] channel 0 : tensor<8x16xf32>
  return
}
