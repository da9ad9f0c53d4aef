func.func @pad_dim(%x: tensor<32x64xf32>) {
  %0 = tpc.pad %x dim 2 offset 0 to 64 : tensor<32x64xf32>
  return
}
