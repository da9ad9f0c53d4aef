func.func @softmax_causal_lengths(%x: tensor<4x32x16xf32>) {
  %0 = tpc.softmax %x causal : tensor<4x32x16xf32>
  return
}
