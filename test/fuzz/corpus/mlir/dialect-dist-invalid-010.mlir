func.func @f(%x: tensor<8x16xf32>) {
  %0 = dist.all_reduce %x on @m axes [tp] : tensor<8x16xf32>
  return
}
