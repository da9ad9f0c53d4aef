// Round trip of every tpc op through the custom and the generic form.
// RUN: tpc-opt %s | tpc-opt | FileCheck %s
// RUN: tpc-opt %s --mlir-print-op-generic | tpc-opt | FileCheck %s

//===----------------------------------------------------------------------===//
// Embedding and matrix products
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @embedding_i64(
// CHECK-SAME: %[[T:.*]]: tensor<256x64xf32>, %[[IDS:.*]]: tensor<4x32xi64>)
// CHECK: %[[R:.*]] = tpc.embedding %[[T]][%[[IDS]]] : tensor<256x64xf32>, tensor<4x32xi64>
// CHECK: return %[[R]] : tensor<4x32x64xf32>
func.func @embedding_i64(%table: tensor<256x64xf32>, %ids: tensor<4x32xi64>)
    -> tensor<4x32x64xf32> {
  %0 = tpc.embedding %table[%ids] : tensor<256x64xf32>, tensor<4x32xi64>
  return %0 : tensor<4x32x64xf32>
}

// CHECK-LABEL: func.func @embedding_i32_bf16(
// CHECK-SAME: %[[T:.*]]: tensor<100x8xbf16>, %[[IDS:.*]]: tensor<7xi32>)
// CHECK: %[[R:.*]] = tpc.embedding %[[T]][%[[IDS]]] : tensor<100x8xbf16>, tensor<7xi32>
// CHECK: return %[[R]] : tensor<7x8xbf16>
func.func @embedding_i32_bf16(%table: tensor<100x8xbf16>, %ids: tensor<7xi32>)
    -> tensor<7x8xbf16> {
  %0 = tpc.embedding %table[%ids] : tensor<100x8xbf16>, tensor<7xi32>
  return %0 : tensor<7x8xbf16>
}

// CHECK-LABEL: func.func @linear_in_out_bias(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf32>, %[[W:.*]]: tensor<64x256xf32>, %[[B:.*]]: tensor<256xf32>)
// CHECK: %[[R:.*]] = tpc.linear %[[X]], %[[W]], %[[B]] layout in_out : tensor<4x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
// CHECK: return %[[R]] : tensor<4x32x256xf32>
func.func @linear_in_out_bias(%x: tensor<4x32x64xf32>, %w: tensor<64x256xf32>,
                              %b: tensor<256xf32>) -> tensor<4x32x256xf32> {
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  return %0 : tensor<4x32x256xf32>
}

// CHECK-LABEL: func.func @linear_out_in_no_bias(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf32>, %[[W:.*]]: tensor<176x64xf32>)
// CHECK: %[[R:.*]] = tpc.linear %[[X]], %[[W]] layout out_in : tensor<4x32x64xf32>, tensor<176x64xf32>
// CHECK-NOT: tensor<176xf32>
// CHECK: return %[[R]] : tensor<4x32x176xf32>
func.func @linear_out_in_no_bias(%x: tensor<4x32x64xf32>,
                                 %w: tensor<176x64xf32>) -> tensor<4x32x176xf32> {
  %0 = tpc.linear %x, %w layout out_in : tensor<4x32x64xf32>, tensor<176x64xf32>
  return %0 : tensor<4x32x176xf32>
}

// GPT-2 c_attn viewed as [hidden, 3, heads, head_dim].
// CHECK-LABEL: func.func @linear_multi_dim_in_out(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf32>, %[[W:.*]]: tensor<64x3x4x16xf32>, %[[B:.*]]: tensor<3x4x16xf32>)
// CHECK: %[[R:.*]] = tpc.linear %[[X]], %[[W]], %[[B]] layout in_out : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>
// CHECK: return %[[R]] : tensor<4x32x3x4x16xf32>
func.func @linear_multi_dim_in_out(%x: tensor<4x32x64xf32>,
                                   %w: tensor<64x3x4x16xf32>,
                                   %b: tensor<3x4x16xf32>)
    -> tensor<4x32x3x4x16xf32> {
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>
  return %0 : tensor<4x32x3x4x16xf32>
}

// Llama q_proj viewed as [heads, head_dim, hidden], in f16.
// CHECK-LABEL: func.func @linear_multi_dim_out_in_f16(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf16>, %[[W:.*]]: tensor<8x16x64xf16>, %[[B:.*]]: tensor<8x16xf16>)
// CHECK: %[[R:.*]] = tpc.linear %[[X]], %[[W]], %[[B]] layout out_in : tensor<4x32x64xf16>, tensor<8x16x64xf16>, tensor<8x16xf16>
// CHECK: return %[[R]] : tensor<4x32x8x16xf16>
func.func @linear_multi_dim_out_in_f16(%x: tensor<4x32x64xf16>,
                                       %w: tensor<8x16x64xf16>,
                                       %b: tensor<8x16xf16>)
    -> tensor<4x32x8x16xf16> {
  %0 = tpc.linear %x, %w, %b layout out_in
      : tensor<4x32x64xf16>, tensor<8x16x64xf16>, tensor<8x16xf16>
  return %0 : tensor<4x32x8x16xf16>
}

// The discardable tpc.layer attribute survives the round trip.
// CHECK-LABEL: func.func @linear_layer_attr(
// CHECK-SAME: %[[X:.*]]: tensor<64xf32>, %[[W:.*]]: tensor<64x64xf32>)
// CHECK: %[[R:.*]] = tpc.linear %[[X]], %[[W]] layout in_out {tpc.layer = 3 : i64} : tensor<64xf32>, tensor<64x64xf32>
// CHECK: return %[[R]] : tensor<64xf32>
func.func @linear_layer_attr(%x: tensor<64xf32>, %w: tensor<64x64xf32>)
    -> tensor<64xf32> {
  %0 = tpc.linear %x, %w layout in_out {tpc.layer = 3 : i64}
      : tensor<64xf32>, tensor<64x64xf32>
  return %0 : tensor<64xf32>
}

// CHECK-LABEL: func.func @batch_matmul_plain(
// CHECK-SAME: %[[A:.*]]: tensor<4x32x16xf32>, %[[B:.*]]: tensor<4x16x8xf32>)
// CHECK: %[[R:.*]] = tpc.batch_matmul %[[A]], %[[B]] : tensor<4x32x16xf32>, tensor<4x16x8xf32>
// CHECK: return %[[R]] : tensor<4x32x8xf32>
func.func @batch_matmul_plain(%a: tensor<4x32x16xf32>, %b: tensor<4x16x8xf32>)
    -> tensor<4x32x8xf32> {
  %0 = tpc.batch_matmul %a, %b : tensor<4x32x16xf32>, tensor<4x16x8xf32>
  return %0 : tensor<4x32x8xf32>
}

// CHECK-LABEL: func.func @batch_matmul_transpose_rhs_scale(
// CHECK-SAME: %[[Q:.*]]: tensor<4x4x32x16xf32>, %[[K:.*]]: tensor<4x4x32x16xf32>)
// CHECK: %[[R:.*]] = tpc.batch_matmul %[[Q]], %[[K]] transpose_rhs scale 2.500000e-01 : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK: return %[[R]] : tensor<4x4x32x32xf32>
func.func @batch_matmul_transpose_rhs_scale(%q: tensor<4x4x32x16xf32>,
                                            %k: tensor<4x4x32x16xf32>)
    -> tensor<4x4x32x32xf32> {
  %0 = tpc.batch_matmul %q, %k transpose_rhs scale 2.500000e-01
      : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return %0 : tensor<4x4x32x32xf32>
}

// CHECK-LABEL: func.func @batch_matmul_transpose_lhs_bf16(
// CHECK-SAME: %[[A:.*]]: tensor<2x16x32xbf16>, %[[B:.*]]: tensor<2x16x8xbf16>)
// CHECK: %[[R:.*]] = tpc.batch_matmul %[[A]], %[[B]] transpose_lhs : tensor<2x16x32xbf16>, tensor<2x16x8xbf16>
// CHECK: return %[[R]] : tensor<2x32x8xbf16>
func.func @batch_matmul_transpose_lhs_bf16(%a: tensor<2x16x32xbf16>,
                                           %b: tensor<2x16x8xbf16>)
    -> tensor<2x32x8xbf16> {
  %0 = tpc.batch_matmul %a, %b transpose_lhs
      : tensor<2x16x32xbf16>, tensor<2x16x8xbf16>
  return %0 : tensor<2x32x8xbf16>
}

// Both transposed, a negative scale, no batch dimension; a scale of 1.0 is
// the default and is not printed.
// CHECK-LABEL: func.func @batch_matmul_transpose_both(
// CHECK-SAME: %[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<8x16xf32>)
// CHECK: %[[R0:.*]] = tpc.batch_matmul %[[A]], %[[B]] transpose_lhs transpose_rhs scale -5.000000e-01 : tensor<16x32xf32>, tensor<8x16xf32>
// CHECK: %[[R1:.*]] = tpc.batch_matmul %[[A]], %[[B]] transpose_lhs transpose_rhs : tensor<16x32xf32>, tensor<8x16xf32>
// CHECK: return %[[R0]], %[[R1]] : tensor<32x8xf32>, tensor<32x8xf32>
func.func @batch_matmul_transpose_both(%a: tensor<16x32xf32>,
                                       %b: tensor<8x16xf32>)
    -> (tensor<32x8xf32>, tensor<32x8xf32>) {
  %0 = tpc.batch_matmul %a, %b transpose_lhs transpose_rhs scale -0.5
      : tensor<16x32xf32>, tensor<8x16xf32>
  %1 = tpc.batch_matmul %a, %b transpose_lhs transpose_rhs scale 1.0
      : tensor<16x32xf32>, tensor<8x16xf32>
  return %0, %1 : tensor<32x8xf32>, tensor<32x8xf32>
}

//===----------------------------------------------------------------------===//
// Normalizations and activations
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[R:.*]] = tpc.layer_norm %[[X]], %[[G]], %[[B]] eps 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
// CHECK: return %[[R]] : tensor<4x32x64xf32>
func.func @layer_norm(%x: tensor<4x32x64xf32>, %g: tensor<64xf32>,
                      %b: tensor<64xf32>) -> tensor<4x32x64xf32> {
  %0 = tpc.layer_norm %x, %g, %b eps 1.000000e-05
      : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
  return %0 : tensor<4x32x64xf32>
}

// CHECK-LABEL: func.func @rms_norm_bf16(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xbf16>, %[[G:.*]]: tensor<64xbf16>)
// CHECK: %[[R:.*]] = tpc.rms_norm %[[X]], %[[G]] eps 1.000000e-05 : tensor<4x32x64xbf16>, tensor<64xbf16>
// CHECK: return %[[R]] : tensor<4x32x64xbf16>
func.func @rms_norm_bf16(%x: tensor<4x32x64xbf16>, %g: tensor<64xbf16>)
    -> tensor<4x32x64xbf16> {
  %0 = tpc.rms_norm %x, %g eps 1.000000e-05
      : tensor<4x32x64xbf16>, tensor<64xbf16>
  return %0 : tensor<4x32x64xbf16>
}

// CHECK-LABEL: func.func @gelu(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x256xf32>)
// CHECK: %[[E:.*]] = tpc.gelu %[[X]] erf : tensor<4x32x256xf32>
// CHECK: %[[T:.*]] = tpc.gelu %[[E]] tanh : tensor<4x32x256xf32>
// CHECK: return %[[T]] : tensor<4x32x256xf32>
func.func @gelu(%x: tensor<4x32x256xf32>) -> tensor<4x32x256xf32> {
  %0 = tpc.gelu %x erf : tensor<4x32x256xf32>
  %1 = tpc.gelu %0 tanh : tensor<4x32x256xf32>
  return %1 : tensor<4x32x256xf32>
}

// CHECK-LABEL: func.func @silu_f16(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x176xf16>)
// CHECK: %[[R:.*]] = tpc.silu %[[X]] : tensor<4x32x176xf16>
// CHECK: return %[[R]] : tensor<4x32x176xf16>
func.func @silu_f16(%x: tensor<4x32x176xf16>) -> tensor<4x32x176xf16> {
  %0 = tpc.silu %x : tensor<4x32x176xf16>
  return %0 : tensor<4x32x176xf16>
}

// CHECK-LABEL: func.func @dropout(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf32>)
// CHECK: %[[A:.*]] = tpc.dropout %[[X]] rate 1.000000e-01 stream 3 : tensor<4x32x64xf32>
// CHECK: %[[B:.*]] = tpc.dropout %[[A]] rate 0.000000e+00 stream 0 : tensor<4x32x64xf32>
// CHECK: return %[[B]] : tensor<4x32x64xf32>
func.func @dropout(%x: tensor<4x32x64xf32>) -> tensor<4x32x64xf32> {
  %0 = tpc.dropout %x rate 1.000000e-01 stream 3 : tensor<4x32x64xf32>
  %1 = tpc.dropout %0 rate 0.0 stream 0 : tensor<4x32x64xf32>
  return %1 : tensor<4x32x64xf32>
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[S:.*]]: tensor<4x4x32x32xf32>)
// CHECK: %[[C:.*]] = tpc.softmax %[[S]] causal : tensor<4x4x32x32xf32>
// CHECK: %[[P:.*]] = tpc.softmax %[[C]] : tensor<4x4x32x32xf32>
// CHECK: return %[[P]] : tensor<4x4x32x32xf32>
func.func @softmax(%s: tensor<4x4x32x32xf32>) -> tensor<4x4x32x32xf32> {
  %0 = tpc.softmax %s causal : tensor<4x4x32x32xf32>
  %1 = tpc.softmax %0 : tensor<4x4x32x32xf32>
  return %1 : tensor<4x4x32x32xf32>
}

// A causal softmax may have more keys than queries (cached prefix); a plain
// softmax works on a 1-d input.
// CHECK-LABEL: func.func @softmax_shapes(
// CHECK-SAME: %[[S:.*]]: tensor<2x8x24xbf16>, %[[V:.*]]: tensor<10xf32>)
// CHECK: %[[C:.*]] = tpc.softmax %[[S]] causal : tensor<2x8x24xbf16>
// CHECK: %[[P:.*]] = tpc.softmax %[[V]] : tensor<10xf32>
// CHECK: return %[[C]], %[[P]] : tensor<2x8x24xbf16>, tensor<10xf32>
func.func @softmax_shapes(%s: tensor<2x8x24xbf16>, %v: tensor<10xf32>)
    -> (tensor<2x8x24xbf16>, tensor<10xf32>) {
  %0 = tpc.softmax %s causal : tensor<2x8x24xbf16>
  %1 = tpc.softmax %v : tensor<10xf32>
  return %0, %1 : tensor<2x8x24xbf16>, tensor<10xf32>
}

//===----------------------------------------------------------------------===//
// Elementwise binary
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_mul_same_shape(
// CHECK-SAME: %[[A:.*]]: tensor<4x32x176xf32>, %[[B:.*]]: tensor<4x32x176xf32>)
// CHECK: %[[S:.*]] = tpc.add %[[A]], %[[B]] : tensor<4x32x176xf32>, tensor<4x32x176xf32>
// CHECK: %[[P:.*]] = tpc.mul %[[S]], %[[B]] : tensor<4x32x176xf32>, tensor<4x32x176xf32>
// CHECK: return %[[P]] : tensor<4x32x176xf32>
func.func @add_mul_same_shape(%a: tensor<4x32x176xf32>,
                              %b: tensor<4x32x176xf32>)
    -> tensor<4x32x176xf32> {
  %0 = tpc.add %a, %b : tensor<4x32x176xf32>, tensor<4x32x176xf32>
  %1 = tpc.mul %0, %b : tensor<4x32x176xf32>, tensor<4x32x176xf32>
  return %1 : tensor<4x32x176xf32>
}

// rhs broadcast over the leading dimensions (position embeddings over the
// batch; a per-feature vector; a scalar).
// CHECK-LABEL: func.func @add_mul_broadcast(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xbf16>, %[[POS:.*]]: tensor<32x64xbf16>, %[[V:.*]]: tensor<64xbf16>, %[[C:.*]]: tensor<bf16>)
// CHECK: %[[A:.*]] = tpc.add %[[X]], %[[POS]] : tensor<4x32x64xbf16>, tensor<32x64xbf16>
// CHECK: %[[M:.*]] = tpc.mul %[[A]], %[[V]] : tensor<4x32x64xbf16>, tensor<64xbf16>
// CHECK: %[[S:.*]] = tpc.mul %[[M]], %[[C]] : tensor<4x32x64xbf16>, tensor<bf16>
// CHECK: return %[[S]] : tensor<4x32x64xbf16>
func.func @add_mul_broadcast(%x: tensor<4x32x64xbf16>, %pos: tensor<32x64xbf16>,
                             %v: tensor<64xbf16>, %c: tensor<bf16>)
    -> tensor<4x32x64xbf16> {
  %0 = tpc.add %x, %pos : tensor<4x32x64xbf16>, tensor<32x64xbf16>
  %1 = tpc.mul %0, %v : tensor<4x32x64xbf16>, tensor<64xbf16>
  %2 = tpc.mul %1, %c : tensor<4x32x64xbf16>, tensor<bf16>
  return %2 : tensor<4x32x64xbf16>
}

// tpc.add is not commutative in its shapes: canonicalization must keep a
// constant lhs on the left rather than swap it with a broadcast rhs.
// RUN: tpc-opt %s -canonicalize | FileCheck %s --check-prefix=CANON
// CANON-LABEL: func.func @add_constant_lhs(
// CANON-SAME: %[[POS:.*]]: tensor<8xf32>)
// CANON: %[[C:.*]] = arith.constant dense<1.000000e+00> : tensor<4x8xf32>
// CANON: %[[A:.*]] = tpc.add %[[C]], %[[POS]] : tensor<4x8xf32>, tensor<8xf32>
// CANON: %[[M:.*]] = tpc.mul %[[C]], %[[POS]] : tensor<4x8xf32>, tensor<8xf32>
// CANON: return %[[A]], %[[M]]
func.func @add_constant_lhs(%pos: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = arith.constant dense<1.0> : tensor<4x8xf32>
  %0 = tpc.add %c, %pos : tensor<4x8xf32>, tensor<8xf32>
  %1 = tpc.mul %c, %pos : tensor<4x8xf32>, tensor<8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// Grouped KV heads: 8 query heads read 4 key/value heads.
// CHECK-LABEL: func.func @attention_gqa(
// CHECK-SAME: %[[Q:.*]]: tensor<4x8x32x16xf32>, %[[K:.*]]: tensor<4x4x32x16xf32>, %[[V:.*]]: tensor<4x4x32x16xf32>)
// CHECK: %[[R:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] causal scale 2.500000e-01 : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK-NOT: dropout
// CHECK: return %[[R]] : tensor<4x8x32x16xf32>
func.func @attention_gqa(%q: tensor<4x8x32x16xf32>, %k: tensor<4x4x32x16xf32>,
                         %v: tensor<4x4x32x16xf32>) -> tensor<4x8x32x16xf32> {
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01
      : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return %0 : tensor<4x8x32x16xf32>
}

// CHECK-LABEL: func.func @attention_gqa_dropout(
// CHECK-SAME: %[[Q:.*]]: tensor<4x8x32x16xf32>, %[[K:.*]]: tensor<4x4x32x16xf32>, %[[V:.*]]: tensor<4x4x32x16xf32>)
// CHECK: %[[R:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] causal scale 2.500000e-01 dropout 1.000000e-01 stream 7 : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK: return %[[R]] : tensor<4x8x32x16xf32>
func.func @attention_gqa_dropout(%q: tensor<4x8x32x16xf32>,
                                 %k: tensor<4x4x32x16xf32>,
                                 %v: tensor<4x4x32x16xf32>)
    -> tensor<4x8x32x16xf32> {
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01
      dropout 1.000000e-01 stream 7
      : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return %0 : tensor<4x8x32x16xf32>
}

// Not causal, a key length other than the query length and a value head_dim
// other than the query head_dim, in bf16.
// CHECK-LABEL: func.func @attention_cross_bf16(
// CHECK-SAME: %[[Q:.*]]: tensor<2x4x8x16xbf16>, %[[K:.*]]: tensor<2x4x12x16xbf16>, %[[V:.*]]: tensor<2x4x12x32xbf16>)
// CHECK: %[[R:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] scale 1.250000e-01 : tensor<2x4x8x16xbf16>, tensor<2x4x12x16xbf16>, tensor<2x4x12x32xbf16>
// CHECK: return %[[R]] : tensor<2x4x8x32xbf16>
func.func @attention_cross_bf16(%q: tensor<2x4x8x16xbf16>,
                                %k: tensor<2x4x12x16xbf16>,
                                %v: tensor<2x4x12x32xbf16>)
    -> tensor<2x4x8x32xbf16> {
  %0 = tpc.attention %q, %k, %v scale 1.250000e-01
      : tensor<2x4x8x16xbf16>, tensor<2x4x12x16xbf16>, tensor<2x4x12x32xbf16>
  return %0 : tensor<2x4x8x32xbf16>
}

// CHECK-LABEL: func.func @rotary(
// CHECK-SAME: %[[Q:.*]]: tensor<4x8x32x16xf32>)
// CHECK: %[[A:.*]] = tpc.rotary %[[Q]] theta 1.000000e+04 : tensor<4x8x32x16xf32>
// CHECK: %[[B:.*]] = tpc.rotary %[[A]] theta 5.000000e+05 offset 128 : tensor<4x8x32x16xf32>
// CHECK: return %[[B]] : tensor<4x8x32x16xf32>
func.func @rotary(%q: tensor<4x8x32x16xf32>) -> tensor<4x8x32x16xf32> {
  %0 = tpc.rotary %q theta 1.000000e+04 : tensor<4x8x32x16xf32>
  %1 = tpc.rotary %0 theta 5.000000e+05 offset 128 : tensor<4x8x32x16xf32>
  return %1 : tensor<4x8x32x16xf32>
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cross_entropy_default_ignore(
// CHECK-SAME: %[[L:.*]]: tensor<4x32x256xf32>, %[[Y:.*]]: tensor<4x32xi64>)
// CHECK: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[L]], %[[Y]] : tensor<4x32x256xf32>, tensor<4x32xi64>
// CHECK: %[[MEAN:.*]] = tpc.loss_mean %[[SUM]], %[[COUNT]]
// CHECK: return %[[MEAN]] : tensor<f32>
func.func @cross_entropy_default_ignore(%logits: tensor<4x32x256xf32>,
                                        %labels: tensor<4x32xi64>)
    -> tensor<f32> {
  %sum, %count = tpc.cross_entropy %logits, %labels
      : tensor<4x32x256xf32>, tensor<4x32xi64>
  %loss = tpc.loss_mean %sum, %count
  return %loss : tensor<f32>
}

// The default ignore index (-100) spelled out is not printed; another one is.
// CHECK-LABEL: func.func @cross_entropy_custom_ignore(
// CHECK-SAME: %[[L:.*]]: tensor<128x256xbf16>, %[[Y:.*]]: tensor<128xi32>)
// CHECK: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[L]], %[[Y]] ignore 0 : tensor<128x256xbf16>, tensor<128xi32>
// CHECK: %[[SUM2:.*]], %[[COUNT2:.*]] = tpc.cross_entropy %[[L]], %[[Y]] : tensor<128x256xbf16>, tensor<128xi32>
// CHECK: return %[[SUM]], %[[COUNT]], %[[SUM2]] : tensor<f32>, tensor<i64>, tensor<f32>
func.func @cross_entropy_custom_ignore(%logits: tensor<128x256xbf16>,
                                       %labels: tensor<128xi32>)
    -> (tensor<f32>, tensor<i64>, tensor<f32>) {
  %sum, %count = tpc.cross_entropy %logits, %labels ignore 0
      : tensor<128x256xbf16>, tensor<128xi32>
  %sum2, %count2 = tpc.cross_entropy %logits, %labels ignore -100
      : tensor<128x256xbf16>, tensor<128xi32>
  return %sum, %count, %sum2 : tensor<f32>, tensor<i64>, tensor<f32>
}

// CHECK-LABEL: func.func @loss_mean(
// CHECK-SAME: %[[S:.*]]: tensor<f32>, %[[C:.*]]: tensor<i64>)
// CHECK: %[[R:.*]] = tpc.loss_mean %[[S]], %[[C]]{{$}}
// CHECK: return %[[R]] : tensor<f32>
func.func @loss_mean(%sum: tensor<f32>, %count: tensor<i64>) -> tensor<f32> {
  %0 = tpc.loss_mean %sum, %count
  return %0 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x4x16xf32>)
// CHECK: %[[A:.*]] = tpc.reshape %[[X]] : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
// CHECK: %[[B:.*]] = tpc.reshape %[[A]] : tensor<4x32x64xf32> -> tensor<8192xf32>
// CHECK: return %[[B]] : tensor<8192xf32>
func.func @reshape(%x: tensor<4x32x4x16xf32>) -> tensor<8192xf32> {
  %0 = tpc.reshape %x : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
  %1 = tpc.reshape %0 : tensor<4x32x64xf32> -> tensor<8192xf32>
  return %1 : tensor<8192xf32>
}

// A single element reshapes to and from a scalar.
// CHECK-LABEL: func.func @reshape_scalar(
// CHECK-SAME: %[[X:.*]]: tensor<1x1xf16>)
// CHECK: %[[A:.*]] = tpc.reshape %[[X]] : tensor<1x1xf16> -> tensor<f16>
// CHECK: %[[B:.*]] = tpc.reshape %[[A]] : tensor<f16> -> tensor<1xf16>
// CHECK: return %[[B]] : tensor<1xf16>
func.func @reshape_scalar(%x: tensor<1x1xf16>) -> tensor<1xf16> {
  %0 = tpc.reshape %x : tensor<1x1xf16> -> tensor<f16>
  %1 = tpc.reshape %0 : tensor<f16> -> tensor<1xf16>
  return %1 : tensor<1xf16>
}

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x8x16xf32>)
// CHECK: %[[A:.*]] = tpc.transpose %[[X]] [0, 2, 1, 3] : tensor<4x32x8x16xf32>
// CHECK: %[[B:.*]] = tpc.transpose %[[A]] [3, 2, 1, 0] : tensor<4x8x32x16xf32>
// CHECK: return %[[B]] : tensor<16x32x8x4xf32>
func.func @transpose(%x: tensor<4x32x8x16xf32>) -> tensor<16x32x8x4xf32> {
  %0 = tpc.transpose %x [0, 2, 1, 3] : tensor<4x32x8x16xf32>
  %1 = tpc.transpose %0 [3, 2, 1, 0] : tensor<4x8x32x16xf32>
  return %1 : tensor<16x32x8x4xf32>
}

// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[W:.*]]: tensor<1024x64xf32>, %[[QKV:.*]]: tensor<4x32x3x4x16xf32>)
// CHECK: %[[POS:.*]] = tpc.slice %[[W]] dim 0 [0 : 32] : tensor<1024x64xf32>
// CHECK: %[[V:.*]] = tpc.slice %[[QKV]] dim 2 [2 : 1] : tensor<4x32x3x4x16xf32>
// CHECK: return %[[POS]], %[[V]] : tensor<32x64xf32>, tensor<4x32x1x4x16xf32>
func.func @slice(%wpe: tensor<1024x64xf32>, %qkv: tensor<4x32x3x4x16xf32>)
    -> (tensor<32x64xf32>, tensor<4x32x1x4x16xf32>) {
  %0 = tpc.slice %wpe dim 0 [0 : 32] : tensor<1024x64xf32>
  %1 = tpc.slice %qkv dim 2 [2 : 1] : tensor<4x32x3x4x16xf32>
  return %0, %1 : tensor<32x64xf32>, tensor<4x32x1x4x16xf32>
}

// CHECK-LABEL: func.func @repeat(
// CHECK-SAME: %[[K:.*]]: tensor<4x4x32x16xf32>)
// CHECK: %[[A:.*]] = tpc.repeat %[[K]] dim 1 times 2 : tensor<4x4x32x16xf32>
// CHECK: %[[B:.*]] = tpc.repeat %[[A]] dim 3 times 1 : tensor<4x8x32x16xf32>
// CHECK: return %[[B]] : tensor<4x8x32x16xf32>
func.func @repeat(%k: tensor<4x4x32x16xf32>) -> tensor<4x8x32x16xf32> {
  %0 = tpc.repeat %k dim 1 times 2 : tensor<4x4x32x16xf32>
  %1 = tpc.repeat %0 dim 3 times 1 : tensor<4x8x32x16xf32>
  return %1 : tensor<4x8x32x16xf32>
}

// CHECK-LABEL: func.func @cast(
// CHECK-SAME: %[[X:.*]]: tensor<4x32x64xf32>)
// CHECK: %[[A:.*]] = tpc.cast %[[X]] : tensor<4x32x64xf32> to tensor<4x32x64xbf16>
// CHECK: %[[B:.*]] = tpc.cast %[[A]] : tensor<4x32x64xbf16> to tensor<4x32x64xf16>
// CHECK: %[[C:.*]] = tpc.cast %[[B]] : tensor<4x32x64xf16> to tensor<4x32x64xf32>
// CHECK: return %[[C]] : tensor<4x32x64xf32>
func.func @cast(%x: tensor<4x32x64xf32>) -> tensor<4x32x64xf32> {
  %0 = tpc.cast %x : tensor<4x32x64xf32> to tensor<4x32x64xbf16>
  %1 = tpc.cast %0 : tensor<4x32x64xbf16> to tensor<4x32x64xf16>
  %2 = tpc.cast %1 : tensor<4x32x64xf16> to tensor<4x32x64xf32>
  return %2 : tensor<4x32x64xf32>
}

//===----------------------------------------------------------------------===//
// Edge shapes
//===----------------------------------------------------------------------===//

// Zero-sized dimensions and rank-0 operands are valid where the op has a
// meaning for them.
// CHECK-LABEL: func.func @empty_and_scalar(
// CHECK-SAME: %[[E:.*]]: tensor<0x8xf32>, %[[S:.*]]: tensor<f32>, %[[T:.*]]: tensor<16x8xf32>, %[[ID:.*]]: tensor<i64>)
// CHECK: %[[A:.*]] = tpc.softmax %[[E]] : tensor<0x8xf32>
// CHECK: %[[B:.*]] = tpc.gelu %[[S]] erf : tensor<f32>
// CHECK: %[[C:.*]] = tpc.dropout %[[B]] rate 5.000000e-01 stream 1 : tensor<f32>
// CHECK: %[[D:.*]] = tpc.embedding %[[T]][%[[ID]]] : tensor<16x8xf32>, tensor<i64>
// CHECK: %[[F:.*]] = tpc.transpose %[[C]] [] : tensor<f32>
// CHECK: return %[[A]], %[[F]], %[[D]] : tensor<0x8xf32>, tensor<f32>, tensor<8xf32>
func.func @empty_and_scalar(%e: tensor<0x8xf32>, %s: tensor<f32>,
                            %table: tensor<16x8xf32>, %id: tensor<i64>)
    -> (tensor<0x8xf32>, tensor<f32>, tensor<8xf32>) {
  %0 = tpc.softmax %e : tensor<0x8xf32>
  %1 = tpc.gelu %s erf : tensor<f32>
  %2 = tpc.dropout %1 rate 0.5 stream 1 : tensor<f32>
  %3 = tpc.embedding %table[%id] : tensor<16x8xf32>, tensor<i64>
  %4 = tpc.transpose %2 [] : tensor<f32>
  return %0, %4, %3 : tensor<0x8xf32>, tensor<f32>, tensor<8xf32>
}

// A block of a split vocabulary: `vocab` counts the whole (up to 32 x 4).
// CHECK-LABEL: func.func @cross_entropy_vocab_block
// CHECK: tpc.cross_entropy %{{.*}}, %{{.*}} vocab 125 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
// CHECK: tpc.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} vocab 125 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
func.func @cross_entropy_vocab_block(%l: tensor<4x32xf32>, %y: tensor<4xi64>, %d: tensor<f32>) -> tensor<4x32xf32> {
  %sum, %count = tpc.cross_entropy %l, %y vocab 125 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
  %g = tpc.cross_entropy_grad %l, %y, %d vocab 125 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
  return %g : tensor<4x32xf32>
}
