func.func @attention_stream_without_dropout(%q: tensor<2x8x8x16xf32>,
                                            %k: tensor<2x4x8x16xf32>,
                                            %v: tensor<2x4x8x16xf32>) {
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01 dropout 0.0 stream 7
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}
