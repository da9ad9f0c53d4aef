// Round trip of every rt op and opcode, in the custom and the generic form.
// RUN: tpc-opt %s -split-input-file | tpc-opt -split-input-file | FileCheck %s
// RUN: tpc-opt %s -split-input-file --mlir-print-op-generic \
// RUN:   | tpc-opt -split-input-file | FileCheck %s

// The dialect documentation's example.
// CHECK-LABEL: module attributes {rt.arena_bytes = 384 : i64, rt.seed = 0 : i64}
module attributes {rt.arena_bytes = 384 : i64, rt.seed = 0 : i64} {
  // CHECK: rt.program @forward {
  rt.program @forward {
    // CHECK-NEXT: %[[W:.*]] = rt.param "w" hf_shape [4, 8] init normal offset 0 : memref<4x8xf32>
    %w = rt.param "w" hf_shape [4, 8] init normal offset 0 : memref<4x8xf32>
    // CHECK-NEXT: %[[IDS:.*]] = rt.input "input_ids" bound 4 offset 128 : memref<2x3xi64>
    %ids = rt.input "input_ids" bound 4 offset 128 : memref<2x3xi64>
    // CHECK-NEXT: %[[X:.*]] = rt.alloc offset 192 : memref<2x3x8xf32>
    %x = rt.alloc offset 192 : memref<2x3x8xf32>
    // CHECK-NEXT: rt.kernel embedding(%[[W]], %[[IDS]]) -> (%[[X]]) : memref<4x8xf32>, memref<2x3xi64> -> memref<2x3x8xf32>
    rt.kernel embedding(%w, %ids) -> (%x)
        : memref<4x8xf32>, memref<2x3xi64> -> memref<2x3x8xf32>
    // CHECK-NEXT: rt.output "x" %[[X]] : memref<2x3x8xf32>
    rt.output "x" %x : memref<2x3x8xf32>
  }
}

// -----
// Every opcode with its attributes; params with every init kind, a custom
// std and no offset; an input without a bound.

// CHECK-LABEL: module attributes {rt.arena_bytes = 1048576 : i64, rt.planned_peak_bytes = 4096 : i64, rt.seed = -1 : i64}
module attributes {rt.arena_bytes = 1048576 : i64, rt.planned_peak_bytes = 4096 : i64, rt.seed = -1 : i64} {
  // CHECK: rt.program @every_opcode
  rt.program @every_opcode {
    // CHECK-NEXT: rt.param "table" hf_shape [16, 8] init normal std 1.000000e+00 : memref<16x8xf32>
    %table = rt.param "table" hf_shape [16, 8] init normal std 1.0 : memref<16x8xf32>
    // CHECK-NEXT: rt.param "gamma" hf_shape [8] init ones : memref<8xf32>
    %gamma = rt.param "gamma" hf_shape [8] init ones : memref<8xf32>
    // CHECK-NEXT: rt.param "beta" hf_shape [8] init zeros : memref<8xf32>
    %beta = rt.param "beta" hf_shape [8] init zeros : memref<8xf32>
    // CHECK-NEXT: rt.param "w" hf_shape [32, 8] init normal : memref<2x16x8xf32>
    %w = rt.param "w" hf_shape [32, 8] init normal : memref<2x16x8xf32>
    // CHECK-NEXT: rt.input "ids" : memref<2x4xi64>
    %ids = rt.input "ids" : memref<2x4xi64>
    // CHECK-NEXT: rt.input "labels" bound 16 : memref<2x4xi64>
    %labels = rt.input "labels" bound 16 : memref<2x4xi64>

    %x = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel embedding
    rt.kernel embedding(%table, %ids) -> (%x) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x8xf32>
    %y = rt.alloc : memref<2x4x2x16xf32>
    // CHECK: rt.kernel linear(%{{.*}}, %{{.*}}) -> (%{{.*}}) flags 1 :
    rt.kernel linear(%x, %w) -> (%y) flags 1 : memref<2x4x8xf32>, memref<2x16x8xf32> -> memref<2x4x2x16xf32>
    %ln = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel layer_norm({{.*}}) floats [1.000000e-05] :
    rt.kernel layer_norm(%x, %gamma, %beta) -> (%ln) floats [1.0e-5] : memref<2x4x8xf32>, memref<8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %rms = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel rms_norm({{.*}}) floats [1.000000e-06] :
    rt.kernel rms_norm(%ln, %gamma) -> (%rms) floats [1.0e-6] : memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %g = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel gelu({{.*}}) flags 1 :
    rt.kernel gelu(%rms) -> (%g) flags 1 : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %s = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel silu(
    rt.kernel silu(%g) -> (%s) : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %a = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel add(
    rt.kernel add(%s, %ln) -> (%a) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
    %m = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel mul(
    rt.kernel mul(%a, %gamma) -> (%m) : memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %d = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel dropout({{.*}}) ints [7] floats [1.000000e-01] :
    rt.kernel dropout(%m) -> (%d) ints [7] floats [0.1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %q = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel copy(
    rt.kernel copy(%d) -> (%q) : memref<2x4x8xf32> -> memref<2x4x4x2xf32>
    %qt = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel transpose({{.*}}) ints [0, 2, 1, 3] :
    rt.kernel transpose(%q) -> (%qt) ints [0, 2, 1, 3] : memref<2x4x4x2xf32> -> memref<2x4x4x2xf32>
    %qr = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel rotary({{.*}}) ints [3] floats [1.000000e+04] :
    rt.kernel rotary(%qt) -> (%qr) ints [3] floats [1.0e4] : memref<2x4x4x2xf32> -> memref<2x4x4x2xf32>
    %k = rt.alloc : memref<2x2x4x2xf32>
    // CHECK: rt.kernel slice({{.*}}) ints [1, 2, 2] :
    rt.kernel slice(%qr) -> (%k) ints [1, 2, 2] : memref<2x4x4x2xf32> -> memref<2x2x4x2xf32>
    %kr = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel repeat({{.*}}) ints [1, 2] :
    rt.kernel repeat(%k) -> (%kr) ints [1, 2] : memref<2x2x4x2xf32> -> memref<2x4x4x2xf32>
    %o = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel attention({{.*}}) ints [0] floats [5.000000e-01, 0.000000e+00] flags 1 :
    rt.kernel attention(%qr, %k, %k) -> (%o) ints [0] floats [0.5, 0.0] flags 1 : memref<2x4x4x2xf32>, memref<2x2x4x2xf32>, memref<2x2x4x2xf32> -> memref<2x4x4x2xf32>
    %sc = rt.alloc : memref<2x4x4x4xf32>
    // CHECK: rt.kernel batch_matmul({{.*}}) floats [5.000000e-01] flags 2 :
    rt.kernel batch_matmul(%qr, %kr) -> (%sc) floats [0.5] flags 2 : memref<2x4x4x2xf32>, memref<2x4x4x2xf32> -> memref<2x4x4x4xf32>
    %p = rt.alloc : memref<2x4x4x4xf32>
    // CHECK: rt.kernel softmax({{.*}}) flags 1 :
    rt.kernel softmax(%sc) -> (%p) flags 1 : memref<2x4x4x4xf32> -> memref<2x4x4x4xf32>
    %h = rt.alloc : memref<2x4x4x4xbf16>
    // CHECK: rt.kernel cast({{.*}}) : memref<2x4x4x4xf32> -> memref<2x4x4x4xbf16>
    rt.kernel cast(%p) -> (%h) : memref<2x4x4x4xf32> -> memref<2x4x4x4xbf16>
    %logits = rt.alloc : memref<2x4x16xf32>
    rt.kernel linear(%x, %table) -> (%logits) flags 1 : memref<2x4x8xf32>, memref<16x8xf32> -> memref<2x4x16xf32>
    %sum = rt.alloc : memref<f32>
    %count = rt.alloc : memref<i64>
    // CHECK: rt.kernel cross_entropy({{.*}}) -> (%{{.*}}, %{{.*}}) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64> -> memref<f32>, memref<i64>
    rt.kernel cross_entropy(%logits, %labels) -> (%sum, %count) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64> -> memref<f32>, memref<i64>
    %loss = rt.alloc : memref<f32>
    // CHECK: rt.kernel loss_mean({{.*}}) : memref<f32>, memref<i64> -> memref<f32>
    rt.kernel loss_mean(%sum, %count) -> (%loss) : memref<f32>, memref<i64> -> memref<f32>
    // CHECK: rt.output "loss"
    rt.output "loss" %loss : memref<f32>
    // CHECK-NEXT: rt.output "probs"
    rt.output "probs" %h : memref<2x4x4x4xbf16>
  }
}

// -----
// The backward, driver and optimizer opcodes; optimizer state, gradient
// bindings, and the updates in place (results that are operands).

// CHECK-LABEL: rt.program @train_step
rt.program @train_step {
  // CHECK-NEXT: %[[W:.*]] = rt.param "w" hf_shape [8, 8] init normal : memref<8x8xf32>
  %w = rt.param "w" hf_shape [8, 8] init normal : memref<8x8xf32>
  // CHECK-NEXT: %[[G:.*]] = rt.param "g" hf_shape [8] init ones : memref<8xf32>
  %gamma = rt.param "g" hf_shape [8] init ones : memref<8xf32>
  %table = rt.param "table" hf_shape [16, 8] init normal : memref<16x8xf32>
  %ids = rt.input "input_ids" bound 16 : memref<2x4xi64>
  %labels = rt.input "labels" bound 16 : memref<2x4xi64>
  // CHECK: %[[STEP:.*]] = rt.input "step" : memref<i64>
  %step = rt.input "step" : memref<i64>
  // CHECK-NEXT: %[[M:.*]] = rt.state "exp_avg" of "w" offset 64 : memref<8x8xf32>
  %m = rt.state "exp_avg" of "w" offset 64 : memref<8x8xf32>
  // CHECK-NEXT: %[[V:.*]] = rt.state "exp_avg_sq" of "w" : memref<8x8xf32>
  %v = rt.state "exp_avg_sq" of "w" : memref<8x8xf32>
  %mom = rt.state "momentum" of "g" : memref<8xf32>

  %total = rt.alloc : memref<i64>
  // CHECK: rt.kernel count_targets({{.*}}) ints [-100] : memref<2x4xi64> -> memref<i64>
  rt.kernel count_targets(%labels) -> (%total) ints [-100] : memref<2x4xi64> -> memref<i64>
  %dsum = rt.alloc : memref<f32>
  // CHECK: rt.kernel inverse_count({{.*}}) : memref<i64> -> memref<f32>
  rt.kernel inverse_count(%total) -> (%dsum) : memref<i64> -> memref<f32>
  %mb = rt.alloc : memref<1x4xi64>
  // CHECK: rt.kernel slice({{.*}}) ints [0, 1, 1] : memref<2x4xi64> -> memref<1x4xi64>
  rt.kernel slice(%ids) -> (%mb) ints [0, 1, 1] : memref<2x4xi64> -> memref<1x4xi64>
  %x = rt.alloc : memref<2x4x8xf32>
  rt.kernel embedding(%table, %ids) -> (%x) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x8xf32>
  %mask = rt.alloc : memref<2x4x8xi8>
  // CHECK: rt.kernel dropout_mask() -> (%{{.*}}) ints [3, 64] floats [1.000000e-01] :  -> memref<2x4x8xi8>
  rt.kernel dropout_mask() -> (%mask) ints [3, 64] floats [0.1] : -> memref<2x4x8xi8>
  %xd = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel apply_mask({{.*}}) floats [1.000000e-01] : memref<2x4x8xf32>, memref<2x4x8xi8> -> memref<2x4x8xf32>
  rt.kernel apply_mask(%x, %mask) -> (%xd) floats [0.1] : memref<2x4x8xf32>, memref<2x4x8xi8> -> memref<2x4x8xf32>
  %logits = rt.alloc : memref<2x4x16xf32>
  rt.kernel linear(%xd, %table) -> (%logits) flags 1 : memref<2x4x8xf32>, memref<16x8xf32> -> memref<2x4x16xf32>
  %dlogits = rt.alloc : memref<2x4x16xf32>
  // CHECK: rt.kernel cross_entropy_grad({{.*}}) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64>, memref<f32> -> memref<2x4x16xf32>
  rt.kernel cross_entropy_grad(%logits, %labels, %dsum) -> (%dlogits) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64>, memref<f32> -> memref<2x4x16xf32>
  %dx = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel linear_input_grad({{.*}}) flags 1 : memref<2x4x16xf32>, memref<16x8xf32> -> memref<2x4x8xf32>
  rt.kernel linear_input_grad(%dlogits, %table) -> (%dx) flags 1 : memref<2x4x16xf32>, memref<16x8xf32> -> memref<2x4x8xf32>
  %dtable = rt.alloc : memref<16x8xf32>
  // CHECK: rt.kernel linear_weight_grad({{.*}}) flags 1 : memref<2x4x8xf32>, memref<2x4x16xf32> -> memref<16x8xf32>
  rt.kernel linear_weight_grad(%xd, %dlogits) -> (%dtable) flags 1 : memref<2x4x8xf32>, memref<2x4x16xf32> -> memref<16x8xf32>
  %demb = rt.alloc : memref<16x8xf32>
  // CHECK: rt.kernel embedding_grad({{.*}}) : memref<2x4x8xf32>, memref<2x4xi64> -> memref<16x8xf32>
  rt.kernel embedding_grad(%dx, %ids) -> (%demb) : memref<2x4x8xf32>, memref<2x4xi64> -> memref<16x8xf32>
  %db = rt.alloc : memref<8xf32>
  // CHECK: rt.kernel sum_to({{.*}}) : memref<2x4x8xf32> -> memref<8xf32>
  rt.kernel sum_to(%dx) -> (%db) : memref<2x4x8xf32> -> memref<8xf32>
  %dln = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel layer_norm_input_grad({{.*}}) floats [1.000000e-05] :
  rt.kernel layer_norm_input_grad(%dx, %x, %gamma) -> (%dln) floats [1.0e-5] : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
  %dg = rt.alloc : memref<8xf32>
  %dbeta = rt.alloc : memref<8xf32>
  // CHECK: rt.kernel layer_norm_param_grad({{.*}}) -> (%{{.*}}, %{{.*}}) floats [1.000000e-05] :
  rt.kernel layer_norm_param_grad(%dx, %x) -> (%dg, %dbeta) floats [1.0e-5] : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<8xf32>, memref<8xf32>
  %drms = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel rms_norm_input_grad({{.*}}) floats [1.000000e-06] :
  rt.kernel rms_norm_input_grad(%dx, %x, %gamma) -> (%drms) floats [1.0e-6] : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
  %drmsw = rt.alloc : memref<8xf32>
  // CHECK: rt.kernel rms_norm_param_grad({{.*}}) floats [1.000000e-06] :
  rt.kernel rms_norm_param_grad(%dx, %x) -> (%drmsw) floats [1.0e-6] : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<8xf32>
  %dgelu = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel gelu_grad({{.*}}) flags 1 :
  rt.kernel gelu_grad(%dx, %x) -> (%dgelu) flags 1 : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
  %dsilu = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel silu_grad(
  rt.kernel silu_grad(%dx, %x) -> (%dsilu) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
  %dsm = rt.alloc : memref<2x4x8xf32>
  // CHECK: rt.kernel softmax_grad({{.*}}) flags 1 :
  rt.kernel softmax_grad(%dx, %x) -> (%dsm) flags 1 : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
  %q = rt.alloc : memref<2x2x4x4xf32>
  rt.kernel copy(%x) -> (%q) : memref<2x4x8xf32> -> memref<2x2x4x4xf32>
  %dq = rt.alloc : memref<2x2x4x4xf32>
  %dk = rt.alloc : memref<2x1x4x4xf32>
  %dv = rt.alloc : memref<2x1x4x4xf32>
  %k = rt.alloc : memref<2x1x4x4xf32>
  rt.kernel slice(%q) -> (%k) ints [1, 0, 1] : memref<2x2x4x4xf32> -> memref<2x1x4x4xf32>
  // CHECK: rt.kernel attention_grad({{.*}}) -> (%{{.*}}, %{{.*}}, %{{.*}}) ints [2, 64] floats [5.000000e-01, 1.000000e-01] flags 1 :
  rt.kernel attention_grad(%q, %q, %k, %k) -> (%dq, %dk, %dv) ints [2, 64] floats [0.5, 0.1] flags 1 : memref<2x2x4x4xf32>, memref<2x2x4x4xf32>, memref<2x1x4x4xf32>, memref<2x1x4x4xf32> -> memref<2x2x4x4xf32>, memref<2x1x4x4xf32>, memref<2x1x4x4xf32>
  %dqr = rt.alloc : memref<2x2x4x4xf32>
  // CHECK: rt.kernel rotary({{.*}}) ints [0] floats [1.000000e+04] flags 1 :
  rt.kernel rotary(%dq) -> (%dqr) ints [0] floats [1.0e4] flags 1 : memref<2x2x4x4xf32> -> memref<2x2x4x4xf32>
  %dkp = rt.alloc : memref<2x2x4x4xf32>
  // CHECK: rt.kernel pad({{.*}}) ints [1, 1] : memref<2x1x4x4xf32> -> memref<2x2x4x4xf32>
  rt.kernel pad(%dk) -> (%dkp) ints [1, 1] : memref<2x1x4x4xf32> -> memref<2x2x4x4xf32>
  %dks = rt.alloc : memref<2x1x4x4xf32>
  // CHECK: rt.kernel sum_groups({{.*}}) ints [1, 2] : memref<2x2x4x4xf32> -> memref<2x1x4x4xf32>
  rt.kernel sum_groups(%dkp) -> (%dks) ints [1, 2] : memref<2x2x4x4xf32> -> memref<2x1x4x4xf32>
  %dw = rt.alloc : memref<8x8xf32>
  rt.kernel linear_weight_grad(%x, %dx) -> (%dw) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<8x8xf32>
  %ss = rt.alloc : memref<f32>
  // CHECK: rt.kernel sum_squares({{.*}}) : memref<8x8xf32>, memref<8xf32> -> memref<f32>
  rt.kernel sum_squares(%dw, %dg) -> (%ss) : memref<8x8xf32>, memref<8xf32> -> memref<f32>
  %norm = rt.alloc : memref<f32>
  %coef = rt.alloc : memref<f32>
  // CHECK: rt.kernel clip_coefficient({{.*}}) -> (%{{.*}}, %{{.*}}) floats [1.000000e+00] : memref<f32> -> memref<f32>, memref<f32>
  rt.kernel clip_coefficient(%ss) -> (%norm, %coef) floats [1.0] : memref<f32> -> memref<f32>, memref<f32>
  %lr = rt.alloc : memref<f32>
  // CHECK: rt.kernel lr_schedule(%[[STEP]]) -> (%{{.*}}) ints [2, 10] floats [1.000000e-03, 1.000000e-04] flags 1 : memref<i64> -> memref<f32>
  rt.kernel lr_schedule(%step) -> (%lr) ints [2, 10] floats [1.0e-3, 1.0e-4] flags 1 : memref<i64> -> memref<f32>
  // CHECK: rt.kernel adamw_update(%[[W]], %{{.*}}, %[[M]], %[[V]], %{{.*}}, %[[STEP]], %{{.*}}) -> (%[[W]], %[[M]], %[[V]]) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] :
  rt.kernel adamw_update(%w, %dw, %m, %v, %lr, %step, %coef) -> (%w, %m, %v) floats [0.9, 0.999, 1.0e-8, 0.01] : memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>, memref<f32>, memref<i64>, memref<f32> -> memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>
  // CHECK: rt.kernel sgd_update(%[[G]], %{{.*}}, %{{.*}}, %{{.*}}) -> (%[[G]], %{{.*}}) floats [9.000000e-01, 0.000000e+00] :
  rt.kernel sgd_update(%gamma, %dg, %mom, %lr) -> (%gamma, %mom) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
  rt.output "grad_norm" %norm : memref<f32>
  rt.output "lr" %lr : memref<f32>
  // CHECK: rt.grad "w" %{{.*}} : memref<8x8xf32>
  rt.grad "w" %dw : memref<8x8xf32>
  // CHECK-NEXT: rt.grad "g" %{{.*}} : memref<8xf32>
  rt.grad "g" %dg : memref<8xf32>
}
