func.func @unfused(%x: tensor<4x16x128xf32>, %wk: tensor<2x16x128xf32> {tpc.param = "k"},
                   %q: tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32> {
  %k = tpc.linear %x, %wk layout out_in {tpc.layer = 0 : i64} : tensor<4x16x128xf32>, tensor<2x16x128xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x2x16xf32>
  %kr = tpc.repeat %kt dim 1 times 4 : tensor<4x2x16x16xf32>
  %s = tpc.batch_matmul %q, %kr transpose_rhs : tensor<4x8x16x16xf32>, tensor<4x8x16x16xf32>
  return %s : tensor<4x8x16x16xf32>
}
