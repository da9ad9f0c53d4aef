func.func @heads(%x: tensor<4x16x96xf32>, %wk: tensor<2x16x96xf32> {tpc.param = "k"},
                 %q: tensor<4x6x16x16xf32>, %v: tensor<4x2x16x16xf32>) -> tensor<4x6x16x16xf32> {
  %k = tpc.linear %x, %wk layout out_in : tensor<4x16x96xf32>, tensor<2x16x96xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x2x16xf32>
  %o = tpc.attention %q, %kt, %v scale 2.500000e-01 : tensor<4x6x16x16xf32>, tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>
  return %o : tensor<4x6x16x16xf32>
}
