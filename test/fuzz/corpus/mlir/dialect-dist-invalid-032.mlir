dist.mesh @m axes [pp = 4]
func.func @f() {
  %0 = dist.recv on @m axes [pp] pairs [] channel 0 : tensor<8x16xf32>
  return
}
