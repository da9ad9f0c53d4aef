func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.update = "w"}) {
  %ws = tpc.silu %w : tensor<8xf32>
  %w1 = tpc.sgd_update %ws, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>
  return %w1 : tensor<8xf32>
}
