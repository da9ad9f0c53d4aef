// One chunk per diagnostic of the optimizer ops.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

func.func @sum_squares_empty() {
  // expected-error @+1 {{needs at least one input}}
  %0 = "tpc.sum_squares"() : () -> tensor<f32>
  return
}

// -----

func.func @sum_squares_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be variadic of statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = tpc.sum_squares %x : tensor<4xi32>
  return
}

// -----

func.func @clip_max_norm(%n: tensor<f32>) {
  // expected-error @+1 {{max_norm -1.000000e+00 is outside [0.000000e+00, inf)}}
  %0:2 = tpc.clip_coefficient %n max_norm -1.0
  return
}

// -----

func.func @lr_negative(%s: tensor<i64>) {
  // expected-error @+1 {{lr must be non-negative and finite but is -1}}
  %0 = tpc.lr_schedule %s constant lr -1.0
  return
}

// -----

func.func @min_lr_above_lr(%s: tensor<i64>) {
  // expected-error @+1 {{min_lr 1.000000e-02 is outside [0.000000e+00, 1.000000e-03]}}
  %0 = tpc.lr_schedule %s cosine lr 1.0e-3 min_lr 1.0e-2 total 10
  return
}

// -----

func.func @warmup_negative(%s: tensor<i64>) {
  // expected-error @+1 {{warmup -1 is negative}}
  %0 = tpc.lr_schedule %s cosine lr 1.0e-3 warmup -1 total 10
  return
}

// -----

func.func @constant_warmup(%s: tensor<i64>) {
  // expected-error @+1 {{a constant schedule takes no warmup, total or min_lr (they belong to cosine)}}
  %0 = tpc.lr_schedule %s constant lr 1.0e-3 warmup 5
  return
}

// -----

func.func @cosine_total(%s: tensor<i64>) {
  // expected-error @+1 {{cosine schedule needs total steps (10) greater than the warm-up steps (10)}}
  %0 = tpc.lr_schedule %s cosine lr 1.0e-3 warmup 10 total 10
  return
}

// -----

func.func @adamw_beta1(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{beta1 1.000000e+00 is outside [0.000000e+00, 1.000000e+00)}}
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 1.0 beta2 0.999 eps 1.0e-8 weight_decay 0.0 : tensor<4xf32>
  return
}

// -----

func.func @adamw_beta2(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{beta2 -5.000000e-01 is outside [0.000000e+00, 1.000000e+00)}}
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 0.9 beta2 -0.5 eps 1.0e-8 weight_decay 0.0 : tensor<4xf32>
  return
}

// -----

func.func @adamw_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{eps must be positive and finite but is 0}}
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 0.9 beta2 0.999 eps 0.0 weight_decay 0.0 : tensor<4xf32>
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{weight_decay -1.000000e-02 is outside [0.000000e+00, inf)}}
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 0.9 beta2 0.999 eps 1.0e-8 weight_decay -0.01 : tensor<4xf32>
  return
}

// -----

func.func @adamw_bf16(%p: tensor<4xbf16>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %0:3 = tpc.adamw_update %p, %p, %p, %p lr %lr step %s beta1 0.9 beta2 0.999 eps 1.0e-8 weight_decay 0.0 : tensor<4xbf16>
  return
}

// -----

func.func @adamw_state_shape(%p: tensor<4xf32>, %m: tensor<5xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{all of {param, grad, exp_avg, exp_avg_sq, new_param, new_exp_avg, new_exp_avg_sq} have same type}}
  %0:3 = "tpc.adamw_update"(%p, %p, %m, %p, %lr, %s) {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<5xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_momentum_without_buffer(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{a momentum buffer is needed exactly when the momentum is non-zero, but momentum is 9.000000e-01 without a buffer}}
  %0 = tpc.sgd_update %p, %p lr %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_buffer_without_momentum(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{a momentum buffer is needed exactly when the momentum is non-zero, but momentum is 0.000000e+00 with a buffer}}
  %0:2 = tpc.sgd_update %p, %p momentum_buffer %p lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @sgd_grad_type(%p: tensor<4xf32>, %g: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{grad type 'tensor<8xf32>' differs from the param type 'tensor<4xf32>'}}
  %0 = tpc.sgd_update %p, %g lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @sgd_buffer_type(%p: tensor<4xf32>, %b: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{momentum_buffer type 'tensor<8xf32>' differs from the param type 'tensor<4xf32>'}}
  %0:2 = tpc.sgd_update %p, %p momentum_buffer %b lr %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @sgd_momentum_negative(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{momentum -9.000000e-01 is outside [0.000000e+00, inf)}}
  %0:2 = tpc.sgd_update %p, %p momentum_buffer %p lr %lr momentum -0.9 weight_decay 0.0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}
