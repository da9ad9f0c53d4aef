func.func @not_a_matmul(%q: tensor<4x8x16x16xf32>, %k: tensor<4x2x16x16xf32>,
                        %v: tensor<4x2x16x16xf32>) -> tensor<4x8x16x16xf32> {
  %o = tpc.attention %q, %k, %v scale 2.500000e-01 : tensor<4x8x16x16xf32>, tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>
  return %o : tensor<4x8x16x16xf32>
}
