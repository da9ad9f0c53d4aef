func.func @slice_dim(%x: tensor<1024x64xf32>) {
  %0 = tpc.slice %x dim 2 [0 : 1] : tensor<1024x64xf32>
  return
}
