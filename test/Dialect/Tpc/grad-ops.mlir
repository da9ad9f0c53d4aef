// Round trip of the backward and driver ops through the custom and the
// generic form. Results whose type is inferred are returned, so that the
// function signature checks the inferred type.
// RUN: tpc-opt %s | tpc-opt | FileCheck %s
// RUN: tpc-opt %s --mlir-print-op-generic | tpc-opt | FileCheck %s

// CHECK-LABEL: func.func @embedding_grad(
// CHECK: tpc.embedding_grad %{{.*}}[%{{.*}}] : tensor<4x32x64xbf16>, tensor<4x32xi64> -> tensor<256x64xf32>
func.func @embedding_grad(%dy: tensor<4x32x64xbf16>, %ids: tensor<4x32xi64>)
    -> tensor<256x64xf32> {
  %0 = tpc.embedding_grad %dy[%ids]
      : tensor<4x32x64xbf16>, tensor<4x32xi64> -> tensor<256x64xf32>
  return %0 : tensor<256x64xf32>
}

// GPT-2 c_attn ([hidden, 3, heads, head_dim], in_out) and a Llama q_proj
// ([heads, head_dim, hidden], out_in).
// CHECK-LABEL: func.func @linear_grads(
// CHECK: tpc.linear_input_grad %{{.*}}, %{{.*}} layout in_out : tensor<4x32x3x4x16xf32>, tensor<64x3x4x16xf32>
// CHECK: tpc.linear_weight_grad %{{.*}}, %{{.*}} layout in_out : tensor<4x32x64xf32>, tensor<4x32x3x4x16xf32> -> tensor<64x3x4x16xf32>
// CHECK: tpc.sum_to %{{.*}} : tensor<4x32x3x4x16xf32> -> tensor<3x4x16xf32>
// CHECK: tpc.linear_input_grad %{{.*}}, %{{.*}} layout out_in : tensor<4x32x8x16xbf16>, tensor<8x16x64xbf16>
// CHECK: tpc.linear_weight_grad %{{.*}}, %{{.*}} layout out_in : tensor<4x32x64xbf16>, tensor<4x32x8x16xbf16> -> tensor<8x16x64xf32>
// CHECK: return {{.*}} : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>, tensor<4x32x64xbf16>, tensor<8x16x64xf32>
func.func @linear_grads(%x: tensor<4x32x64xf32>, %w: tensor<64x3x4x16xf32>,
                        %dy: tensor<4x32x3x4x16xf32>,
                        %xq: tensor<4x32x64xbf16>, %wq: tensor<8x16x64xbf16>,
                        %dq: tensor<4x32x8x16xbf16>)
    -> (tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>,
        tensor<4x32x64xbf16>, tensor<8x16x64xf32>) {
  %dx = tpc.linear_input_grad %dy, %w layout in_out
      : tensor<4x32x3x4x16xf32>, tensor<64x3x4x16xf32>
  %dw = tpc.linear_weight_grad %x, %dy layout in_out
      : tensor<4x32x64xf32>, tensor<4x32x3x4x16xf32> -> tensor<64x3x4x16xf32>
  %db = tpc.sum_to %dy : tensor<4x32x3x4x16xf32> -> tensor<3x4x16xf32>
  %dxq = tpc.linear_input_grad %dq, %wq layout out_in
      : tensor<4x32x8x16xbf16>, tensor<8x16x64xbf16>
  %dwq = tpc.linear_weight_grad %xq, %dq layout out_in
      : tensor<4x32x64xbf16>, tensor<4x32x8x16xbf16> -> tensor<8x16x64xf32>
  return %dx, %dw, %db, %dxq, %dwq
      : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>,
        tensor<4x32x64xbf16>, tensor<8x16x64xf32>
}

// CHECK-LABEL: func.func @norm_grads(
// CHECK: tpc.layer_norm_input_grad %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<4x32x64xbf16>, tensor<64xbf16>
// CHECK: tpc.layer_norm_param_grad %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<4x32x64xbf16> -> tensor<64xf32>, tensor<64xf32>
// CHECK: tpc.rms_norm_input_grad %{{.*}}, %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<4x32x64xbf16>, tensor<64xbf16>
// CHECK: tpc.rms_norm_param_grad %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<4x32x64xbf16> -> tensor<64xf32>
// CHECK: return {{.*}} : tensor<4x32x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<4x32x64xbf16>, tensor<64xf32>
func.func @norm_grads(%dy: tensor<4x32x64xbf16>, %x: tensor<4x32x64xbf16>,
                      %w: tensor<64xbf16>)
    -> (tensor<4x32x64xbf16>, tensor<64xf32>, tensor<64xf32>,
        tensor<4x32x64xbf16>, tensor<64xf32>) {
  %dx = tpc.layer_norm_input_grad %dy, %x, %w eps 1.0e-05
      : tensor<4x32x64xbf16>, tensor<64xbf16>
  %dw, %db = tpc.layer_norm_param_grad %dy, %x eps 1.0e-05
      : tensor<4x32x64xbf16> -> tensor<64xf32>, tensor<64xf32>
  %rx = tpc.rms_norm_input_grad %dy, %x, %w eps 1.0e-06
      : tensor<4x32x64xbf16>, tensor<64xbf16>
  %rw = tpc.rms_norm_param_grad %dy, %x eps 1.0e-06
      : tensor<4x32x64xbf16> -> tensor<64xf32>
  return %dx, %dw, %db, %rx, %rw
      : tensor<4x32x64xbf16>, tensor<64xf32>, tensor<64xf32>,
        tensor<4x32x64xbf16>, tensor<64xf32>
}

// CHECK-LABEL: func.func @activation_grads(
// CHECK: tpc.gelu_grad %{{.*}}, %{{.*}} tanh : tensor<4x32x256xf32>
// CHECK: tpc.gelu_grad %{{.*}}, %{{.*}} erf : tensor<4x32x256xf32>
// CHECK: tpc.silu_grad %{{.*}}, %{{.*}} : tensor<4x32x256xf32>
// CHECK: tpc.softmax_grad %{{.*}}, %{{.*}} : tensor<4x4x32x32xf32>
func.func @activation_grads(%dy: tensor<4x32x256xf32>, %x: tensor<4x32x256xf32>,
                            %dp: tensor<4x4x32x32xf32>,
                            %p: tensor<4x4x32x32xf32>)
    -> (tensor<4x32x256xf32>, tensor<4x32x256xf32>, tensor<4x32x256xf32>,
        tensor<4x4x32x32xf32>) {
  %0 = tpc.gelu_grad %dy, %x tanh : tensor<4x32x256xf32>
  %1 = tpc.gelu_grad %dy, %x erf : tensor<4x32x256xf32>
  %2 = tpc.silu_grad %dy, %x : tensor<4x32x256xf32>
  %3 = tpc.softmax_grad %dp, %p : tensor<4x4x32x32xf32>
  return %0, %1, %2, %3 : tensor<4x32x256xf32>, tensor<4x32x256xf32>,
                          tensor<4x32x256xf32>, tensor<4x4x32x32xf32>
}

// CHECK-LABEL: func.func @dropout_split(
// CHECK-SAME: %[[X:.*]]: tensor<2x32x64xf32>, %[[MB:.*]]: tensor<i64>)
// CHECK: %[[M:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 3 block %[[MB]] : tensor<2x32x64xi8>
// CHECK: %[[Y:.*]] = tpc.apply_mask %[[X]], %[[M]] rate 1.000000e-01 : tensor<2x32x64xf32>, tensor<2x32x64xi8>
// CHECK: tpc.dropout_mask rate 1.000000e-01 stream 4 : tensor<2x32x64xi8>
func.func @dropout_split(%x: tensor<2x32x64xf32>, %mb: tensor<i64>)
    -> (tensor<2x32x64xf32>, tensor<2x32x64xi8>) {
  %m = tpc.dropout_mask rate 0.1 stream 3 block %mb : tensor<2x32x64xi8>
  %y = tpc.apply_mask %x, %m rate 0.1 : tensor<2x32x64xf32>, tensor<2x32x64xi8>
  %m2 = tpc.dropout_mask rate 0.1 stream 4 : tensor<2x32x64xi8>
  return %y, %m2 : tensor<2x32x64xf32>, tensor<2x32x64xi8>
}

// Grouped-query attention (8 query heads, 4 kv heads) with dropout on a
// microbatch block; the forward op takes the same block.
// CHECK-LABEL: func.func @attention_grad(
// CHECK: tpc.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 2.500000e-01 dropout 1.000000e-01 stream 2 block %{{.*}} : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK: tpc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal scale 2.500000e-01 dropout 1.000000e-01 stream 2 block %{{.*}} : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK: tpc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale 1.250000e-01 : tensor<2x2x8x4xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x4xf32>
// CHECK: return {{.*}} : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>, tensor<2x2x8x4xf32>
func.func @attention_grad(%do: tensor<4x8x32x16xf32>, %q: tensor<4x8x32x16xf32>,
                          %k: tensor<4x4x32x16xf32>, %v: tensor<4x4x32x16xf32>,
                          %mb: tensor<i64>, %do2: tensor<2x2x8x4xf32>,
                          %q2: tensor<2x2x8x16xf32>, %v2: tensor<2x2x8x4xf32>)
    -> (tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>,
        tensor<4x4x32x16xf32>, tensor<2x2x8x4xf32>) {
  %o = tpc.attention %q, %k, %v causal scale 0.25 dropout 0.1 stream 2 block %mb
      : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  %dq, %dk, %dv = tpc.attention_grad %do, %q, %k, %v causal scale 0.25
      dropout 0.1 stream 2 block %mb
      : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>,
        tensor<4x4x32x16xf32>
  // A value head_dim different from the query's.
  %dq2, %dk2, %dv2 = tpc.attention_grad %do2, %q2, %q2, %v2 scale 0.125
      : tensor<2x2x8x4xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>,
        tensor<2x2x8x4xf32>
  return %o, %dq, %dk, %dv, %dv2
      : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>,
        tensor<4x4x32x16xf32>, tensor<2x2x8x4xf32>
}

// The forward's log-sum-exps ([b, heads, s_q] f32 in either layout) and
// the gradient that reads them with the forward's result.
// CHECK-LABEL: func.func @attention_grad_saved(
// CHECK: %[[O:.*]], %[[LSE:.*]] = tpc.attention %{{.*}}, %{{.*}}, %{{.*}} causal seq_major lse scale 2.500000e-01 dropout 1.000000e-01 stream 2 : tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x8xf32>
// CHECK: tpc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} saved(%[[O]], %[[LSE]] : tensor<4x32x8x8xf32>, tensor<4x8x32xf32>) causal seq_major scale 2.500000e-01 dropout 1.000000e-01 stream 2 : tensor<4x32x8x8xf32>, tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x8xf32>
func.func @attention_grad_saved(%do: tensor<4x32x8x8xf32>,
                                %q: tensor<4x32x8x16xf32>,
                                %k: tensor<4x32x4x16xf32>,
                                %v: tensor<4x32x4x8xf32>)
    -> (tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x8xf32>) {
  %o, %lse = tpc.attention %q, %k, %v causal seq_major lse scale 0.25
      dropout 0.1 stream 2
      : tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x8xf32>
  %dq, %dk, %dv = tpc.attention_grad %do, %q, %k, %v
      saved(%o, %lse : tensor<4x32x8x8xf32>, tensor<4x8x32xf32>) causal
      seq_major scale 0.25 dropout 0.1 stream 2
      : tensor<4x32x8x8xf32>, tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>,
        tensor<4x32x4x8xf32>
  return %dq, %dk, %dv
      : tensor<4x32x8x16xf32>, tensor<4x32x4x16xf32>, tensor<4x32x4x8xf32>
}

// CHECK-LABEL: func.func @rotary_grad(
// CHECK: tpc.rotary_grad %{{.*}} theta 1.000000e+04 : tensor<4x8x32x16xf32>
// CHECK: tpc.rotary_grad %{{.*}} theta 5.000000e+05 offset 7 : tensor<4x8x32x16xf32>
func.func @rotary_grad(%dy: tensor<4x8x32x16xf32>)
    -> (tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>) {
  %0 = tpc.rotary_grad %dy theta 1.0e4 : tensor<4x8x32x16xf32>
  %1 = tpc.rotary_grad %dy theta 5.0e5 offset 7 : tensor<4x8x32x16xf32>
  return %0, %1 : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>
}

// CHECK-LABEL: func.func @loss_grads(
// CHECK: %[[N:.*]] = tpc.count_targets %{{.*}} : tensor<8x32xi64>
// CHECK: tpc.inverse_count %[[N]]
// CHECK: tpc.count_targets %{{.*}} ignore 0 : tensor<8x32xi32>
// CHECK: tpc.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x32x256xbf16>, tensor<4x32xi64>
// CHECK: tpc.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore -1 : tensor<4x32x256xbf16>, tensor<4x32xi64>
func.func @loss_grads(%labels: tensor<8x32xi64>, %l32: tensor<8x32xi32>,
                      %logits: tensor<4x32x256xbf16>, %lb: tensor<4x32xi64>,
                      %dsum: tensor<f32>)
    -> (tensor<i64>, tensor<f32>, tensor<i64>, tensor<4x32x256xbf16>,
        tensor<4x32x256xbf16>) {
  %n = tpc.count_targets %labels : tensor<8x32xi64>
  %inv = tpc.inverse_count %n
  %n2 = tpc.count_targets %l32 ignore 0 : tensor<8x32xi32>
  %d = tpc.cross_entropy_grad %logits, %lb, %dsum
      : tensor<4x32x256xbf16>, tensor<4x32xi64>
  %d2 = tpc.cross_entropy_grad %logits, %lb, %dsum ignore -1
      : tensor<4x32x256xbf16>, tensor<4x32xi64>
  return %n, %inv, %n2, %d, %d2
      : tensor<i64>, tensor<f32>, tensor<i64>, tensor<4x32x256xbf16>,
        tensor<4x32x256xbf16>
}

// CHECK-LABEL: func.func @shape_grads(
// CHECK: tpc.pad %{{.*}} dim 0 offset 0 to 1024 : tensor<32x64xf32>
// CHECK: tpc.pad %{{.*}} dim 2 offset 1 to 3 : tensor<4x32x1x4x16xf32>
// CHECK: tpc.sum_groups %{{.*}} dim 1 times 2 : tensor<4x8x32x16xf32>
// CHECK: return {{.*}} : tensor<1024x64xf32>, tensor<4x32x3x4x16xf32>, tensor<4x4x32x16xf32>
func.func @shape_grads(%dpos: tensor<32x64xf32>, %dk: tensor<4x32x1x4x16xf32>,
                       %dk8: tensor<4x8x32x16xf32>)
    -> (tensor<1024x64xf32>, tensor<4x32x3x4x16xf32>, tensor<4x4x32x16xf32>) {
  %0 = tpc.pad %dpos dim 0 offset 0 to 1024 : tensor<32x64xf32>
  %1 = tpc.pad %dk dim 2 offset 1 to 3 : tensor<4x32x1x4x16xf32>
  %2 = tpc.sum_groups %dk8 dim 1 times 2 : tensor<4x8x32x16xf32>
  return %0, %1, %2
      : tensor<1024x64xf32>, tensor<4x32x3x4x16xf32>, tensor<4x4x32x16xf32>
}
