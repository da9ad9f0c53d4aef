// One chunk per diagnostic of the tpc dialect. Errors from result-type
// inference are reported while parsing, at the op.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// tpc.embedding
//===----------------------------------------------------------------------===//

func.func @embedding_table_rank(%t: tensor<4x4x4xf32>, %ids: tensor<8xi64>) {
  // expected-error @+1 {{embedding table must be [vocab, hidden] but has shape 4x4x4}}
  %0 = tpc.embedding %t[%ids] : tensor<4x4x4xf32>, tensor<8xi64>
  return
}

// -----

func.func @embedding_table_scalar(%t: tensor<f32>, %ids: tensor<8xi64>) {
  // expected-error @+1 {{embedding table must be [vocab, hidden] but has shape scalar}}
  %0 = tpc.embedding %t[%ids] : tensor<f32>, tensor<8xi64>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<16x4xf32>, %ids: tensor<8xf32>) {
  // expected-error @+1 {{ids must be a statically shaped tensor of i32 or i64 but is 'tensor<8xf32>'}}
  %0 = tpc.embedding %t[%ids] : tensor<16x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @embedding_int_table(%t: tensor<16x4xi32>, %ids: tensor<8xi32>) {
  // expected-error @+1 {{table must be a statically shaped tensor of f32, bf16 or f16 but is 'tensor<16x4xi32>'}}
  %0 = tpc.embedding %t[%ids] : tensor<16x4xi32>, tensor<8xi32>
  return
}

// -----

func.func @embedding_dynamic_ids(%t: tensor<16x4xf32>, %ids: tensor<?xi64>) {
  // expected-error @+1 {{ids must be a statically shaped tensor of i32 or i64 but is 'tensor<?xi64>'}}
  %0 = tpc.embedding %t[%ids] : tensor<16x4xf32>, tensor<?xi64>
  return
}

// -----

func.func @embedding_result_type(%t: tensor<16x4xf32>, %ids: tensor<8xi64>) {
  // expected-error @+2 {{'tpc.embedding' op inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<8x5xf32>'}}
  // expected-error @+1 {{'tpc.embedding' op failed to infer returned types}}
  %0 = "tpc.embedding"(%t, %ids)
      : (tensor<16x4xf32>, tensor<8xi64>) -> tensor<8x5xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.linear
//===----------------------------------------------------------------------===//

func.func @linear_in_out_features(%x: tensor<4x32xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{input features 32 do not match the weight's input dimension 64 (weight shape 64x256, layout in_out)}}
  %0 = tpc.linear %x, %w layout in_out : tensor<4x32xf32>, tensor<64x256xf32>
  return
}

// -----

func.func @linear_out_in_features(%x: tensor<4x64xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{input features 64 do not match the weight's input dimension 256 (weight shape 64x256, layout out_in)}}
  %0 = tpc.linear %x, %w layout out_in : tensor<4x64xf32>, tensor<64x256xf32>
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<4x64xf32>, %w: tensor<64x256xf32>,
                             %b: tensor<64xf32>) {
  // expected-error @+1 {{bias shape 64 does not match the output dimensions 256}}
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x64xf32>, tensor<64x256xf32>, tensor<64xf32>
  return
}

// -----

func.func @linear_multi_dim_bias_shape(%x: tensor<4x64xf32>,
                                       %w: tensor<64x3x4x16xf32>,
                                       %b: tensor<192xf32>) {
  // expected-error @+1 {{bias shape 192 does not match the output dimensions 3x4x16}}
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x64xf32>, tensor<64x3x4x16xf32>, tensor<192xf32>
  return
}

// -----

func.func @linear_weight_element_type(%x: tensor<4x64xf32>,
                                      %w: tensor<64x256xbf16>) {
  // expected-error @+1 {{weight element type 'bf16' differs from the input element type 'f32'}}
  %0 = tpc.linear %x, %w layout in_out : tensor<4x64xf32>, tensor<64x256xbf16>
  return
}

// -----

func.func @linear_bias_element_type(%x: tensor<4x64xf32>, %w: tensor<256x64xf32>,
                                    %b: tensor<256xf16>) {
  // expected-error @+1 {{bias element type 'f16' differs from the input element type 'f32'}}
  %0 = tpc.linear %x, %w, %b layout out_in
      : tensor<4x64xf32>, tensor<256x64xf32>, tensor<256xf16>
  return
}

// -----

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{input must have a feature dimension but is a scalar}}
  %0 = tpc.linear %x, %w layout in_out : tensor<f32>, tensor<64x256xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<4x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{weight must have at least 2 dimensions but has shape 64}}
  %0 = tpc.linear %x, %w layout in_out : tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @linear_int_input(%x: tensor<4x64xi32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{input must be a statically shaped tensor of f32, bf16 or f16 but is 'tensor<4x64xi32>'}}
  %0 = tpc.linear %x, %w layout in_out : tensor<4x64xi32>, tensor<64x64xf32>
  return
}

// -----

func.func @linear_bad_layout(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+2 {{expected ::mlir::tpc::WeightLayout to be one of: in_out, out_in}}
  // expected-error @+1 {{failed to parse Tpc_WeightLayoutAttr parameter 'value'}}
  %0 = tpc.linear %x, %w layout io : tensor<4x64xf32>, tensor<64x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.batch_matmul
//===----------------------------------------------------------------------===//

func.func @batch_matmul_rank(%a: tensor<4x32x16xf32>, %b: tensor<16x8xf32>) {
  // expected-error @+1 {{operands must have the same rank of at least 2 but have shapes 4x32x16 and 16x8}}
  %0 = tpc.batch_matmul %a, %b : tensor<4x32x16xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @batch_matmul_vectors(%a: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{operands must have the same rank of at least 2 but have shapes 16 and 16}}
  %0 = tpc.batch_matmul %a, %b : tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @batch_matmul_batch(%a: tensor<4x32x16xf32>, %b: tensor<2x16x8xf32>) {
  // expected-error @+1 {{batch dimensions differ: 4 vs 2}}
  %0 = tpc.batch_matmul %a, %b : tensor<4x32x16xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @batch_matmul_contracted(%q: tensor<4x32x16xf32>,
                                   %k: tensor<4x32x16xf32>) {
  // Without transpose_rhs, q k contracts 16 with 32.
  // expected-error @+1 {{contracted dimensions differ: lhs has 16, rhs has 32}}
  %0 = tpc.batch_matmul %q, %k : tensor<4x32x16xf32>, tensor<4x32x16xf32>
  return
}

// -----

func.func @batch_matmul_contracted_transpose_lhs(%a: tensor<4x32x16xf32>,
                                                 %b: tensor<4x16x8xf32>) {
  // expected-error @+1 {{contracted dimensions differ: lhs has 32, rhs has 16}}
  %0 = tpc.batch_matmul %a, %b transpose_lhs
      : tensor<4x32x16xf32>, tensor<4x16x8xf32>
  return
}

// -----

func.func @batch_matmul_element_type(%a: tensor<32x16xf32>,
                                     %b: tensor<16x8xbf16>) {
  // expected-error @+1 {{rhs element type 'bf16' differs from the lhs element type 'f32'}}
  %0 = tpc.batch_matmul %a, %b : tensor<32x16xf32>, tensor<16x8xbf16>
  return
}

// -----

func.func @batch_matmul_int(%a: tensor<32x16xi32>, %b: tensor<16x8xf32>) {
  // expected-error @+1 {{lhs must be a statically shaped tensor of f32, bf16 or f16 but is 'tensor<32x16xi32>'}}
  %0 = tpc.batch_matmul %a, %b : tensor<32x16xi32>, tensor<16x8xf32>
  return
}

// -----

func.func @batch_matmul_scale_nan(%a: tensor<32x16xf32>, %b: tensor<16x8xf32>) {
  // expected-error @+1 {{'tpc.batch_matmul' op scale must be finite but is nan}}
  %0 = tpc.batch_matmul %a, %b scale 0x7FF8000000000000
      : tensor<32x16xf32>, tensor<16x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.layer_norm
//===----------------------------------------------------------------------===//

func.func @layer_norm_weight_shape(%x: tensor<4x64xf32>, %g: tensor<32xf32>,
                                   %b: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op weight shape 32 does not match the normalized dimension 64}}
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<4x64xf32>, tensor<32xf32>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<4x64xf32>, %g: tensor<64xf32>,
                                 %b: tensor<1x64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op bias shape 1x64 does not match the normalized dimension 64}}
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<4x64xf32>, tensor<64xf32>, tensor<1x64xf32>
  return
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<f32>, %b: tensor<f32>) {
  // expected-error @+1 {{'tpc.layer_norm' op input must have at least one dimension to normalize but is a scalar 'tensor<f32>'}}
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<f32>, tensor<f32>, tensor<f32>
  return
}

// -----

func.func @layer_norm_weight_element_type(%x: tensor<4x64xf32>,
                                          %g: tensor<64xbf16>,
                                          %b: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op weight element type 'bf16' differs from the input element type 'f32'}}
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<4x64xf32>, tensor<64xbf16>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_bias_element_type(%x: tensor<4x64xbf16>,
                                        %g: tensor<64xbf16>,
                                        %b: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op bias element type 'f32' differs from the input element type 'bf16'}}
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<4x64xbf16>, tensor<64xbf16>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>,
                              %b: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op epsilon must be positive and finite but is 0.000000e+00}}
  %0 = tpc.layer_norm %x, %g, %b eps 0.0
      : tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_int(%x: tensor<4x64xi32>, %g: tensor<64xf32>,
                          %b: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x64xi32>'}}
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<4x64xi32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_result_type(%x: tensor<4x64xf32>, %g: tensor<64xf32>,
                                  %b: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = "tpc.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f64}>
      : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.rms_norm
//===----------------------------------------------------------------------===//

func.func @rms_norm_weight_shape(%x: tensor<4x32x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'tpc.rms_norm' op weight shape 32 does not match the normalized dimension 64}}
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<4x32x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @rms_norm_scalar(%x: tensor<bf16>, %g: tensor<1xbf16>) {
  // expected-error @+1 {{'tpc.rms_norm' op input must have at least one dimension to normalize but is a scalar 'tensor<bf16>'}}
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<bf16>, tensor<1xbf16>
  return
}

// -----

func.func @rms_norm_weight_element_type(%x: tensor<4x64xf16>,
                                        %g: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.rms_norm' op weight element type 'f32' differs from the input element type 'f16'}}
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<4x64xf16>, tensor<64xf32>
  return
}

// -----

func.func @rms_norm_negative_epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.rms_norm' op epsilon must be positive and finite but is -1.000000e-05}}
  %0 = tpc.rms_norm %x, %g eps -1.0e-05 : tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rms_norm_infinite_epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.rms_norm' op epsilon must be positive and finite but is INF}}
  %0 = tpc.rms_norm %x, %g eps 0x7FF0000000000000
      : tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rms_norm_int_weight(%x: tensor<4x64xf32>, %g: tensor<64xi64>) {
  // expected-error @+1 {{'tpc.rms_norm' op operand #1 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<64xi64>'}}
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<4x64xf32>, tensor<64xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.gelu, tpc.silu
//===----------------------------------------------------------------------===//

func.func @gelu_int(%x: tensor<4x64xi32>) {
  // expected-error @+1 {{'tpc.gelu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x64xi32>'}}
  %0 = tpc.gelu %x erf : tensor<4x64xi32>
  return
}

// -----

func.func @gelu_bad_approximation(%x: tensor<4x64xf32>) {
  // expected-error @+2 {{expected ::mlir::tpc::GeluApproximation to be one of: erf, tanh}}
  // expected-error @+1 {{failed to parse Tpc_GeluApproximationAttr parameter 'value'}}
  %0 = tpc.gelu %x sigmoid : tensor<4x64xf32>
  return
}

// -----

func.func @gelu_result_type(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.gelu' op failed to verify that all of {input, result} have same type}}
  %0 = "tpc.gelu"(%x) <{approximation = #tpc<gelu tanh>}>
      : (tensor<4x64xf32>) -> tensor<64x4xf32>
  return
}

// -----

func.func @silu_f64(%x: tensor<4x64xf64>) {
  // expected-error @+1 {{'tpc.silu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x64xf64>'}}
  %0 = tpc.silu %x : tensor<4x64xf64>
  return
}

// -----

func.func @silu_not_a_tensor(%x: f32) {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'f32'}}
  %0 = tpc.silu %x : f32
  return
}

// -----

func.func @silu_dynamic(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'tpc.silu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?x64xf32>'}}
  %0 = tpc.silu %x : tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.dropout
//===----------------------------------------------------------------------===//

func.func @dropout_rate_one(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.dropout' op dropout rate 1.000000e+00 is outside [0, 1)}}
  %0 = tpc.dropout %x rate 1.0 stream 0 : tensor<4x64xf32>
  return
}

// -----

func.func @dropout_rate_negative(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.dropout' op dropout rate -1.000000e-01 is outside [0, 1)}}
  %0 = tpc.dropout %x rate -0.1 stream 0 : tensor<4x64xf32>
  return
}

// -----

func.func @dropout_stream_negative(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.dropout' op dropout stream -1 is negative}}
  %0 = tpc.dropout %x rate 0.1 stream -1 : tensor<4x64xf32>
  return
}

// -----

func.func @dropout_int(%x: tensor<4x64xi64>) {
  // expected-error @+1 {{'tpc.dropout' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x64xi64>'}}
  %0 = tpc.dropout %x rate 0.1 stream 0 : tensor<4x64xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.softmax
//===----------------------------------------------------------------------===//

func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'tpc.softmax' op input must have at least one dimension to normalize over but is a scalar 'tensor<f32>'}}
  %0 = tpc.softmax %x : tensor<f32>
  return
}

// -----

func.func @softmax_causal_rank(%x: tensor<32xf32>) {
  // expected-error @+1 {{'tpc.softmax' op causal softmax needs [..., queries, keys] but the input has shape 32}}
  %0 = tpc.softmax %x causal : tensor<32xf32>
  return
}

// -----

func.func @softmax_causal_lengths(%x: tensor<4x32x16xf32>) {
  // expected-error @+1 {{'tpc.softmax' op causal mask needs at least as many keys as queries but has 32 queries and 16 keys}}
  %0 = tpc.softmax %x causal : tensor<4x32x16xf32>
  return
}

// -----

func.func @softmax_f64(%x: tensor<4x32xf64>) {
  // expected-error @+1 {{'tpc.softmax' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x32xf64>'}}
  %0 = tpc.softmax %x : tensor<4x32xf64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.add, tpc.mul
//===----------------------------------------------------------------------===//

func.func @add_not_suffix(%x: tensor<4x32x64xf32>, %y: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.add' op rhs shape 4x64 is neither the lhs shape 4x32x64 nor a suffix of it}}
  %0 = tpc.add %x, %y : tensor<4x32x64xf32>, tensor<4x64xf32>
  return
}

// -----

func.func @add_rhs_larger(%x: tensor<32x64xf32>, %y: tensor<4x32x64xf32>) {
  // Only rhs broadcasts.
  // expected-error @+1 {{'tpc.add' op rhs shape 4x32x64 is neither the lhs shape 32x64 nor a suffix of it}}
  %0 = tpc.add %x, %y : tensor<32x64xf32>, tensor<4x32x64xf32>
  return
}

// -----

func.func @add_element_type(%x: tensor<4x64xf32>, %y: tensor<4x64xbf16>) {
  // expected-error @+1 {{'tpc.add' op rhs element type 'bf16' differs from the lhs element type 'f32'}}
  %0 = tpc.add %x, %y : tensor<4x64xf32>, tensor<4x64xbf16>
  return
}

// -----

func.func @add_result_type(%x: tensor<4x64xf32>, %y: tensor<64xf32>) {
  // expected-error @+1 {{'tpc.add' op failed to verify that all of {lhs, result} have same type}}
  %0 = "tpc.add"(%x, %y) : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @mul_not_suffix(%x: tensor<4x32xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tpc.mul' op rhs shape 4 is neither the lhs shape 4x32 nor a suffix of it}}
  %0 = tpc.mul %x, %y : tensor<4x32xf32>, tensor<4xf32>
  return
}

// -----

func.func @mul_int(%x: tensor<4x32xf32>, %y: tensor<32xi32>) {
  // expected-error @+1 {{'tpc.mul' op operand #1 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<32xi32>'}}
  %0 = tpc.mul %x, %y : tensor<4x32xf32>, tensor<32xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.attention
//===----------------------------------------------------------------------===//

func.func @attention_heads(%q: tensor<2x12x8x16xf32>, %k: tensor<2x5x8x16xf32>,
                           %v: tensor<2x5x8x16xf32>) {
  // expected-error @+1 {{query heads 12 is not divisible by 5 key/value heads}}
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01
      : tensor<2x12x8x16xf32>, tensor<2x5x8x16xf32>, tensor<2x5x8x16xf32>
  return
}

// -----

// Sequence-major: heads are dim 2 (a head-major key then has 8 "heads").
func.func @attention_seq_major_heads(%q: tensor<2x8x12x16xf32>,
                                     %k: tensor<2x5x8x16xf32>,
                                     %v: tensor<2x5x8x16xf32>) {
  // expected-error @+1 {{query heads 12 is not divisible by 8 key/value heads}}
  %0 = tpc.attention %q, %k, %v seq_major scale 2.500000e-01
      : tensor<2x8x12x16xf32>, tensor<2x5x8x16xf32>, tensor<2x5x8x16xf32>
  return
}

// -----

func.func @attention_seq_major_causal(%q: tensor<2x8x4x16xf32>,
                                      %k: tensor<2x6x4x16xf32>,
                                      %v: tensor<2x6x4x16xf32>) {
  // expected-error @+1 {{causal mask needs at least as many keys as queries but has 8 queries and 6 keys}}
  %0 = tpc.attention %q, %k, %v causal seq_major scale 2.500000e-01
      : tensor<2x8x4x16xf32>, tensor<2x6x4x16xf32>, tensor<2x6x4x16xf32>
  return
}

// -----

func.func @attention_seq_major_rank(%q: tensor<2x8x16xf32>,
                                    %k: tensor<2x8x4x16xf32>,
                                    %v: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{query must be [batch, seq, heads, head_dim] but has shape 2x8x16}}
  %0 = tpc.attention %q, %k, %v seq_major scale 2.500000e-01
      : tensor<2x8x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_zero_kv_heads(%q: tensor<2x8x8x16xf32>,
                                   %k: tensor<2x0x8x16xf32>,
                                   %v: tensor<2x0x8x16xf32>) {
  // expected-error @+1 {{key and value have 0 heads}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x0x8x16xf32>, tensor<2x0x8x16xf32>
  return
}

// -----

func.func @attention_kv_heads_differ(%q: tensor<2x8x8x16xf32>,
                                     %k: tensor<2x4x8x16xf32>,
                                     %v: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{key has 4 heads but value has 2}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>
  return
}

// -----

func.func @attention_query_rank(%q: tensor<2x8x16xf32>, %k: tensor<2x4x8x16xf32>,
                                %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{query must be [batch, heads, seq, head_dim] but has shape 2x8x16}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_value_rank(%q: tensor<2x8x8x16xf32>,
                                %k: tensor<2x4x8x16xf32>,
                                %v: tensor<2x4x8x16x1xf32>) {
  // expected-error @+1 {{value must be [batch, heads, seq, head_dim] but has shape 2x4x8x16x1}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16x1xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x8x8x16xf32>, %k: tensor<2x4x8x16xf32>,
                           %v: tensor<3x4x8x16xf32>) {
  // expected-error @+1 {{batch sizes differ: query 2, key 2, value 3}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<3x4x8x16xf32>
  return
}

// -----

func.func @attention_kv_length(%q: tensor<2x8x8x16xf32>,
                               %k: tensor<2x4x8x16xf32>,
                               %v: tensor<2x4x6x16xf32>) {
  // expected-error @+1 {{key length 8 differs from value length 6}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x8x8x16xf32>,
                              %k: tensor<2x4x8x32xf32>,
                              %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{key head_dim 32 differs from query head_dim 16}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_key_element_type(%q: tensor<2x8x8x16xf32>,
                                      %k: tensor<2x4x8x16xbf16>,
                                      %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{key element type 'bf16' differs from the query element type 'f32'}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_value_element_type(%q: tensor<2x8x8x16xbf16>,
                                        %k: tensor<2x4x8x16xbf16>,
                                        %v: tensor<2x4x8x16xf16>) {
  // expected-error @+1 {{value element type 'f16' differs from the query element type 'bf16'}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xf16>
  return
}

// -----

func.func @attention_int_query(%q: tensor<2x8x8x16xi32>,
                               %k: tensor<2x4x8x16xf32>,
                               %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{query must be a statically shaped tensor of f32, bf16 or f16 but is 'tensor<2x8x8x16xi32>'}}
  %0 = tpc.attention %q, %k, %v scale 2.500000e-01
      : tensor<2x8x8x16xi32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_dropout_rate(%q: tensor<2x8x8x16xf32>,
                                  %k: tensor<2x4x8x16xf32>,
                                  %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'tpc.attention' op dropout rate 1.500000e+00 is outside [0, 1)}}
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01 dropout 1.5 stream 1
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_dropout_stream(%q: tensor<2x8x8x16xf32>,
                                    %k: tensor<2x4x8x16xf32>,
                                    %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'tpc.attention' op dropout stream -2 is negative}}
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01 dropout 0.1 stream -2
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_stream_without_dropout(%q: tensor<2x8x8x16xf32>,
                                            %k: tensor<2x4x8x16xf32>,
                                            %v: tensor<2x4x8x16xf32>) {
  // The custom form would drop the stream: it prints it only with a rate.
  // expected-error @+1 {{'tpc.attention' op dropout stream 7 is set but the dropout rate is 0}}
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01 dropout 0.0 stream 7
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x8x16xf32>, %k: tensor<2x4x8x16xf32>,
                           %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'tpc.attention' op scale must be positive and finite but is 0.000000e+00}}
  %0 = tpc.attention %q, %k, %v causal scale 0.0
      : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_causal_lengths(%q: tensor<2x8x8x16xf32>,
                                    %k: tensor<2x4x4x16xf32>,
                                    %v: tensor<2x4x4x16xf32>) {
  // expected-error @+1 {{'tpc.attention' op causal mask needs at least as many keys as queries but has 8 queries and 4 keys}}
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01
      : tensor<2x8x8x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return
}

// -----

func.func @attention_missing_scale(%q: tensor<2x8x8x16xf32>,
                                   %k: tensor<2x4x8x16xf32>,
                                   %v: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{expected 'scale'}}
  %0 = tpc.attention %q, %k, %v causal : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_result_type(%q: tensor<2x8x8x16xf32>,
                                 %k: tensor<2x4x8x16xf32>,
                                 %v: tensor<2x4x8x32xf32>) {
  // expected-error @+2 {{'tpc.attention' op inferred type(s) 'tensor<2x8x8x32xf32>' are incompatible with return type(s) of operation 'tensor<2x8x8x16xf32>'}}
  // expected-error @+1 {{'tpc.attention' op failed to infer returned types}}
  %0 = "tpc.attention"(%q, %k, %v) <{scale = 2.500000e-01 : f64}>
      : (tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>)
      -> tensor<2x8x8x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.rotary
//===----------------------------------------------------------------------===//

func.func @rotary_odd_head_dim(%q: tensor<2x8x8x15xf32>) {
  // expected-error @+1 {{'tpc.rotary' op head_dim 15 must be even for rotate-half}}
  %0 = tpc.rotary %q theta 1.0e+04 : tensor<2x8x8x15xf32>
  return
}

// -----

func.func @rotary_rank(%q: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'tpc.rotary' op input must be [batch, heads, seq, head_dim] but has shape 2x8x16}}
  %0 = tpc.rotary %q theta 1.0e+04 : tensor<2x8x16xf32>
  return
}

// -----

func.func @rotary_theta(%q: tensor<2x8x8x16xf32>) {
  // expected-error @+1 {{'tpc.rotary' op theta must be positive and finite but is -1.000000e+04}}
  %0 = tpc.rotary %q theta -1.0e+04 : tensor<2x8x8x16xf32>
  return
}

// -----

func.func @rotary_scaling_length(%q: tensor<2x8x8x16xf32>) {
  // expected-error @+1 {{'tpc.rotary' op scaling has 2 values, expected [factor] (linear) or [factor, low_freq_factor, high_freq_factor, original_max_positions] (llama3)}}
  %0 = tpc.rotary %q theta 1.0e+04 scaling [2.0, 1.0] : tensor<2x8x8x16xf32>
  return
}

// -----

func.func @rotary_scaling_bands(%q: tensor<2x8x8x16xf32>) {
  // expected-error @+1 {{'tpc.rotary_grad' op llama3 scaling needs high_freq_factor (1.000000e+00) > low_freq_factor (4.000000e+00) > 0 and original_max_positions (8.192000e+03) > 0}}
  %0 = tpc.rotary_grad %q theta 1.0e+04 scaling [8.0, 4.0, 1.0, 8192.0] : tensor<2x8x8x16xf32>
  return
}

// -----

func.func @rotary_offset(%q: tensor<2x8x8x16xf32>) {
  // expected-error @+1 {{'tpc.rotary' op position offset -1 is negative}}
  %0 = tpc.rotary %q theta 1.0e+04 offset -1 : tensor<2x8x8x16xf32>
  return
}

// -----

func.func @rotary_int(%q: tensor<2x8x8x16xi32>) {
  // expected-error @+1 {{'tpc.rotary' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<2x8x8x16xi32>'}}
  %0 = tpc.rotary %q theta 1.0e+04 : tensor<2x8x8x16xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.cross_entropy, tpc.loss_mean
//===----------------------------------------------------------------------===//

func.func @cross_entropy_vocab_zero(%l: tensor<4x32xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op vocab 0 must be positive}}
  %0:2 = tpc.cross_entropy %l, %y vocab 0 : tensor<4x32xf32>, tensor<4xi64>
  return
}

// -----

func.func @cross_entropy_vocab_beyond_columns(%l: tensor<4x32xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op vocab 33 exceeds the logits' 32 columns}}
  %0:2 = tpc.cross_entropy %l, %y vocab 33 : tensor<4x32xf32>, tensor<4xi64>
  return
}

// -----

func.func @cross_entropy_vocab_beyond_blocks(%l: tensor<4x32xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op vocab 129 exceeds the logits' 32 columns x 4 blocks}}
  %0:2 = tpc.cross_entropy %l, %y vocab 129 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
  return
}

// -----

func.func @cross_entropy_grad_blocks_zero(%l: tensor<4x32xf32>, %y: tensor<4xi64>, %d: tensor<f32>) {
  // expected-error @+1 {{'tpc.cross_entropy_grad' op blocks 0 must be positive}}
  %0 = tpc.cross_entropy_grad %l, %y, %d vocab 100 blocks 0 : tensor<4x32xf32>, tensor<4xi64>
  return
}

// -----

func.func @cross_entropy_labels_shape(%l: tensor<4x32x256xf32>,
                                      %y: tensor<4x31xi64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op labels shape 4x31 must be the logits shape 4x32x256 without its vocabulary dimension}}
  %0:2 = tpc.cross_entropy %l, %y : tensor<4x32x256xf32>, tensor<4x31xi64>
  return
}

// -----

func.func @cross_entropy_labels_rank(%l: tensor<4x32x256xf32>,
                                     %y: tensor<4x32x256xi64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op labels shape 4x32x256 must be the logits shape 4x32x256 without its vocabulary dimension}}
  %0:2 = tpc.cross_entropy %l, %y : tensor<4x32x256xf32>, tensor<4x32x256xi64>
  return
}

// -----

func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op logits must have a vocabulary dimension but are a scalar 'tensor<f32>'}}
  %0:2 = tpc.cross_entropy %l, %y : tensor<f32>, tensor<i64>
  return
}

// -----

func.func @cross_entropy_float_labels(%l: tensor<4x256xf32>,
                                      %y: tensor<4xf32>) {
  // expected-error @+1 {{'tpc.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0:2 = tpc.cross_entropy %l, %y : tensor<4x256xf32>, tensor<4xf32>
  return
}

// -----

func.func @cross_entropy_result_type(%l: tensor<4x256xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tpc.cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %0:2 = "tpc.cross_entropy"(%l, %y) <{ignore_index = -100 : i64}>
      : (tensor<4x256xf32>, tensor<4xi64>) -> (tensor<bf16>, tensor<i64>)
  return
}

// -----

func.func @loss_mean_sum_type(
    // expected-note @+1 {{prior use here}}
    %s: tensor<4xf32>, %c: tensor<i64>) {
  // expected-error @+1 {{use of value '%s' expects different type than prior uses: 'tensor<f32>' vs 'tensor<4xf32>'}}
  %0 = tpc.loss_mean %s, %c
  return
}

// -----

func.func @loss_mean_count_type(%s: tensor<f32>, %c: tensor<i32>) {
  // expected-error @+1 {{'tpc.loss_mean' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = "tpc.loss_mean"(%s, %c) : (tensor<f32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.reshape
//===----------------------------------------------------------------------===//

func.func @reshape_count(%x: tensor<4x32x64xf32>) {
  // expected-error @+1 {{'tpc.reshape' op cannot reshape 4x32x64 (8192 elements) to 4x32x60 (7680 elements)}}
  %0 = tpc.reshape %x : tensor<4x32x64xf32> -> tensor<4x32x60xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.reshape' op result element type 'bf16' differs from the input element type 'f32'}}
  %0 = tpc.reshape %x : tensor<4x64xf32> -> tensor<256xbf16>
  return
}

// -----

func.func @reshape_overflow(%x: tensor<4611686018427387904x4xf32>) {
  // expected-error @+1 {{'tpc.reshape' op element count of 4611686018427387904x4 overflows a 64-bit integer}}
  %0 = tpc.reshape %x : tensor<4611686018427387904x4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.reshape' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?x64xf32>'}}
  %0 = tpc.reshape %x : tensor<4x64xf32> -> tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.transpose
//===----------------------------------------------------------------------===//

func.func @transpose_duplicate(%x: tensor<4x32x64xf32>) {
  // expected-error @+1 {{permutation [0, 0, 1] is not a permutation of 3 dimensions}}
  %0 = tpc.transpose %x [0, 0, 1] : tensor<4x32x64xf32>
  return
}

// -----

func.func @transpose_length(%x: tensor<4x32x64xf32>) {
  // expected-error @+1 {{permutation [1, 0] is not a permutation of 3 dimensions}}
  %0 = tpc.transpose %x [1, 0] : tensor<4x32x64xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<4x32x64xf32>) {
  // expected-error @+1 {{permutation [0, -1, 3] is not a permutation of 3 dimensions}}
  %0 = tpc.transpose %x [0, -1, 3] : tensor<4x32x64xf32>
  return
}

// -----

func.func @transpose_int(%x: tensor<4x32xi64>) {
  // expected-error @+1 {{input must be a statically shaped tensor of f32, bf16 or f16 but is 'tensor<4x32xi64>'}}
  %0 = tpc.transpose %x [1, 0] : tensor<4x32xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.slice
//===----------------------------------------------------------------------===//

func.func @slice_out_of_bounds(%x: tensor<1024x64xf32>) {
  // expected-error @+1 {{slice [1000 : 32] (offset : size) is out of bounds for dim 0 of size 1024}}
  %0 = tpc.slice %x dim 0 [1000 : 32] : tensor<1024x64xf32>
  return
}

// -----

func.func @slice_empty(%x: tensor<1024x64xf32>) {
  // expected-error @+1 {{slice [0 : 0] (offset : size) is out of bounds for dim 1 of size 64}}
  %0 = tpc.slice %x dim 1 [0 : 0] : tensor<1024x64xf32>
  return
}

// -----

func.func @slice_negative_offset(%x: tensor<1024x64xf32>) {
  // expected-error @+1 {{slice [-1 : 2] (offset : size) is out of bounds for dim 0 of size 1024}}
  %0 = tpc.slice %x dim 0 [-1 : 2] : tensor<1024x64xf32>
  return
}

// -----

func.func @slice_huge(%x: tensor<1024x64xf32>) {
  // offset + size would overflow.
  // expected-error @+1 {{slice [1 : 9223372036854775807] (offset : size) is out of bounds for dim 0 of size 1024}}
  %0 = tpc.slice %x dim 0 [1 : 9223372036854775807] : tensor<1024x64xf32>
  return
}

// -----

func.func @slice_dim(%x: tensor<1024x64xf32>) {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = tpc.slice %x dim 2 [0 : 1] : tensor<1024x64xf32>
  return
}

// -----

func.func @slice_negative_dim(%x: tensor<1024x64xf32>) {
  // expected-error @+1 {{dim -1 is out of range for rank 2}}
  %0 = tpc.slice %x dim -1 [0 : 1] : tensor<1024x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.repeat
//===----------------------------------------------------------------------===//

func.func @repeat_dim(%k: tensor<4x4x32x16xf32>) {
  // expected-error @+1 {{dim 4 is out of range for rank 4}}
  %0 = tpc.repeat %k dim 4 times 2 : tensor<4x4x32x16xf32>
  return
}

// -----

func.func @repeat_scalar(%k: tensor<f32>) {
  // expected-error @+1 {{dim 0 is out of range for rank 0}}
  %0 = tpc.repeat %k dim 0 times 2 : tensor<f32>
  return
}

// -----

func.func @repeat_zero(%k: tensor<4x4x32x16xf32>) {
  // expected-error @+1 {{repeats must be at least 1 but is 0}}
  %0 = tpc.repeat %k dim 1 times 0 : tensor<4x4x32x16xf32>
  return
}

// -----

func.func @repeat_overflow(%k: tensor<4x4x32x16xf32>) {
  // expected-error @+1 {{repeating dim 1 of size 4 9223372036854775807 times overflows a 64-bit size}}
  %0 = tpc.repeat %k dim 1 times 9223372036854775807 : tensor<4x4x32x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tpc.cast
//===----------------------------------------------------------------------===//

func.func @cast_shape(%x: tensor<4x32x64xf32>) {
  // expected-error @+1 {{'tpc.cast' op result shape 4x32x32 differs from the input shape 4x32x64}}
  %0 = tpc.cast %x : tensor<4x32x64xf32> to tensor<4x32x32xbf16>
  return
}

// -----

func.func @cast_to_int(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{'tpc.cast' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4x64xi32>'}}
  %0 = tpc.cast %x : tensor<4x64xf32> to tensor<4x64xi32>
  return
}
