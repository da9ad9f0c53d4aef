func.func @pad_too_small(%x: tensor<32x64xf32>) {
  %0 = tpc.pad %x dim 0 offset 40 to 64 : tensor<32x64xf32>
  return
}
