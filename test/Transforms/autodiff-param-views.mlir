// A @forward whose parameters reach the loss through views (slice, cast,
// reshape, repeat) and through ops other than linear/norm/embedding (mul
// and batch_matmul with a parameter operand; also erf GeLU and a rotary
// with a position offset): W runs these ops' rules, with
// f32 gradients. A parameter view the backward reads is recomputed from the
// parameter, never stashed.
// (autodiff-numeric.test checks this module's gradients against autograd.)
// RUN: tpc-opt %s --tpc-autodiff | FileCheck %s

// No [2, 4, 4] view of "mix" in the stash.
// CHECK-LABEL: func.func @train_F(
// CHECK-SAME: -> (tensor<f32>, tensor<i64>
// CHECK-NOT: 2x4x4
// CHECK-SAME: {{\) \{$}}

// B reads the batch_matmul's rhs: it recomputes the view of "mix" (%arg3).
// CHECK-LABEL: func.func @train_B(
// CHECK: %[[M1:.*]] = tpc.reshape %arg3 : tensor<16xf32> -> tensor<1x4x4xf32>
// CHECK: %[[M2:.*]] = tpc.repeat %[[M1]] dim 0 times 2 : tensor<1x4x4xf32>
// CHECK: %[[M3:.*]] = tpc.cast %[[M2]] : tensor<2x4x4xf32> to tensor<2x4x4xbf16>
// CHECK: tpc.batch_matmul %{{.*}}, %[[M3]] scale 5.000000e-01 : tensor<2x8x4xbf16>, tensor<2x4x4xbf16>
// The cast's input gradient goes back to f32.
// CHECK: tpc.cast %{{.*}} : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
// CHECK: tpc.rotary_grad %{{.*}} theta 1.000000e+02 offset 3 : tensor<2x1x4x8xf32>
// CHECK: tpc.gelu_grad %{{.*}} erf : tensor<2x4x8xf32>
// CHECK: tpc.silu_grad
// CHECK: tpc.mul %{{.*}}, %arg1 : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK: return

// CHECK-LABEL: func.func @train_W(
// The batch_matmul's parameter operand (rhs, transposed): dR = s·dCᵀ·lhs,
// then back through cast, repeat and reshape to the stored [16].
// CHECK: %[[DR:.*]] = tpc.batch_matmul %{{.*}}, %{{.*}} transpose_lhs scale 5.000000e-01 : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
// CHECK: %[[DRF:.*]] = tpc.cast %[[DR]] : tensor<2x4x4xbf16> to tensor<2x4x4xf32>
// CHECK: %[[DM1:.*]] = tpc.sum_groups %[[DRF]] dim 0 times 2 : tensor<2x4x4xf32>
// CHECK: %[[DMIX:.*]] = tpc.reshape %[[DM1]] : tensor<1x4x4xf32> -> tensor<16xf32>
// The position rows 1..4, in f32, padded to the table.
// CHECK: %[[DP:.*]] = tpc.sum_to %{{.*}} : tensor<2x4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[DPOS:.*]] = tpc.pad %[[DP]] dim 0 offset 1 to 6 : tensor<4x8xf32>
// mul's broadcast parameter: dY·x summed over the leading dimensions.
// CHECK: %[[DX:.*]] = tpc.mul %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK: %[[DSCALE:.*]] = tpc.sum_to %[[DX]] : tensor<2x4x8xf32> -> tensor<8xf32>
// CHECK: return %{{.*}}, %[[DSCALE]], %[[DPOS]], %[[DMIX]], %{{.*}} : tensor<16x8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<16xf32>, tensor<8xf32>

module {
  func.func @forward(%wte: tensor<16x8xf32> {tpc.param = "wte"},
                     %scale: tensor<8xf32> {tpc.param = "scale"},
                     %pos: tensor<6x8xf32> {tpc.param = "pos"},
                     %mix: tensor<16xf32> {tpc.param = "mix"},
                     %norm: tensor<8xbf16> {tpc.param = "norm"},
                     %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                     %labels: tensor<2x4xi64> {tpc.input = "labels"})
      -> (tensor<f32> {tpc.output = "loss"}) {
    %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
    %y = tpc.mul %x, %scale : tensor<2x4x8xf32>, tensor<8xf32>
    %s0 = tpc.silu %y : tensor<2x4x8xf32>
    %g = tpc.gelu %s0 erf : tensor<2x4x8xf32>
    %r0 = tpc.reshape %g : tensor<2x4x8xf32> -> tensor<2x1x4x8xf32>
    %r1 = tpc.rotary %r0 theta 1.0e2 offset 3 : tensor<2x1x4x8xf32>
    %s = tpc.reshape %r1 : tensor<2x1x4x8xf32> -> tensor<2x4x8xf32>
    %z = tpc.cast %s : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
    %p = tpc.slice %pos dim 0 [1 : 4] : tensor<6x8xf32>
    %pb = tpc.cast %p : tensor<4x8xf32> to tensor<4x8xbf16>
    %a = tpc.add %z, %pb : tensor<2x4x8xbf16>, tensor<4x8xbf16>
    %t = tpc.transpose %a [0, 2, 1] : tensor<2x4x8xbf16>
    %m1 = tpc.reshape %mix : tensor<16xf32> -> tensor<1x4x4xf32>
    %m2 = tpc.repeat %m1 dim 0 times 2 : tensor<1x4x4xf32>
    %m3 = tpc.cast %m2 : tensor<2x4x4xf32> to tensor<2x4x4xbf16>
    %b = tpc.batch_matmul %t, %m3 transpose_rhs scale 0.5 : tensor<2x8x4xbf16>, tensor<2x4x4xbf16>
    %u = tpc.transpose %b [0, 2, 1] : tensor<2x8x4xbf16>
    %n = tpc.rms_norm %u, %norm eps 1.0e-06 : tensor<2x4x8xbf16>, tensor<8xbf16>
    %f = tpc.cast %n : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
    %h = tpc.linear %f, %wte layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
    %sum, %count = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
    %l = tpc.loss_mean %sum, %count
    return %l : tensor<f32>
  }
}
