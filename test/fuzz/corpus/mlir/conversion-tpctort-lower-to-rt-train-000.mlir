func.func @train_step(
    %g: tensor<8xf32> {tpc.param = "g"},
    %w: tensor<8x16xf32> {tpc.param = "w"},
    %ids: tensor<4x2xi64> {tpc.input = "input_ids"},
    %labels: tensor<4x2xi64> {tpc.input = "labels"},
    %step: tensor<i64> {tpc.input = "step"},
    %m: tensor<8x16xf32> {tpc.state = {name = "exp_avg", param = "w"}},
    %v: tensor<8x16xf32> {tpc.state = {name = "exp_avg_sq", param = "w"}},
    %table: tensor<16x8xf32> {tpc.input = "table"})
    -> (tensor<f32> {tpc.output = "loss"}, tensor<f32> {tpc.output = "grad_norm"},
        tensor<f32> {tpc.output = "lr"},
        tensor<8xf32> {tpc.grad = "g"}, tensor<8x16xf32> {tpc.grad = "w"},
        tensor<8xf32> {tpc.update = "g"}, tensor<8x16xf32> {tpc.update = "w"},
        tensor<8x16xf32> {tpc.state = {name = "exp_avg", param = "w"}},
        tensor<8x16xf32> {tpc.state = {name = "exp_avg_sq", param = "w"}}) {
  %block0 = arith.constant dense<0> : tensor<i64>
  %block1 = arith.constant dense<1> : tensor<i64>

  %total = tpc.count_targets %labels : tensor<4x2xi64>
  %dsum = tpc.inverse_count %total

  %mbids = tensor.extract_slice %ids[2, 0] [2, 2] [1, 1] : tensor<4x2xi64> to tensor<2x2xi64>
  %mblabels = tensor.extract_slice %labels[2, 0] [2, 2] [1, 1] : tensor<4x2xi64> to tensor<2x2xi64>
  %all = tensor.extract_slice %labels[0, 0] [4, 2] [1, 1] : tensor<4x2xi64> to tensor<4x2xi64>
  %total2 = tpc.count_targets %all : tensor<4x2xi64>

  %x = tpc.embedding %table[%mbids] : tensor<16x8xf32>, tensor<2x2xi64>
  %gh = tpc.cast %g : tensor<8xf32> to tensor<8xbf16>
  %xh = tpc.cast %x : tensor<2x2x8xf32> to tensor<2x2x8xbf16>
  %norm16 = tpc.rms_norm %xh, %gh eps 1.000000e-06 : tensor<2x2x8xbf16>, tensor<8xbf16>
  %mask = tpc.dropout_mask rate 1.000000e-01 stream 3 block %block1 : tensor<2x2x8xi8>
  %mask8 = tpc.dropout_mask rate 2.000000e-01 stream 4 : tensor<8xi8>
  %xd = tpc.apply_mask %x, %mask rate 1.000000e-01 : tensor<2x2x8xf32>, tensor<2x2x8xi8>
  %logits = tpc.linear %xd, %table layout out_in : tensor<2x2x8xf32>, tensor<16x8xf32>
  %sum, %count = tpc.cross_entropy %logits, %mblabels : tensor<2x2x16xf32>, tensor<2x2xi64>
  %loss = tpc.loss_mean %sum, %total

  %dlogits = tpc.cross_entropy_grad %logits, %mblabels, %dsum : tensor<2x2x16xf32>, tensor<2x2xi64>
  %dxd = tpc.linear_input_grad %dlogits, %table layout out_in : tensor<2x2x16xf32>, tensor<16x8xf32>
  %dx = tpc.apply_mask %dxd, %mask rate 1.000000e-01 : tensor<2x2x8xf32>, tensor<2x2x8xi8>
  %dtable = tpc.embedding_grad %dx[%mbids] : tensor<2x2x8xf32>, tensor<2x2xi64> -> tensor<16x8xf32>
  %dw = tpc.linear_weight_grad %xd, %dlogits layout in_out : tensor<2x2x8xf32>, tensor<2x2x16xf32> -> tensor<8x16xf32>
  %db = tpc.sum_to %dx : tensor<2x2x8xf32> -> tensor<8xf32>
  %dln = tpc.layer_norm_input_grad %dx, %xd, %g eps 1.000000e-05 : tensor<2x2x8xf32>, tensor<8xf32>
  %dg, %dbeta = tpc.layer_norm_param_grad %dx, %xd eps 1.000000e-05 : tensor<2x2x8xf32> -> tensor<8xf32>, tensor<8xf32>
  %drms = tpc.rms_norm_input_grad %dx, %xd, %g eps 1.0e-06 : tensor<2x2x8xf32>, tensor<8xf32>
  %drmsw = tpc.rms_norm_param_grad %dx, %xd eps 1.0e-06 : tensor<2x2x8xf32> -> tensor<8xf32>
  %dgelu = tpc.gelu_grad %dx, %xd tanh : tensor<2x2x8xf32>
  %dgelu2 = tpc.gelu_grad %dx, %xd erf : tensor<2x2x8xf32>
  %dsilu = tpc.silu_grad %dx, %xd : tensor<2x2x8xf32>
  %dsm = tpc.softmax_grad %dx, %xd : tensor<2x2x8xf32>

  %q = tpc.reshape %x : tensor<2x2x8xf32> -> tensor<2x2x2x4xf32>
  %o = tpc.attention %q, %q, %q causal scale 5.000000e-01 dropout 1.000000e-01 stream 5 block %block1 : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
  %dq, %dk, %dv = tpc.attention_grad %o, %q, %q, %q causal scale 5.000000e-01 dropout 1.000000e-01 stream 5 block %block1 : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
  %eq, %ek, %ev = tpc.attention_grad %o, %q, %q, %q scale 5.000000e-01 : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32>
  %dqr = tpc.rotary_grad %dq theta 1.000000e+04 offset 3 : tensor<2x2x2x4xf32>
  %dqp = tpc.pad %dq dim 1 offset 1 to 4 : tensor<2x2x2x4xf32>
  %dqs = tpc.sum_groups %dq dim 1 times 2 : tensor<2x2x2x4xf32>

  %ss = tpc.sum_squares %dg, %dw : tensor<8xf32>, tensor<8x16xf32>
  %norm, %coef = tpc.clip_coefficient %ss max_norm 1.000000e+00
  %lr = tpc.lr_schedule %step cosine lr 1.000000e-03 min_lr 1.000000e-04 warmup 2 total 10
  %lrc = tpc.lr_schedule %step constant lr 1.000000e-03
  %w1, %m1, %v1 = tpc.adamw_update %w, %dw, %m, %v lr %lr step %step scale %coef beta1 9.000000e-01 beta2 9.990000e-01 eps 1.000000e-08 weight_decay 1.000000e-02 : tensor<8x16xf32>
  %g1 = tpc.sgd_update %g, %dg lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>

  return %loss, %norm, %lr, %dg, %dw, %g1, %w1, %m1, %v1
      : tensor<f32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8x16xf32>,
        tensor<8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
