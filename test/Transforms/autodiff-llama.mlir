// tpc-autodiff on Llama with grouped-query attention (8 query heads, 4 kv
// heads): fused and unfused attention, untied and tied head.
// RUN: tpc-import %S/../Import/Inputs/llama-gqa.json --seq 8 --batch 2 --num-layers 1 \
// RUN:   | tpc-opt --tpc-autodiff | FileCheck %s --check-prefixes=CHECK,FUSED,UNTIED
// RUN: tpc-import %S/../Import/Inputs/llama-gqa.json --seq 8 --batch 2 --num-layers 1 --attention unfused \
// RUN:   | tpc-opt --tpc-autodiff | FileCheck %s --check-prefixes=CHECK,UNFUSED,UNTIED
// RUN: tpc-import %S/../Import/Inputs/llama-tied.json --seq 8 --batch 2 --num-layers 1 \
// RUN:   | tpc-opt --tpc-autodiff | FileCheck %s --check-prefix=TIED

// No dropout in this config: no mask, no microbatch block.
// CHECK-LABEL: func.func @train_F(
// CHECK-NOT: dropout
// CHECK: tpc.cross_entropy
// CHECK: return

// CHECK-LABEL: func.func @train_B(
// CHECK: tpc.cross_entropy_grad
// CHECK: %[[DWF:.*]] = tpc.rms_norm_param_grad
// CHECK-NEXT: tpc.rms_norm_input_grad
// SwiGLU (up * silu(gate)): the product's operands read each other, up's
// gradient first, with silu(gate) recomputed from the stashed gate (not
// stashed itself); the silu's output gradient right before silu_grad,
// which reads the same gate.
// CHECK: %[[SILU:.*]] = tpc.silu %[[GATE:arg[0-9]+]] {tpc.layer = 0 : i64} : tensor<2x8x176xf32>
// CHECK-NEXT: %[[DUP:.*]] = tpc.mul %{{.*}}, %[[SILU]] {tpc.layer = 0 : i64} : tensor<2x8x176xf32>, tensor<2x8x176xf32>
// CHECK-NEXT: %[[DSILU:.*]] = tpc.mul %{{.*}}, %[[UP:arg[0-9]+]] {tpc.layer = 0 : i64} : tensor<2x8x176xf32>, tensor<2x8x176xf32>
// CHECK-NEXT: tpc.silu_grad %[[DSILU]], %[[GATE]] {tpc.layer = 0 : i64} : tensor<2x8x176xf32>
// Fused: one attention_grad gives kv-head-shaped dk and dv.
// FUSED: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tpc.attention_grad %{{.*}} causal scale 2.500000e-01 {tpc.layer = 0 : i64} : tensor<2x8x8x16xf32>, tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
// FUSED-NOT: sum_groups
// FUSED: tpc.rotary_grad %[[DK]] theta 5.000000e+05 {tpc.layer = 0 : i64} : tensor<2x4x8x16xf32>
// FUSED: tpc.rotary_grad %[[DQ]] theta 5.000000e+05 {tpc.layer = 0 : i64} : tensor<2x8x8x16xf32>
// Unfused: the repeated kv heads' gradients are summed per group.
// UNFUSED: tpc.softmax_grad
// UNFUSED: %[[DV8:.*]] = tpc.sum_groups %{{.*}} dim 1 times 2 {tpc.layer = 0 : i64} : tensor<2x8x8x16xf32>
// UNFUSED: %[[DK8:.*]] = tpc.sum_groups %{{.*}} dim 1 times 2 {tpc.layer = 0 : i64} : tensor<2x8x8x16xf32>
// UNFUSED: tpc.rotary_grad %[[DK8]] theta 5.000000e+05
// CHECK: tpc.linear_input_grad %{{.*}}, %arg2 layout out_in {tpc.layer = 0 : i64} : tensor<2x8x8x16xf32>, tensor<8x16x64xf32>
// The first layer's input gradient joins the residual stream's, and is
// the embedding's dY, the last thing B computes; then the norms' parameter
// gradients, computed in B.
// CHECK: %[[DW1:.*]] = tpc.rms_norm_param_grad
// CHECK-NEXT: tpc.rms_norm_input_grad
// CHECK-NEXT: %[[DEMBOUT:.*]] = tpc.add
// CHECK-NEXT: return {{.*}}, %[[DEMBOUT]], %[[DWF]], {{.*}}, %[[DW1]] :

// Untied: the head's gradient and the embedding's are separate results.
// UNTIED-LABEL: func.func @train_W(
// UNTIED: %[[DHEAD:.*]] = tpc.linear_weight_grad %{{.*}}, %{{.*}} layout out_in : tensor<2x8x64xf32>, tensor<2x8x256xf32> -> tensor<256x64xf32>
// The q/k/v projections read one stashed value (the norm's output).
// UNTIED: tpc.linear_weight_grad %[[NORM:arg[0-9]+]], %{{.*}} layout out_in {tpc.layer = 0 : i64} : tensor<2x8x64xf32>, tensor<2x8x4x16xf32> -> tensor<4x16x64xf32>
// UNTIED: tpc.linear_weight_grad %[[NORM]], %{{.*}} layout out_in {tpc.layer = 0 : i64} : tensor<2x8x64xf32>, tensor<2x8x4x16xf32> -> tensor<4x16x64xf32>
// UNTIED: tpc.linear_weight_grad %[[NORM]], %{{.*}} layout out_in {tpc.layer = 0 : i64} : tensor<2x8x64xf32>, tensor<2x8x8x16xf32> -> tensor<8x16x64xf32>
// UNTIED: %[[DEMB:.*]] = tpc.embedding_grad
// UNTIED-NOT: tpc.add
// UNTIED: return %[[DEMB]], {{.*}}, %[[DHEAD]] : tensor<256x64xf32>,
// UNTIED-LABEL: func.func @train_step(
// UNTIED-SAME: tensor<256x64xf32> {tpc.grad = "model.embed_tokens.weight"}
// UNTIED-SAME: tensor<256x64xf32> {tpc.grad = "lm_head.weight"})

// Tied: one parameter, the sum of both uses.
// TIED-LABEL: func.func @train_W(
// TIED: %[[DHEAD:.*]] = tpc.linear_weight_grad %{{.*}}, %{{.*}} layout out_in : tensor<2x8x64xf32>, tensor<2x8x256xf32> -> tensor<256x64xf32>
// TIED: %[[DEMB:.*]] = tpc.embedding_grad
// TIED: %[[SUM:.*]] = tpc.add %[[DHEAD]], %[[DEMB]] : tensor<256x64xf32>, tensor<256x64xf32>
// TIED: return %[[SUM]],
// TIED-LABEL: func.func @train_step(
// TIED-SAME: tensor<256x64xf32> {tpc.grad = "model.embed_tokens.weight"}
// TIED-NOT: lm_head
