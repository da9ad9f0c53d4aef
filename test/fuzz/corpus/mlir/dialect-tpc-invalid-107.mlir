func.func @slice_negative_dim(%x: tensor<1024x64xf32>) {
  %0 = tpc.slice %x dim -1 [0 : 1] : tensor<1024x64xf32>
  return
}
