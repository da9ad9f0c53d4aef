// RUN: tpc-opt %s --tpc-test-sharding-rules -o /dev/null | FileCheck %s --match-full-lines

// Each optimizer op's sharding rule (docs/design/sharding.md). None is
// linear: a partial gradient is reduced before its squares are summed and
// before an update.

// Every dim of every input is summed, each input with its own factors.
// CHECK: tpc.sum_squares: ([i, j], [k]) -> ([]) {i=64 reduction, j=128 reduction, k=32 reduction} linearity none sums operands apart
func.func @sum_squares(%dw0: tensor<64x128xf32>, %dw1: tensor<32xf32>) {
  %0 = tpc.sum_squares %dw0, %dw1 : tensor<64x128xf32>, tensor<32xf32>
  return
}

// CHECK-NEXT: tpc.clip_coefficient: ([]) -> ([], []) {} linearity none
func.func @clip_coefficient(%ss: tensor<f32>) {
  %0:2 = tpc.clip_coefficient %ss max_norm 1.000000e+00
  return
}

// CHECK-NEXT: tpc.lr_schedule: ([]) -> ([]) {} linearity none
func.func @lr_schedule(%step: tensor<i64>) {
  %0 = tpc.lr_schedule %step cosine lr 6.000000e-04 min_lr 6.000000e-05 warmup 10 total 100
  return
}

// Parameter, gradient and states share every factor; the scalars (lr, step,
// scale) have none.
// CHECK-NEXT: tpc.adamw_update: ([i, j], [i, j], [i, j], [i, j], [], []) -> ([i, j], [i, j], [i, j]) {i=64, j=128} linearity none
// CHECK-NEXT: tpc.adamw_update: ([i, j], [i, j], [i, j], [i, j], [], [], []) -> ([i, j], [i, j], [i, j]) {i=64, j=128} linearity none
func.func @adamw_update(%p: tensor<64x128xf32>, %g: tensor<64x128xf32>, %m: tensor<64x128xf32>, %v: tensor<64x128xf32>, %lr: tensor<f32>, %step: tensor<i64>, %coef: tensor<f32>) {
  %0:3 = tpc.adamw_update %p, %g, %m, %v lr %lr step %step beta1 9.000000e-01 beta2 9.990000e-01 eps 1.000000e-08 weight_decay 1.000000e-02 : tensor<64x128xf32>
  %1:3 = tpc.adamw_update %p, %g, %m, %v lr %lr step %step scale %coef beta1 9.000000e-01 beta2 9.990000e-01 eps 1.000000e-08 weight_decay 1.000000e-02 : tensor<64x128xf32>
  return
}

// CHECK-NEXT: tpc.sgd_update: ([i], [i], []) -> ([i]) {i=64} linearity none
// CHECK-NEXT: tpc.sgd_update: ([i, j], [i, j], [i, j], [], []) -> ([i, j], [i, j]) {i=64, j=128} linearity none
func.func @sgd_update(%p: tensor<64xf32>, %g: tensor<64xf32>, %lr: tensor<f32>, %w: tensor<64x128xf32>, %dw: tensor<64x128xf32>, %buf: tensor<64x128xf32>, %coef: tensor<f32>) {
  %0 = tpc.sgd_update %p, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<64xf32>, tensor<64xf32>
  %1:2 = tpc.sgd_update %w, %dw momentum_buffer %buf lr %lr scale %coef momentum 9.000000e-01 weight_decay 1.000000e-02 : tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>
  return
}
