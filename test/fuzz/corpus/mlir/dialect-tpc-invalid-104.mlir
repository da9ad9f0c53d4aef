func.func @slice_negative_offset(%x: tensor<1024x64xf32>) {
  %0 = tpc.slice %x dim 0 [-1 : 2] : tensor<1024x64xf32>
  return
}
