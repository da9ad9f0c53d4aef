func.func @norm_and_clip(%g0: tensor<64x64xf32>, %g1: tensor<64xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %ss = tpc.sum_squares %g0, %g1 : tensor<64x64xf32>, tensor<64xf32>
  %n, %c = tpc.clip_coefficient %ss max_norm 1.0
  %n0, %c0 = tpc.clip_coefficient %ss max_norm 0.0
  return %n, %c, %n0 : tensor<f32>, tensor<f32>, tensor<f32>
}

func.func @schedules(%step: tensor<i64>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %0 = tpc.lr_schedule %step constant lr 1.0e-3
  %1 = tpc.lr_schedule %step cosine lr 1.0e-3 warmup 5 total 6
  %2 = tpc.lr_schedule %step cosine lr 6.0e-4 min_lr 6.0e-5 warmup 10 total 100
  %3 = tpc.lr_schedule %step cosine lr 6.0e-4 total 100
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

func.func @adamw(%p: tensor<64x64xf32>, %g: tensor<64x64xf32>,
                 %m: tensor<64x64xf32>, %v: tensor<64x64xf32>,
                 %lr: tensor<f32>, %step: tensor<i64>, %c: tensor<f32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
        tensor<64x64xf32>) {
  %p1, %m1, %v1 = tpc.adamw_update %p, %g, %m, %v lr %lr step %step
      beta1 0.9 beta2 0.999 eps 1.0e-8 weight_decay 0.01 : tensor<64x64xf32>
  %p2, %m2, %v2 = tpc.adamw_update %p, %g, %m, %v lr %lr step %step scale %c
      beta1 0.9 beta2 0.95 eps 1.0e-6 weight_decay 0.0 : tensor<64x64xf32>
  return %p1, %m1, %v1, %p2
      : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
        tensor<64x64xf32>
}

func.func @sgd(%p: tensor<64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
               %lr: tensor<f32>, %c: tensor<f32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %p1, %b1 = tpc.sgd_update %p, %g momentum_buffer %b lr %lr momentum 0.9
      weight_decay 0.0 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
  %p2 = tpc.sgd_update %p, %g lr %lr scale %c momentum 0.0 weight_decay 1.0e-4
      : tensor<64xf32>, tensor<64xf32>
  return %p1, %b1, %p2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
