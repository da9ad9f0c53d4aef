// tpc-optimizer appends the update to @train_step.
// RUN: tpc-opt %s --tpc-autodiff --tpc-optimizer="decay-exclude=bias,norm grad-clip=1.0" \
// RUN:   | FileCheck %s --check-prefix=ADAMW
// RUN: tpc-opt %s --tpc-autodiff \
// RUN:   --tpc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 lr-schedule=cosine warmup-steps=10 total-steps=100 min-lr=0.01" \
// RUN:   | FileCheck %s --check-prefix=SGD
// RUN: tpc-opt %s --tpc-autodiff --tpc-optimizer="optimizer=sgd lr=0.1" | FileCheck %s --check-prefix=PLAIN

// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="optimizer=adam" 2>&1 | FileCheck %s --check-prefix=ERR-BADOPT
// ERR-BADOPT: error: tpc-optimizer: optimizer 'adam' is not adamw or sgd
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="lr-schedule=linear" 2>&1 | FileCheck %s --check-prefix=ERR-BADSCHED
// ERR-BADSCHED: error: tpc-optimizer: lr-schedule 'linear' is not constant or cosine
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="lr-schedule=cosine warmup-steps=10 total-steps=10" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERR-TOTAL
// ERR-TOTAL: error: tpc-optimizer: lr-schedule cosine needs total-steps (10) greater than warmup-steps (10)
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="warmup-steps=5" 2>&1 | FileCheck %s --check-prefix=ERR-WARMUP
// ERR-WARMUP: error: tpc-optimizer: warmup-steps 5 needs lr-schedule cosine
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="lr=-0.5" 2>&1 | FileCheck %s --check-prefix=ERR-LR
// ERR-LR: error: tpc-optimizer: lr -0.5 must be non-negative and finite
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="beta1=1" 2>&1 | FileCheck %s --check-prefix=ERR-BETA
// ERR-BETA: error: tpc-optimizer: beta1 1 is outside [0, 1)
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="grad-clip=-1" 2>&1 | FileCheck %s --check-prefix=ERR-CLIP
// ERR-CLIP: error: tpc-optimizer: grad-clip -1 must be non-negative and finite (0: no clipping)
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer="lr-schedule=cosine total-steps=10 min-lr=0.5" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERR-MINLR
// ERR-MINLR: error: tpc-optimizer: min-lr 0.5 is outside [0, lr = 0.001]
// RUN: not tpc-opt %s --tpc-optimizer 2>&1 | FileCheck %s --check-prefix=ERR-NOSTEP
// ERR-NOSTEP: error: tpc-optimizer: no func.func @train_step (run tpc-autodiff first)
// RUN: not tpc-opt %s --tpc-autodiff --tpc-optimizer --tpc-optimizer 2>&1 | FileCheck %s --check-prefix=ERR-TWICE
// ERR-TWICE: error: tpc-optimizer: @train_step already has an optimizer

func.func @forward(%w: tensor<16x8xf32> {tpc.param = "wte.weight"},
                   %g: tensor<8xf32> {tpc.param = "norm.weight"},
                   %b: tensor<8xf32> {tpc.param = "norm.bias"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %n = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %h = tpc.linear %n, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// AdamW: the step input, then exp_avg and exp_avg_sq per parameter.
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %[[W:arg0]]: tensor<16x8xf32> {tpc.param = "wte.weight"}, %[[G:arg1]]: tensor<8xf32> {tpc.param = "norm.weight"}, %[[B:arg2]]: tensor<8xf32> {tpc.param = "norm.bias"},
// ADAMW-SAME: %arg3: tensor<2x4xi64> {tpc.input = "input_ids"}, %arg4: tensor<2x4xi64> {tpc.input = "labels"}, %[[STEP:arg5]]: tensor<i64> {tpc.input = "step"},
// ADAMW-SAME: %[[WM:arg6]]: tensor<16x8xf32> {tpc.state = {name = "exp_avg", param = "wte.weight"}}, %[[WV:arg7]]: tensor<16x8xf32> {tpc.state = {name = "exp_avg_sq", param = "wte.weight"}},
// ADAMW-SAME: %[[GM:arg8]]: tensor<8xf32> {tpc.state = {name = "exp_avg", param = "norm.weight"}}, %[[GV:arg9]]: tensor<8xf32> {tpc.state = {name = "exp_avg_sq", param = "norm.weight"}},
// ADAMW-SAME: %[[BM:arg10]]: tensor<8xf32> {tpc.state = {name = "exp_avg", param = "norm.bias"}}, %[[BV:arg11]]: tensor<8xf32> {tpc.state = {name = "exp_avg_sq", param = "norm.bias"}})
// ADAMW-SAME: -> (tensor<f32> {tpc.output = "loss"}, tensor<f32> {tpc.output = "grad_norm"}, tensor<f32> {tpc.output = "lr"},
// ADAMW-SAME: tensor<16x8xf32> {tpc.grad = "wte.weight"}, tensor<8xf32> {tpc.grad = "norm.weight"}, tensor<8xf32> {tpc.grad = "norm.bias"},
// ADAMW-SAME: tensor<16x8xf32> {tpc.update = "wte.weight"}, tensor<8xf32> {tpc.update = "norm.weight"}, tensor<8xf32> {tpc.update = "norm.bias"},
// ADAMW-SAME: tensor<16x8xf32> {tpc.state = {name = "exp_avg", param = "wte.weight"}}, tensor<16x8xf32> {tpc.state = {name = "exp_avg_sq", param = "wte.weight"}},
// ADAMW-SAME: tensor<8xf32> {tpc.state = {name = "exp_avg", param = "norm.weight"}}, tensor<8xf32> {tpc.state = {name = "exp_avg_sq", param = "norm.weight"}},
// ADAMW-SAME: tensor<8xf32> {tpc.state = {name = "exp_avg", param = "norm.bias"}}, tensor<8xf32> {tpc.state = {name = "exp_avg_sq", param = "norm.bias"}})
// ADAMW: %[[LOOP:.*]]:4 = scf.for
// ADAMW: %[[LOSS:.*]] = tpc.loss_mean %[[LOOP]]#0,
// The norm counts the tied table once.
// ADAMW: %[[SS:.*]] = tpc.sum_squares %[[LOOP]]#1, %[[LOOP]]#2, %[[LOOP]]#3 : tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>
// ADAMW: %[[NORM:.*]], %[[CLIP:.*]] = tpc.clip_coefficient %[[SS]] max_norm 1.000000e+00
// ADAMW: %[[LR:.*]] = tpc.lr_schedule %[[STEP]] constant lr 1.000000e-03
// ADAMW: %[[W1:.*]], %[[WM1:.*]], %[[WV1:.*]] = tpc.adamw_update %[[W]], %[[LOOP]]#1, %[[WM]], %[[WV]] lr %[[LR]] step %[[STEP]] scale %[[CLIP]] beta1 9.000000e-01 beta2 0.99899999999999999 eps 1.000000e-08 weight_decay 1.000000e-02 : tensor<16x8xf32>
// decay-exclude: names containing "bias" or "norm" get no decay.
// ADAMW: %[[G1:.*]], %[[GM1:.*]], %[[GV1:.*]] = tpc.adamw_update %[[G]], %[[LOOP]]#2, %[[GM]], %[[GV]] {{.*}} weight_decay 0.000000e+00 : tensor<8xf32>
// ADAMW: %[[B1:.*]], %[[BM1:.*]], %[[BV1:.*]] = tpc.adamw_update %[[B]], %[[LOOP]]#3, %[[BM]], %[[BV]] {{.*}} weight_decay 0.000000e+00 : tensor<8xf32>
// ADAMW: return %[[LOSS]], %[[NORM]], %[[LR]], %[[LOOP]]#1, %[[LOOP]]#2, %[[LOOP]]#3, %[[W1]], %[[G1]], %[[B1]], %[[WM1]], %[[WV1]], %[[GM1]], %[[GV1]], %[[BM1]], %[[BV1]] :

// SGD with momentum: one buffer per parameter, no clipping, weight decay 0
// by default (as torch.optim.SGD), cosine schedule with warm-up.
// SGD-LABEL: func.func @train_step(
// SGD-SAME: %[[STEP:arg5]]: tensor<i64> {tpc.input = "step"}, %[[WB:arg6]]: tensor<16x8xf32> {tpc.state = {name = "momentum", param = "wte.weight"}},
// SGD-SAME: %arg7: tensor<8xf32> {tpc.state = {name = "momentum", param = "norm.weight"}}, %arg8: tensor<8xf32> {tpc.state = {name = "momentum", param = "norm.bias"}})
// Without clipping the coefficient is unused (the op still gives the norm),
// and the norm comes after the updates (they read the gradients first: the
// CUDA device sums the squares in the updates' pass).
// SGD-NOT: tpc.sum_squares
// SGD: %[[LR:.*]] = tpc.lr_schedule %[[STEP]] cosine lr 1.000000e-01 min_lr 1.000000e-02 warmup 10 total 100
// SGD-NOT: scale
// SGD: tpc.sgd_update %arg0, %{{.*}} momentum_buffer %[[WB]] lr %[[LR]] momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
// SGD-COUNT-2: tpc.sgd_update
// SGD-NEXT: %[[SS:.*]] = tpc.sum_squares
// SGD-NEXT: %[[NORM:.*]], %{{.*}} = tpc.clip_coefficient %[[SS]] max_norm 0.000000e+00
// SGD: return %{{.*}}, %[[NORM]], %[[LR]],

// SGD without momentum keeps no state.
// PLAIN-LABEL: func.func @train_step(
// PLAIN-SAME: %arg5: tensor<i64> {tpc.input = "step"})
// PLAIN-NOT: tpc.state
// PLAIN: tpc.sgd_update %arg0, %{{.*}} lr %{{.*}} momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<16x8xf32>, tensor<16x8xf32>
// PLAIN-NOT: momentum_buffer
// PLAIN: return
