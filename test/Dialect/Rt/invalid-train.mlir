// One chunk per diagnostic of the training part of the rt dialect: state and
// gradient bindings, the in-place optimizer updates, and per backward and
// optimizer opcode the attributes and shapes its kernel relies on.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

rt.program @p {
  // expected-error @+1 {{state 'exp_avg' of 'w', which is no parameter of the program}}
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xbf16>
  // expected-error @+1 {{state 'exp_avg' of 'w' is 'memref<8xbf16>' but must be f32 of the parameter's buffer shape [8]}}
  %m = rt.state "exp_avg" of "w" : memref<8xbf16>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<2x4xf32>
  // expected-error @+1 {{state 'momentum' of 'w' is 'memref<8xf32>' but must be f32 of the parameter's buffer shape [2, 4]}}
  %m = rt.state "momentum" of "w" : memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
  // expected-error @+1 {{duplicate state 'exp_avg' of 'w'}}
  %n = rt.state "exp_avg" of "w" : memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  // expected-error @+1 {{name and param must not be empty}}
  %m = rt.state "" of "w" : memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  // expected-error @+1 {{binds the gradient of 'w' to a buffer no earlier kernel writes; a gradient is an rt.alloc}}
  rt.grad "w" %x : memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  // expected-error @+1 {{binds the gradient of 'w' to a buffer no earlier kernel writes}}
  rt.grad "w" %g : memref<8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.kernel silu(%x) -> (%g) : memref<8xf32> -> memref<8xf32>
  // expected-error @+1 {{gradient of 'v', which is no parameter of the program}}
  rt.grad "v" %g : memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<4xf32>
  %g = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%g) : memref<4xf32> -> memref<4xf32>
  // expected-error @+1 {{gradient of 'w' is 'memref<4xf32>' but must be f32 of the parameter's buffer shape [8]}}
  rt.grad "w" %g : memref<4xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.kernel silu(%x) -> (%g) : memref<8xf32> -> memref<8xf32>
  rt.grad "w" %g : memref<8xf32>
  // expected-error @+1 {{duplicate gradient of 'w'}}
  rt.grad "w" %g : memref<8xf32>
}

// -----

// A state is written only by an in-place update.
rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  // expected-error @+1 {{silu: result 0 is not an rt.alloc; kernels only read inputs, and params and state only change by the optimizer's in-place updates}}
  rt.kernel silu(%x) -> (%m) : memref<8xf32> -> memref<8xf32>
}

// -----

// An update writes back exactly the buffers it reads.
rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  %other = rt.alloc : memref<8xf32>
  // expected-error @+1 {{sgd_update: result 1 must be operand 2, which this kernel updates in place}}
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %other) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  // expected-error @+1 {{sgd_update: operand 1 is result 0, which this kernel updates in place}}
  rt.kernel sgd_update(%w, %w, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}

// -----

// Inputs are read-only, also for an update.
rt.program @p {
  %w = rt.input "w" : memref<8xf32>
  %m = rt.alloc : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  rt.kernel silu(%g) -> (%m) : memref<8xf32> -> memref<8xf32>
  // expected-error @+1 {{sgd_update: result 0 is not an rt.alloc}}
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
  %v = rt.state "exp_avg_sq" of "w" : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  %step = rt.input "step" : memref<i64>
  // expected-error @+1 {{adamw_update: beta2 (float_attrs[1]) is 1, expected [0, 1)}}
  rt.kernel adamw_update(%w, %g, %m, %v, %lr, %step) -> (%w, %m, %v) floats [0.9, 1.0, 1.0e-8, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64> -> memref<8xf32>, memref<8xf32>, memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
  %v = rt.state "exp_avg_sq" of "w" : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  // expected-error @+1 {{adamw_update: step is f32, expected i64}}
  rt.kernel adamw_update(%w, %g, %m, %v, %lr, %lr) -> (%w, %m, %v) floats [0.9, 0.999, 1.0e-8, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32> -> memref<8xf32>, memref<8xf32>, memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xbf16>
  %g = rt.input "g" : memref<8xbf16>
  %m = rt.alloc : memref<8xbf16>
  %lr = rt.input "lr" : memref<f32>
  rt.kernel silu(%g) -> (%m) : memref<8xbf16> -> memref<8xbf16>
  // expected-error @+1 {{sgd_update: param is bf16, expected f32}}
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [0.0, 0.0] : memref<8xbf16>, memref<8xbf16>, memref<8xbf16>, memref<f32> -> memref<8xbf16>, memref<8xbf16>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %g = rt.input "g" : memref<4xf32>
  %lr = rt.input "lr" : memref<f32>
  // expected-error @+1 {{sgd_update: grad [4] should be [8]}}
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<4xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  // expected-error @+1 {{sgd_update: momentum (float_attrs[0]) is -1, expected a finite value >= 0}}
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [-1.0, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}

// -----

rt.program @p {
  %m = rt.alloc : memref<2x8xi8>
  // expected-error @+1 {{dropout_mask: takes 1 or 2 ints but has 3}}
  rt.kernel dropout_mask() -> (%m) ints [0, 0, 0] floats [0.1] : -> memref<2x8xi8>
}

// -----

rt.program @p {
  %m = rt.alloc : memref<2x8xi8>
  // expected-error @+1 {{dropout_mask: first index (int_attrs[1]) is -16, expected >= 0}}
  rt.kernel dropout_mask() -> (%m) ints [0, -16] floats [0.1] : -> memref<2x8xi8>
}

// -----

rt.program @p {
  %m = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{dropout_mask: mask is f32, expected u8}}
  rt.kernel dropout_mask() -> (%m) ints [0] floats [0.1] : -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %m = rt.input "m" : memref<8xi8>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{apply_mask: mask [8] should be [2, 8]}}
  rt.kernel apply_mask(%x, %m) -> (%y) floats [0.1] : memref<2x8xf32>, memref<8xi8> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x4x16xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %dx = rt.alloc : memref<2x4x8xf32>
  // expected-error @+1 {{linear_input_grad: weight [16, 8] (in_out) contracts 16 but input grad [2, 4, 8] has 8}}
  rt.kernel linear_input_grad(%dy, %w) -> (%dx) : memref<2x4x16xf32>, memref<16x8xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x4x8xf32>
  %w = rt.param "w" hf_shape [8, 16] init normal : memref<8x16xf32>
  %dx = rt.alloc : memref<2x4x8xf32>
  // expected-error @+1 {{linear_input_grad: dY [2, 4, 8] has 64 elements, expected m 8 x n 16}}
  rt.kernel linear_input_grad(%dy, %w) -> (%dx) : memref<2x4x8xf32>, memref<8x16xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4x8xbf16>
  %dy = rt.input "dy" : memref<2x4x16xbf16>
  %dw = rt.alloc : memref<8x8xf32>
  // expected-error @+1 {{linear_weight_grad: dY [2, 4, 16] has 128 elements, expected m 8 x n 8}}
  rt.kernel linear_weight_grad(%x, %dy) -> (%dw) : memref<2x4x8xbf16>, memref<2x4x16xbf16> -> memref<8x8xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x4x8xf32>
  %ids = rt.input "ids" : memref<2x4xi64>
  %dt = rt.alloc : memref<16x4xf32>
  // expected-error @+1 {{embedding_grad: dY [2, 4, 8] should be [2, 4, 4]}}
  rt.kernel embedding_grad(%dy, %ids) -> (%dt) : memref<2x4x8xf32>, memref<2x4xi64> -> memref<16x4xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x4x8xf32>
  %db = rt.alloc : memref<4xf32>
  // expected-error @+1 {{sum_to: result [4] is not a suffix of input [2, 4, 8]}}
  rt.kernel sum_to(%dy) -> (%db) : memref<2x4x8xf32> -> memref<4xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x8xf32>
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [4] init ones : memref<4xf32>
  %dx = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{layer_norm_input_grad: weight [4] should be [8]}}
  rt.kernel layer_norm_input_grad(%dy, %x, %w) -> (%dx) floats [1.0e-5] : memref<2x8xf32>, memref<2x8xf32>, memref<4xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x8xf32>
  %x = rt.input "x" : memref<2x8xf32>
  %dw = rt.alloc : memref<8xf32>
  %db = rt.alloc : memref<2xf32>
  // expected-error @+1 {{layer_norm_param_grad: bias grad [2] should be [8]}}
  rt.kernel layer_norm_param_grad(%dy, %x) -> (%dw, %db) floats [1.0e-5] : memref<2x8xf32>, memref<2x8xf32> -> memref<8xf32>, memref<2xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x8xf32>
  %x = rt.input "x" : memref<2x8xf32>
  %dw = rt.alloc : memref<8xf32>
  // expected-error @+1 {{rms_norm_param_grad: epsilon (float_attrs[0]) is -1, expected a finite value >= 0}}
  rt.kernel rms_norm_param_grad(%dy, %x) -> (%dw) floats [-1.0] : memref<2x8xf32>, memref<2x8xf32> -> memref<8xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<2x4xf32>
  %x = rt.input "x" : memref<2x8xf32>
  %dx = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{gelu_grad: dY [2, 4] should be [2, 8]}}
  rt.kernel gelu_grad(%dy, %x) -> (%dx) flags 1 : memref<2x4xf32>, memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %dy = rt.input "dy" : memref<8x4xf32>
  %y = rt.input "y" : memref<8x4xf32>
  %dx = rt.alloc : memref<8x4xf32>
  // expected-error @+1 {{softmax_grad: causal softmax output [8, 4] has 8 queries but only 4 keys}}
  rt.kernel softmax_grad(%dy, %y) -> (%dx) flags 1 : memref<8x4xf32>, memref<8x4xf32> -> memref<8x4xf32>
}

// -----

rt.program @p {
  %do = rt.input "do" : memref<1x2x4x8xf32>
  %q = rt.input "q" : memref<1x2x4x8xf32>
  %k = rt.input "k" : memref<1x1x4x8xf32>
  %dq = rt.alloc : memref<1x2x4x8xf32>
  %dk = rt.alloc : memref<1x2x4x8xf32>
  %dv = rt.alloc : memref<1x1x4x8xf32>
  // expected-error @+1 {{attention_grad: key grad [1, 2, 4, 8] should be [1, 1, 4, 8]}}
  rt.kernel attention_grad(%do, %q, %k, %k) -> (%dq, %dk, %dv) ints [0] floats [0.5, 0.0] flags 1 : memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32> -> memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x1x4x8xf32>
}

// -----

rt.program @p {
  %do = rt.input "do" : memref<1x2x4x4xf32>
  %q = rt.input "q" : memref<1x2x4x8xf32>
  %k = rt.input "k" : memref<1x1x4x8xf32>
  %dq = rt.alloc : memref<1x2x4x8xf32>
  %dk = rt.alloc : memref<1x1x4x8xf32>
  %dv = rt.alloc : memref<1x1x4x8xf32>
  // expected-error @+1 {{attention_grad: dO [1, 2, 4, 4] should be [1, 2, 4, 8]}}
  rt.kernel attention_grad(%do, %q, %k, %k) -> (%dq, %dk, %dv) ints [0] floats [0.5, 0.0] : memref<1x2x4x4xf32>, memref<1x2x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32> -> memref<1x2x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>
}

// -----

rt.program @p {
  %logits = rt.input "logits" : memref<2x4x16xf32>
  %labels = rt.input "labels" : memref<2x4xi64>
  %scale = rt.input "scale" : memref<i64>
  %d = rt.alloc : memref<2x4x16xf32>
  // expected-error @+1 {{cross_entropy_grad: loss_sum grad is i64, expected f32}}
  rt.kernel cross_entropy_grad(%logits, %labels, %scale) -> (%d) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64>, memref<i64> -> memref<2x4x16xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x2x8xf32>
  %y = rt.alloc : memref<2x3x8xf32>
  // expected-error @+1 {{pad: input's 2 at offset 2 (int_attrs[1]) of dimension 1 lie outside result [2, 3, 8]}}
  rt.kernel pad(%x) -> (%y) ints [1, 2] : memref<2x2x8xf32> -> memref<2x3x8xf32>
}

// -----

rt.program @p {
  %a = rt.input "a" : memref<2x1x8xf32>
  %b = rt.input "b" : memref<2x1x8xf32>
  %y = rt.alloc : memref<2x3x8xf32>
  // expected-error @+1 {{concat: the inputs' dimension 1 sums to 2, but result [2, 3, 8] has 3}}
  rt.kernel concat(%a, %b) -> (%y) ints [1] : memref<2x1x8xf32>, memref<2x1x8xf32> -> memref<2x3x8xf32>
}

// -----

rt.program @p {
  %a = rt.input "a" : memref<2x1x8xf32>
  %b = rt.input "b" : memref<2x2x4xf32>
  %y = rt.alloc : memref<2x3x8xf32>
  // expected-error @+1 {{concat: operand 1 [2, 2, 4] should be [2, 2, 8]}}
  rt.kernel concat(%a, %b) -> (%y) ints [1] : memref<2x1x8xf32>, memref<2x2x4xf32> -> memref<2x3x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x6x8xf32>
  %y = rt.alloc : memref<2x3x8xf32>
  // expected-error @+1 {{sum_groups: repeats (int_attrs[1]) is 4, expected a positive divisor of input [2, 6, 8]'s dimension 1}}
  rt.kernel sum_groups(%x) -> (%y) ints [1, 4] : memref<2x6x8xf32> -> memref<2x3x8xf32>
}

// -----

rt.program @p {
  %labels = rt.input "labels" : memref<2x4xi64>
  %c = rt.alloc : memref<i32>
  // expected-error @+1 {{count_targets: count is i32, expected i64}}
  rt.kernel count_targets(%labels) -> (%c) ints [-100] : memref<2x4xi64> -> memref<i32>
}

// -----

rt.program @p {
  %c = rt.input "c" : memref<i64>
  %r = rt.alloc : memref<1xf32>
  // expected-error @+1 {{inverse_count: result [1] should be []}}
  rt.kernel inverse_count(%c) -> (%r) : memref<i64> -> memref<1xf32>
}

// -----

rt.program @p {
  %ss = rt.input "ss" : memref<f32>
  %n = rt.alloc : memref<f32>
  %c = rt.alloc : memref<f32>
  // expected-error @+1 {{clip_coefficient: max_norm (float_attrs[0]) is -1, expected a finite value >= 0}}
  rt.kernel clip_coefficient(%ss) -> (%n, %c) floats [-1.0] : memref<f32> -> memref<f32>, memref<f32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xi64>
  %ss = rt.alloc : memref<f32>
  // expected-error @+1 {{sum_squares: input is i64, expected f32, bf16 or f16}}
  rt.kernel sum_squares(%x) -> (%ss) : memref<8xi64> -> memref<f32>
}

// -----

rt.program @p {
  %ss = rt.alloc : memref<f32>
  // expected-error @+1 {{sum_squares: has 0 operands, expected 1 or more}}
  rt.kernel sum_squares() -> (%ss) : -> memref<f32>
}

// -----

rt.program @p {
  %step = rt.input "step" : memref<i64>
  %lr = rt.alloc : memref<f32>
  // expected-error @+1 {{lr_schedule: cosine decay steps 10 (int_attrs[1]) do not exceed the warm-up steps 10}}
  rt.kernel lr_schedule(%step) -> (%lr) ints [10, 10] floats [1.0e-3, 0.0] flags 1 : memref<i64> -> memref<f32>
}

// -----

rt.program @p {
  %step = rt.input "step" : memref<i64>
  %lr = rt.alloc : memref<f32>
  // expected-error @+1 {{lr_schedule: flags 2 set bits 2 this kernel does not define}}
  rt.kernel lr_schedule(%step) -> (%lr) ints [0, 0] floats [1.0e-3, 0.0] flags 2 : memref<i64> -> memref<f32>
}
