func.func @rms_norm_infinite_epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  %0 = tpc.rms_norm %x, %g eps 0x7FF0000000000000
      : tensor<4x64xf32>, tensor<64xf32>
  return
}
