// Mixed precision: a bf16 model trains on f32 master weights; activations
// and their gradients (F, B) are bf16, parameter gradients (W) and their
// accumulation over microbatches f32.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 4 --num-layers 1 --dtype bf16 \
// RUN:   | tpc-opt --tpc-autodiff=microbatches=2 | FileCheck %s

// CHECK-LABEL: func.func @train_F(
// CHECK-SAME: %arg0: tensor<256x64xbf16> {tpc.param = "transformer.wte.weight"}
// CHECK: tpc.linear {{.*}} : tensor<2x8x64xbf16>, tensor<64x3x4x16xbf16>, tensor<3x4x16xbf16>
// The loss sum is f32 whatever the logits' type.
// CHECK: tpc.cross_entropy %{{.*}} : tensor<2x8x256xbf16>, tensor<2x8xi64>
// CHECK-NEXT: return %{{.*}} : tensor<f32>, tensor<i64>

// CHECK-LABEL: func.func @train_B(
// CHECK-NOT: f32>
// CHECK-SAME: %arg19: tensor<f32>
// CHECK: tpc.cross_entropy_grad %{{.*}} : tensor<2x8x256xbf16>, tensor<2x8xi64>
// CHECK: tpc.linear_input_grad %{{.*}} : tensor<2x8x256xbf16>, tensor<256x64xbf16>
// CHECK: tpc.attention_grad {{.*}} : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
// The norms' parameter gradients, computed in B, are f32 too (no cast).
// CHECK: tpc.layer_norm_param_grad %{{.*}} : tensor<2x8x64xbf16> -> tensor<64xf32>, tensor<64xf32>
// CHECK-NEXT: tpc.layer_norm_input_grad
// CHECK: return {{.*}} : tensor<2x8x256xbf16>, {{.*}}, tensor<64xf32>, tensor<64xf32>

// W reads bf16 activations and dYs and writes f32 gradients, with no cast:
// the gradient ops produce f32 themselves.
// CHECK-LABEL: func.func @train_W(
// CHECK-SAME: -> (tensor<256x64xf32> {tpc.grad = "transformer.wte.weight"}, tensor<64x64xf32> {tpc.grad = "transformer.wpe.weight"}
// CHECK-NOT: tpc.cast
// CHECK: tpc.linear_weight_grad %{{.*}} layout out_in : tensor<2x8x64xbf16>, tensor<2x8x256xbf16> -> tensor<256x64xf32>
// CHECK-NOT: param_grad
// CHECK: tpc.sum_to %{{.*}} : tensor<2x8x64xbf16> -> tensor<64xf32>
// CHECK: tpc.sum_to %{{.*}} : tensor<2x8x64xbf16> -> tensor<8x64xf32>
// CHECK: tpc.pad %{{.*}} dim 0 offset 0 to 64 : tensor<8x64xf32>
// CHECK: tpc.embedding_grad %{{.*}} : tensor<2x8x64xbf16>, tensor<2x8xi64> -> tensor<256x64xf32>
// CHECK: tpc.add %{{.*}} : tensor<256x64xf32>, tensor<256x64xf32>
// CHECK-NOT: tpc.cast
// CHECK: return

// The driver takes f32 master weights and casts them once per step, outside
// the microbatch loop.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %arg0: tensor<256x64xf32> {tpc.param = "transformer.wte.weight"}
// CHECK-SAME: %arg4: tensor<64x3x4x16xf32> {tpc.hf_shape = array<i64: 64, 192>, tpc.param = "transformer.h.0.attn.c_attn.weight"}
// CHECK-SAME: -> (tensor<f32> {tpc.output = "loss"}, tensor<256x64xf32> {tpc.grad = "transformer.wte.weight"}
// CHECK: %[[WTE:.*]] = tpc.cast %arg0 : tensor<256x64xf32> to tensor<256x64xbf16>
// CHECK-COUNT-15: tpc.cast %arg{{[0-9]+}} : tensor<{{.*}}xf32> to tensor<{{.*}}xbf16>
// CHECK: scf.for
// CHECK-NOT: tpc.cast
// CHECK: func.call @train_F(%[[WTE]],
// CHECK: tpc.add %{{.*}} : tensor<256x64xf32>, tensor<256x64xf32>
