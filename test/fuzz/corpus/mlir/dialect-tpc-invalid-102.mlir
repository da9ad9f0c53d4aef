func.func @slice_out_of_bounds(%x: tensor<1024x64xf32>) {
  %0 = tpc.slice %x dim 0 [1000 : 32] : tensor<1024x64xf32>
  return
}
