rt.program @train_step {
  %w = rt.param "w" hf_shape [8, 8] init normal : memref<8x8xf32>
  %gamma = rt.param "g" hf_shape [8] init ones : memref<8xf32>
  %table = rt.param "table" hf_shape [16, 8] init normal : memref<16x8xf32>
  %ids = rt.input "input_ids" bound 16 : memref<2x4xi64>
  %labels = rt.input "labels" bound 16 : memref<2x4xi64>
  %step = rt.input "step" : memref<i64>
  %m = rt.state "exp_avg" of "w" offset 64 : memref<8x8xf32>
  %v = rt.state "exp_avg_sq" of "w" : memref<8x8xf32>
  %mom = rt.state "momentum" of "g" : memref<8xf32>

  %total = rt.alloc : memref<i64>
  rt.kernel count_targets(%labels) -> (%total) ints [-100] : memref<2x4xi64> -> memref<i64>
  %dsum = rt.alloc : memref<f32>
  rt.kernel inverse_count(%total) -> (%dsum) : memref<i64> -> memref<f32>
  %mb = rt.alloc : memref<1x4xi64>
  rt.kernel slice(%ids) -> (%mb) ints [0, 1, 1] : memref<2x4xi64> -> memref<1x4xi64>
  %x = rt.alloc : memref<2x4x8xf32>
  rt.kernel embedding(%table, %ids) -> (%x) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x8xf32>
  %mask = rt.alloc : memref<2x4x8xi8>
  rt.kernel dropout_mask() -> (%mask) ints [3, 64] floats [0.1] : -> memref<2x4x8xi8>
  %xd = rt.alloc : memref<2x4x8xf32>
  rt.kernel apply_mask(%x, %mask) -> (%xd) floats [0.1] : memref<2x4x8xf32>, memref<2x4x8xi8> -> memref<2x4x8xf32>
  %logits = rt.alloc : memref<2x4x16xf32>
  rt.kernel linear(%xd, %table) -> (%logits) flags 1 : memref<2x4x8xf32>, memref<16x8xf32> -> memref<2x4x16xf32>
  %dlogits = rt.alloc : memref<2x4x16xf32>
  rt.kernel cross_entropy_grad(%logits, %labels, %dsum) -> (%dlogits) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64>, memref<f32> -> memref<2x4x16xf32>
  %dx = rt.alloc : memref<2x4x8xf32>
  rt.kernel linear_input_grad(%dlogits, %table) -> (%dx) flags 1 : memref<2x4x16xf32>, memref<16x8xf32> -> memref<2x4x8xf32>
  %dtable = rt.alloc : memref<16x8xf32>
  rt.kernel linear_weight_grad(%xd, %dlogits) -> (%dtable) flags 1 : memref<2x4x8xf32>, memref<2x4x16xf32> -> memref<16x8xf32>
  %demb = rt.alloc : memref<16x8xf32>
  rt.kernel embedding_grad(%dx, %ids) -> (%demb) : memref<2x4x8xf32>, memref<2x4xi64> -> memref<16x8xf32>
  %db = rt.alloc : memref<8xf32>
  rt.kernel sum_to(%dx) -> (%db) : memref<2x4x8xf32> -> memref<8xf32>
  %dln = rt.alloc : memref<2x4x8xf32>
  rt.kernel layer_norm_input_grad(%dx, %x, %gamma) -> (%dln) floats [1.0e-5] : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
  %dg = rt.alloc : memref<8xf32>
  %dbeta = rt.alloc : memref<8xf32>
  rt.kernel layer_norm_param_grad(%dx, %x) -> (%dg, %dbeta) floats [1.0e-5] : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<8xf32>, memref<8xf32>
  %drms = rt.alloc : memref<2x4x8xf32>
  rt.kernel rms_norm_input_grad(%dx, %x, %gamma) -> (%drms) floats [1.0e-6] : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
  %drmsw = rt.alloc : memref<8xf32>
  rt.kernel rms_norm_param_grad(%dx, %x) -> (%drmsw) floats [1.0e-6] : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<8xf32>
  %dgelu = rt.alloc : memref<2x4x8xf32>
  rt.kernel gelu_grad(%dx, %x) -> (%dgelu) flags 1 : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
  %dsilu = rt.alloc : memref<2x4x8xf32>
  rt.kernel silu_grad(%dx, %x) -> (%dsilu) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
  %dsm = rt.alloc : memref<2x4x8xf32>
  rt.kernel softmax_grad(%dx, %x) -> (%dsm) flags 1 : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
  %q = rt.alloc : memref<2x2x4x4xf32>
  rt.kernel copy(%x) -> (%q) : memref<2x4x8xf32> -> memref<2x2x4x4xf32>
  %dq = rt.alloc : memref<2x2x4x4xf32>
  %dk = rt.alloc : memref<2x1x4x4xf32>
  %dv = rt.alloc : memref<2x1x4x4xf32>
  %k = rt.alloc : memref<2x1x4x4xf32>
  rt.kernel slice(%q) -> (%k) ints [1, 0, 1] : memref<2x2x4x4xf32> -> memref<2x1x4x4xf32>
  rt.kernel attention_grad(%q, %q, %k, %k) -> (%dq, %dk, %dv) ints [2, 64] floats [0.5, 0.1] flags 1 : memref<2x2x4x4xf32>, memref<2x2x4x4xf32>, memref<2x1x4x4xf32>, memref<2x1x4x4xf32> -> memref<2x2x4x4xf32>, memref<2x1x4x4xf32>, memref<2x1x4x4xf32>
  %dqr = rt.alloc : memref<2x2x4x4xf32>
  rt.kernel rotary(%dq) -> (%dqr) ints [0] floats [1.0e4] flags 1 : memref<2x2x4x4xf32> -> memref<2x2x4x4xf32>
  %dkp = rt.alloc : memref<2x2x4x4xf32>
  rt.kernel pad(%dk) -> (%dkp) ints [1, 1] : memref<2x1x4x4xf32> -> memref<2x2x4x4xf32>
  %dks = rt.alloc : memref<2x1x4x4xf32>
  rt.kernel sum_groups(%dkp) -> (%dks) ints [1, 2] : memref<2x2x4x4xf32> -> memref<2x1x4x4xf32>
  %dw = rt.alloc : memref<8x8xf32>
  rt.kernel linear_weight_grad(%x, %dx) -> (%dw) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<8x8xf32>
  %ss = rt.alloc : memref<f32>
  rt.kernel sum_squares(%dw, %dg) -> (%ss) : memref<8x8xf32>, memref<8xf32> -> memref<f32>
  %norm = rt.alloc : memref<f32>
  %coef = rt.alloc : memref<f32>
  rt.kernel clip_coefficient(%ss) -> (%norm, %coef) floats [1.0] : memref<f32> -> memref<f32>, memref<f32>
  %lr = rt.alloc : memref<f32>
  rt.kernel lr_schedule(%step) -> (%lr) ints [2, 10] floats [1.0e-3, 1.0e-4] flags 1 : memref<i64> -> memref<f32>
  rt.kernel adamw_update(%w, %dw, %m, %v, %lr, %step, %coef) -> (%w, %m, %v) floats [0.9, 0.999, 1.0e-8, 0.01] : memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>, memref<f32>, memref<i64>, memref<f32> -> memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>
  rt.kernel sgd_update(%gamma, %dg, %mom, %lr) -> (%gamma, %mom) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
  rt.output "grad_norm" %norm : memref<f32>
  rt.output "lr" %lr : memref<f32>
  rt.grad "w" %dw : memref<8x8xf32>
  rt.grad "g" %dg : memref<8xf32>
}
