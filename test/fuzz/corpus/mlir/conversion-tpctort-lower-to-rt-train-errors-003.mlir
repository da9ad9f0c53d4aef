func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %m: tensor<8xf32> {tpc.input = "m"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.update = "w"}) {
  %w1, %m1 = tpc.sgd_update %w, %g momentum_buffer %m lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return %w1 : tensor<8xf32>
}
