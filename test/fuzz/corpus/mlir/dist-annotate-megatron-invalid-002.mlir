dist.mesh @mesh axes [tp = 2]
func.func @flat_heads(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32> {tpc.param = "q"},
                      %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %q = tpc.linear %x, %wq layout in_out : tensor<2x8x64xf32>, tensor<64x64xf32>
  %q4 = tpc.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qt = tpc.transpose %q4 [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %o = tpc.attention %qt, %k, %v causal scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
