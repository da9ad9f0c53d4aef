// tpc-lower-to-rt on a training step: every backward, driver and optimizer
// op becomes its kernel with the attributes of the executable's table; state
// arguments become rt.state; the updates run in place on the parameter and
// state buffers; a constant dropout block becomes the kernel's first index;
// slices of the inputs are slice kernels; gradients are rt.grad bindings.
// RUN: tpc-opt %s --tpc-lower-to-rt=function=train_step | FileCheck %s

// CHECK-NOT: func.func @train_step
// CHECK-LABEL: rt.program @train_step {
func.func @train_step(
    // Through the cast (an f32 master weight of a bf16 model) the norm scale
    // still starts at one.
    // CHECK-NEXT: %[[G:.*]] = rt.param "g" hf_shape [8] init ones : memref<8xf32>
    %g: tensor<8xf32> {tpc.param = "g"},
    // CHECK-NEXT: %[[W:.*]] = rt.param "w" hf_shape [8, 16] init normal : memref<8x16xf32>
    %w: tensor<8x16xf32> {tpc.param = "w"},
    // Bounds through the microbatch slices.
    // CHECK-NEXT: %[[IDS:.*]] = rt.input "input_ids" bound 16 : memref<4x2xi64>
    %ids: tensor<4x2xi64> {tpc.input = "input_ids"},
    // CHECK-NEXT: %[[LABELS:.*]] = rt.input "labels" bound 16 : memref<4x2xi64>
    %labels: tensor<4x2xi64> {tpc.input = "labels"},
    // CHECK-NEXT: %[[STEP:.*]] = rt.input "step" : memref<i64>
    %step: tensor<i64> {tpc.input = "step"},
    // CHECK-NEXT: %[[M:.*]] = rt.state "exp_avg" of "w" : memref<8x16xf32>
    %m: tensor<8x16xf32> {tpc.state = {name = "exp_avg", param = "w"}},
    // CHECK-NEXT: %[[V:.*]] = rt.state "exp_avg_sq" of "w" : memref<8x16xf32>
    %v: tensor<8x16xf32> {tpc.state = {name = "exp_avg_sq", param = "w"}},
    // CHECK-NEXT: %[[TABLE:.*]] = rt.input "table" : memref<16x8xf32>
    %table: tensor<16x8xf32> {tpc.input = "table"})
    -> (tensor<f32> {tpc.output = "loss"}, tensor<f32> {tpc.output = "grad_norm"},
        tensor<f32> {tpc.output = "lr"},
        tensor<8xf32> {tpc.grad = "g"}, tensor<8x16xf32> {tpc.grad = "w"},
        tensor<8xf32> {tpc.update = "g"}, tensor<8x16xf32> {tpc.update = "w"},
        tensor<8x16xf32> {tpc.state = {name = "exp_avg", param = "w"}},
        tensor<8x16xf32> {tpc.state = {name = "exp_avg_sq", param = "w"}}) {
  // The SGD update of g has no momentum buffer, and gets none (torch keeps
  // no state without momentum): no rt.state for it.
  // CHECK-NOT: rt.state "momentum"
  %block0 = arith.constant dense<0> : tensor<i64>
  %block1 = arith.constant dense<1> : tensor<i64>

  // CHECK: rt.kernel count_targets(%[[LABELS]]) -> (%[[TOTAL:.*]]) ints [-100] : memref<4x2xi64> -> memref<i64>
  %total = tpc.count_targets %labels : tensor<4x2xi64>
  // CHECK: rt.kernel inverse_count(%[[TOTAL]]) -> (%[[DSUM:.*]]) : memref<i64> -> memref<f32>
  %dsum = tpc.inverse_count %total

  // Microbatch 1 of 2: rows [2, 4). The whole tensor is the same buffer.
  // CHECK: rt.kernel slice(%[[IDS]]) -> (%[[MBIDS:.*]]) ints [0, 2, 2] : memref<4x2xi64> -> memref<2x2xi64>
  %mbids = tensor.extract_slice %ids[2, 0] [2, 2] [1, 1] : tensor<4x2xi64> to tensor<2x2xi64>
  // CHECK: rt.kernel slice(%[[LABELS]]) -> (%[[MBLABELS:.*]]) ints [0, 2, 2] :
  %mblabels = tensor.extract_slice %labels[2, 0] [2, 2] [1, 1] : tensor<4x2xi64> to tensor<2x2xi64>
  %all = tensor.extract_slice %labels[0, 0] [4, 2] [1, 1] : tensor<4x2xi64> to tensor<4x2xi64>
  // CHECK: rt.kernel count_targets(%[[LABELS]])
  %total2 = tpc.count_targets %all : tensor<4x2xi64>

  %x = tpc.embedding %table[%mbids] : tensor<16x8xf32>, tensor<2x2xi64>
  // CHECK: rt.kernel cast(%[[G]]) -> (%[[GH:.*]]) : memref<8xf32> -> memref<8xbf16>
  %gh = tpc.cast %g : tensor<8xf32> to tensor<8xbf16>
  %xh = tpc.cast %x : tensor<2x2x8xf32> to tensor<2x2x8xbf16>
  %norm16 = tpc.rms_norm %xh, %gh eps 1.000000e-06 : tensor<2x2x8xbf16>, tensor<8xbf16>
  // Block 1 of a [2, 2, 8] mask: first index 32.
  // CHECK: rt.kernel dropout_mask() -> (%[[MASK:.*]]) ints [3, 32] floats [1.000000e-01] :  -> memref<2x2x8xi8>
  %mask = tpc.dropout_mask rate 1.000000e-01 stream 3 block %block1 : tensor<2x2x8xi8>
  // Without a block: the whole tensor from index 0.
  // CHECK: rt.kernel dropout_mask() -> (%{{.*}}) ints [4] floats [2.000000e-01] :  -> memref<8xi8>
  %mask8 = tpc.dropout_mask rate 2.000000e-01 stream 4 : tensor<8xi8>
  // CHECK: rt.kernel apply_mask(%{{.*}}, %[[MASK]]) -> (%[[XD:.*]]) floats [1.000000e-01] :
  %xd = tpc.apply_mask %x, %mask rate 1.000000e-01 : tensor<2x2x8xf32>, tensor<2x2x8xi8>
  // CHECK: rt.kernel linear(%[[XD]], %[[TABLE]]) -> (%[[LOGITS:.*]]) flags 1 :
  %logits = tpc.linear %xd, %table layout out_in : tensor<2x2x8xf32>, tensor<16x8xf32>
  %sum, %count = tpc.cross_entropy %logits, %mblabels : tensor<2x2x16xf32>, tensor<2x2xi64>
  // CHECK: rt.kernel loss_mean
  %loss = tpc.loss_mean %sum, %total

  // CHECK: rt.kernel cross_entropy_grad(%[[LOGITS]], %[[MBLABELS]], %[[DSUM]]) -> (%[[DLOGITS:.*]]) ints [-100] : memref<2x2x16xf32>, memref<2x2xi64>, memref<f32> -> memref<2x2x16xf32>
  %dlogits = tpc.cross_entropy_grad %logits, %mblabels, %dsum : tensor<2x2x16xf32>, tensor<2x2xi64>
  // CHECK: rt.kernel linear_input_grad(%[[DLOGITS]], %[[TABLE]]) -> (%[[DXD:.*]]) flags 1 : memref<2x2x16xf32>, memref<16x8xf32> -> memref<2x2x8xf32>
  %dxd = tpc.linear_input_grad %dlogits, %table layout out_in : tensor<2x2x16xf32>, tensor<16x8xf32>
  // CHECK: rt.kernel apply_mask(%[[DXD]], %[[MASK]]) -> (%[[DX:.*]]) floats [1.000000e-01] :
  %dx = tpc.apply_mask %dxd, %mask rate 1.000000e-01 : tensor<2x2x8xf32>, tensor<2x2x8xi8>
  // CHECK: rt.kernel embedding_grad(%[[DX]], %[[MBIDS]]) -> (%{{.*}}) : memref<2x2x8xf32>, memref<2x2xi64> -> memref<16x8xf32>
  %dtable = tpc.embedding_grad %dx[%mbids] : tensor<2x2x8xf32>, tensor<2x2xi64> -> tensor<16x8xf32>
  // CHECK: rt.kernel linear_weight_grad(%[[XD]], %{{.*}}) -> (%[[DW:.*]]) : memref<2x2x8xf32>, memref<2x2x16xf32> -> memref<8x16xf32>
  %dw = tpc.linear_weight_grad %xd, %dlogits layout in_out : tensor<2x2x8xf32>, tensor<2x2x16xf32> -> tensor<8x16xf32>
  // CHECK: rt.kernel sum_to(%[[DX]]) -> (%{{.*}}) : memref<2x2x8xf32> -> memref<8xf32>
  %db = tpc.sum_to %dx : tensor<2x2x8xf32> -> tensor<8xf32>
  // CHECK: rt.kernel layer_norm_input_grad(%[[DX]], %[[XD]], %[[G]]) -> (%{{.*}}) floats [1.000000e-05] :
  %dln = tpc.layer_norm_input_grad %dx, %xd, %g eps 1.000000e-05 : tensor<2x2x8xf32>, tensor<8xf32>
  // CHECK: rt.kernel layer_norm_param_grad(%[[DX]], %[[XD]]) -> (%[[DG:.*]], %{{.*}}) floats [1.000000e-05] :
  %dg, %dbeta = tpc.layer_norm_param_grad %dx, %xd eps 1.000000e-05 : tensor<2x2x8xf32> -> tensor<8xf32>, tensor<8xf32>
  // CHECK: rt.kernel rms_norm_input_grad(%[[DX]], %[[XD]], %[[G]]) -> (%{{.*}}) floats [1.000000e-06] :
  %drms = tpc.rms_norm_input_grad %dx, %xd, %g eps 1.0e-06 : tensor<2x2x8xf32>, tensor<8xf32>
  // CHECK: rt.kernel rms_norm_param_grad(%[[DX]], %[[XD]]) -> (%{{.*}}) floats [1.000000e-06] :
  %drmsw = tpc.rms_norm_param_grad %dx, %xd eps 1.0e-06 : tensor<2x2x8xf32> -> tensor<8xf32>
  // CHECK: rt.kernel gelu_grad(%[[DX]], %[[XD]]) -> (%{{.*}}) flags 1 :
  %dgelu = tpc.gelu_grad %dx, %xd tanh : tensor<2x2x8xf32>
  // CHECK: rt.kernel gelu_grad(%[[DX]], %[[XD]]) -> (%{{.*}}) :
  %dgelu2 = tpc.gelu_grad %dx, %xd erf : tensor<2x2x8xf32>
  // CHECK: rt.kernel silu_grad(%[[DX]], %[[XD]]) -> (%{{.*}}) :
  %dsilu = tpc.silu_grad %dx, %xd : tensor<2x2x8xf32>
  // CHECK: rt.kernel softmax_grad(%[[DX]], %[[XD]]) -> (%{{.*}}) :
  %dsm = tpc.softmax_grad %dx, %xd : tensor<2x2x8xf32>

  // Attention: block 1 of probabilities [2, 2, 2, 2] starts at 16.
  %q = tpc.reshape %x : tensor<2x2x8xf32> -> tensor<2x2x2x4xf32>
  // CHECK: rt.kernel attention(%[[Q:.*]], %[[Q]], %[[Q]]) -> (%{{.*}}) ints [5, 16] floats [5.000000e-01, 1.000000e-01] flags 1 :
  %o = tpc.attention %q, %q, %q causal scale 5.000000e-01 dropout 1.000000e-01 stream 5 block %block1 : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
  // CHECK: rt.kernel attention_grad(%{{.*}}, %[[Q]], %[[Q]], %[[Q]]) -> (%[[DQ:.*]], %{{.*}}, %{{.*}}) ints [5, 16] floats [5.000000e-01, 1.000000e-01] flags 1 :
  %dq, %dk, %dv = tpc.attention_grad %o, %q, %q, %q causal scale 5.000000e-01 dropout 1.000000e-01 stream 5 block %block1 : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
  // Without dropout the stream is 0 and no block is drawn from.
  // CHECK: rt.kernel attention_grad(%{{.*}}) -> (%{{.*}}, %{{.*}}, %{{.*}}) ints [0] floats [5.000000e-01, 0.000000e+00] :
  %eq, %ek, %ev = tpc.attention_grad %o, %q, %q, %q scale 5.000000e-01 : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
  // The inverse rotation: rotary with flag 1.
  // CHECK: rt.kernel rotary(%[[DQ]]) -> (%{{.*}}) ints [3] floats [1.000000e+04] flags 1 :
  %dqr = tpc.rotary_grad %dq theta 1.000000e+04 offset 3 : tensor<2x2x2x4xf32>
  // CHECK: rt.kernel pad(%[[DQ]]) -> (%{{.*}}) ints [1, 1] : memref<2x2x2x4xf32> -> memref<2x4x2x4xf32>
  %dqp = tpc.pad %dq dim 1 offset 1 to 4 : tensor<2x2x2x4xf32>
  // CHECK: rt.kernel sum_groups(%[[DQ]]) -> (%{{.*}}) ints [1, 2] : memref<2x2x2x4xf32> -> memref<2x1x2x4xf32>
  %dqs = tpc.sum_groups %dq dim 1 times 2 : tensor<2x2x2x4xf32>

  // The optimizer.
  // CHECK: rt.kernel sum_squares(%[[DG]], %[[DW]]) -> (%[[SS:.*]]) : memref<8xf32>, memref<8x16xf32> -> memref<f32>
  %ss = tpc.sum_squares %dg, %dw : tensor<8xf32>, tensor<8x16xf32>
  // CHECK: rt.kernel clip_coefficient(%[[SS]]) -> (%[[NORM:.*]], %[[COEF:.*]]) floats [1.000000e+00] : memref<f32> -> memref<f32>, memref<f32>
  %norm, %coef = tpc.clip_coefficient %ss max_norm 1.000000e+00
  // CHECK: rt.kernel lr_schedule(%[[STEP]]) -> (%[[LR:.*]]) ints [2, 10] floats [1.000000e-03, 1.000000e-04] flags 1 : memref<i64> -> memref<f32>
  %lr = tpc.lr_schedule %step cosine lr 1.000000e-03 min_lr 1.000000e-04 warmup 2 total 10
  // CHECK: rt.kernel lr_schedule(%[[STEP]]) -> (%{{.*}}) ints [0, 0] floats [1.000000e-03, 0.000000e+00] : memref<i64> -> memref<f32>
  %lrc = tpc.lr_schedule %step constant lr 1.000000e-03
  // CHECK: rt.kernel adamw_update(%[[W]], %[[DW]], %[[M]], %[[V]], %[[LR]], %[[STEP]], %[[COEF]]) -> (%[[W]], %[[M]], %[[V]]) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] :
  %w1, %m1, %v1 = tpc.adamw_update %w, %dw, %m, %v lr %lr step %step scale %coef beta1 9.000000e-01 beta2 9.990000e-01 eps 1.000000e-08 weight_decay 1.000000e-02 : tensor<8x16xf32>
  // CHECK: rt.kernel sgd_update_plain(%[[G]], %[[DG]], %[[LR]]) -> (%[[G]]) floats [0.000000e+00] :
  %g1 = tpc.sgd_update %g, %dg lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>

  // CHECK: rt.output "loss"
  // CHECK-NEXT: rt.output "grad_norm" %[[NORM]] : memref<f32>
  // CHECK-NEXT: rt.output "lr" %[[LR]] : memref<f32>
  // CHECK-NEXT: rt.grad "g" %[[DG]] : memref<8xf32>
  // CHECK-NEXT: rt.grad "w" %[[DW]] : memref<8x16xf32>
  // CHECK-NEXT: }
  return %loss, %norm, %lr, %dg, %dw, %g1, %w1, %m1, %v1
      : tensor<f32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8x16xf32>,
        tensor<8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
