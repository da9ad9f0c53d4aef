func.func @softmax_causal_rank(%x: tensor<32xf32>) {
  %0 = tpc.softmax %x causal : tensor<32xf32>
  return
}
