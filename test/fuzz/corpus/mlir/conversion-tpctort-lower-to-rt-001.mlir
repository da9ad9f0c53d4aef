func.func @forward(%p: tensor<8xbf16> {tpc.param = "shared"},
                   %x: tensor<2x8xbf16> {tpc.input = "x"},
                   %w: tensor<16x8xbf16> {tpc.param = "w"},
                   %w2: tensor<12x8xbf16> {tpc.param = "w2"},
                   %labels: tensor<2xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) {
  %a = tpc.layer_norm %x, %p, %p eps 1.0e-5 : tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  %l1 = tpc.linear %a, %w layout out_in : tensor<2x8xbf16>, tensor<16x8xbf16>
  %l2 = tpc.linear %a, %w2 layout out_in : tensor<2x8xbf16>, tensor<12x8xbf16>
  %s1, %c1 = tpc.cross_entropy %l1, %labels ignore -1 : tensor<2x16xbf16>, tensor<2xi64>
  %s2, %c2 = tpc.cross_entropy %l2, %labels : tensor<2x12xbf16>, tensor<2xi64>
  %loss = tpc.loss_mean %s1, %c2
  return %loss : tensor<f32>
}
