// One chunk per diagnostic of the backward and driver ops.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

func.func @embedding_grad_result_rank(%dy: tensor<4x8xf32>, %ids: tensor<4xi64>) {
  // expected-error @+1 {{result must be [vocab, hidden] but has shape 16}}
  %0 = tpc.embedding_grad %dy[%ids] : tensor<4x8xf32>, tensor<4xi64> -> tensor<16xf32>
  return
}

// -----

func.func @embedding_grad_shape(%dy: tensor<4x8xf32>, %ids: tensor<5xi64>) {
  // expected-error @+1 {{grad shape 4x8 must be the ids shape 5 followed by the hidden size 8}}
  %0 = tpc.embedding_grad %dy[%ids] : tensor<4x8xf32>, tensor<5xi64> -> tensor<16x8xf32>
  return
}

// -----

func.func @linear_input_grad_weight_rank(%dy: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight must have at least 2 dimensions but has shape 8}}
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_input_grad_out_dims(%dy: tensor<4x3x8xf32>, %w: tensor<16x4x8xf32>) {
  // expected-error @+1 {{grad shape 4x3x8 does not end with the weight's output dimensions 4x8 (weight shape 16x4x8, layout in_out)}}
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x3x8xf32>, tensor<16x4x8xf32>
  return
}

// -----

func.func @linear_input_grad_element(%dy: tensor<4x8xbf16>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{weight element type 'f32' differs from the grad element type 'bf16'}}
  %0 = tpc.linear_input_grad %dy, %w layout in_out : tensor<4x8xbf16>, tensor<16x8xf32>
  return
}

// -----

func.func @linear_weight_grad_result(%x: tensor<4x16xf32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{result shape 16x8 is not the out_in weight shape 8x16}}
  %0 = tpc.linear_weight_grad %x, %dy layout out_in : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @linear_weight_grad_lead(%x: tensor<4x16xf32>, %dy: tensor<5x8xf32>) {
  // expected-error @+1 {{grad shape 5x8 must be the input's leading dimensions 4 followed by output dimensions}}
  %0 = tpc.linear_weight_grad %x, %dy layout in_out : tensor<4x16xf32>, tensor<5x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @linear_weight_grad_element(%x: tensor<4x16xbf16>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{grad element type 'f32' differs from the input element type 'bf16'}}
  %0 = tpc.linear_weight_grad %x, %dy layout in_out : tensor<4x16xbf16>, tensor<4x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @sum_to_not_suffix(%dy: tensor<4x32x64xf32>) {
  // expected-error @+1 {{result shape 32 is not a suffix of the input shape 4x32x64}}
  %0 = tpc.sum_to %dy : tensor<4x32x64xf32> -> tensor<32xf32>
  return
}

// -----

func.func @layer_norm_input_grad_weight(%dy: tensor<4x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{weight shape 32 does not match the normalized dimension 64}}
  %0 = tpc.layer_norm_input_grad %dy, %dy, %w eps 1.0e-5 : tensor<4x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @layer_norm_input_grad_types(%dy: tensor<4x64xbf16>, %x: tensor<4x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{all of {grad, input, result} have same type}}
  %0 = "tpc.layer_norm_input_grad"(%dy, %x, %w) {epsilon = 1.0e-5 : f64} : (tensor<4x64xbf16>, tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @layer_norm_param_grad_shape(%dy: tensor<4x64xf32>) {
  // expected-error @+1 {{bias_grad shape 32 does not match the normalized dimension 64}}
  %0:2 = tpc.layer_norm_param_grad %dy, %dy eps 1.0e-5 : tensor<4x64xf32> -> tensor<64xf32>, tensor<32xf32>
  return
}

// -----

func.func @layer_norm_param_grad_eps(%dy: tensor<4x64xf32>) {
  // expected-error @+1 {{epsilon must be positive and finite but is 0}}
  %0:2 = tpc.layer_norm_param_grad %dy, %dy eps 0.0 : tensor<4x64xf32> -> tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rms_norm_param_grad_shape(%dy: tensor<4x64xf32>) {
  // expected-error @+1 {{result shape 4x64 does not match the normalized dimension 64}}
  %0 = tpc.rms_norm_param_grad %dy, %dy eps 1.0e-6 : tensor<4x64xf32> -> tensor<4x64xf32>
  return
}

// -----

func.func @rms_norm_input_grad_eps(%dy: tensor<4x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be positive and finite but is -1}}
  %0 = tpc.rms_norm_input_grad %dy, %dy, %w eps -1.0 : tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @gelu_grad_types(%dy: tensor<4x64xf32>, %x: tensor<4x32xf32>) {
  // expected-error @+1 {{all of {grad, input, result} have same type}}
  %0 = "tpc.gelu_grad"(%dy, %x) {approximation = #tpc<gelu tanh>} : (tensor<4x64xf32>, tensor<4x32xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @softmax_grad_scalar(%dy: tensor<f32>) {
  // expected-error @+1 {{output must have at least one dimension but is a scalar 'tensor<f32>'}}
  %0 = tpc.softmax_grad %dy, %dy : tensor<f32>
  return
}

// -----

func.func @dropout_mask_rate() {
  // expected-error @+1 {{dropout rate 1.000000e+00 is outside [0, 1)}}
  %0 = tpc.dropout_mask rate 1.0 stream 0 : tensor<4x8xi8>
  return
}

// -----

func.func @dropout_mask_stream() {
  // expected-error @+1 {{dropout stream -2 is negative}}
  %0 = tpc.dropout_mask rate 0.1 stream -2 : tensor<4x8xi8>
  return
}

// -----

func.func @dropout_mask_element() {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 8-bit signless integer values}}
  %0 = tpc.dropout_mask rate 0.1 stream 0 : tensor<4x8xi1>
  return
}

// -----

func.func @dropout_mask_block_type(%mb: tensor<2xi64>) {
  // expected-error @+1 {{operand #0 must be 0D tensor of 64-bit signless integer values}}
  %0 = "tpc.dropout_mask"(%mb) {rate = 0.1 : f64, stream = 0 : i64} : (tensor<2xi64>) -> tensor<4x8xi8>
  return
}

// -----

func.func @apply_mask_shape(%x: tensor<4x8xf32>, %m: tensor<8x4xi8>) {
  // expected-error @+1 {{mask shape 8x4 differs from the input shape 4x8}}
  %0 = tpc.apply_mask %x, %m rate 0.1 : tensor<4x8xf32>, tensor<8x4xi8>
  return
}

// -----

func.func @apply_mask_rate(%x: tensor<4x8xf32>, %m: tensor<4x8xi8>) {
  // expected-error @+1 {{dropout rate -5.000000e-01 is outside [0, 1)}}
  %0 = tpc.apply_mask %x, %m rate -0.5 : tensor<4x8xf32>, tensor<4x8xi8>
  return
}

// -----

func.func @attention_grad_output(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x8xf32>) {
  // expected-error @+1 {{grad type 'tensor<2x4x8x16xf32>' differs from the attention output type 'tensor<2x4x8x8xf32>'}}
  %0:3 = tpc.attention_grad %do, %q, %q, %v scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>
  return
}

// -----

func.func @attention_grad_saved_lse(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error @+1 {{saved lse type 'tensor<2x8x4xf32>' differs from the attention's log-sum-exp type 'tensor<2x4x8xf32>'}}
  %0:3 = tpc.attention_grad %do, %q, %q, %q saved(%do, %lse : tensor<2x4x8x16xf32>, tensor<2x8x4xf32>) scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_grad_saved_output(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %o: tensor<2x4x8x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{saved output type 'tensor<2x4x8x8xf32>' differs from the attention output type 'tensor<2x4x8x16xf32>'}}
  %0:3 = tpc.attention_grad %do, %q, %q, %q saved(%o, %lse : tensor<2x4x8x8xf32>, tensor<2x4x8xf32>) scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_grad_saved_half(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{takes the forward's output and lse both or neither}}
  %0:3 = "tpc.attention_grad"(%do, %q, %q, %q, %do) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, scale = 2.500000e-01 : f64}> : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  return
}

// -----

func.func @attention_grad_heads(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) {
  // expected-error @+1 {{query heads 4 is not divisible by 3 key/value heads}}
  %0:3 = tpc.attention_grad %do, %q, %k, %k scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  return
}

// -----

func.func @attention_grad_block_without_dropout(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %mb: tensor<i64>) {
  // expected-error @+1 {{a dropout block is set but the dropout rate is 0}}
  %0:3 = tpc.attention_grad %do, %q, %q, %q scale 0.25 block %mb : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_block_without_dropout(%q: tensor<2x4x8x16xf32>, %mb: tensor<i64>) {
  // expected-error @+1 {{a dropout block is set but the dropout rate is 0}}
  %0 = tpc.attention %q, %q, %q scale 0.25 block %mb : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_grad_causal(%do: tensor<2x4x8x16xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x4x4x16xf32>) {
  // expected-error @+1 {{causal mask needs at least as many keys as queries but has 8 queries and 4 keys}}
  %0:3 = tpc.attention_grad %do, %q, %k, %k causal scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
  return
}

// -----

func.func @rotary_grad_odd(%dy: tensor<2x4x8x15xf32>) {
  // expected-error @+1 {{head_dim 15 must be even for rotate-half}}
  %0 = tpc.rotary_grad %dy theta 1.0e4 : tensor<2x4x8x15xf32>
  return
}

// -----

func.func @rotary_grad_offset(%dy: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{position offset -1 is negative}}
  %0 = tpc.rotary_grad %dy theta 1.0e4 offset -1 : tensor<2x4x8x16xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels(%lg: tensor<4x8x16xf32>, %lb: tensor<4x7xi64>, %ds: tensor<f32>) {
  // expected-error @+1 {{labels shape 4x7 must be the logits shape 4x8x16 without its vocabulary dimension}}
  %0 = tpc.cross_entropy_grad %lg, %lb, %ds : tensor<4x8x16xf32>, tensor<4x7xi64>
  return
}

// -----

func.func @cross_entropy_grad_dsum(%lg: tensor<4x16xf32>, %lb: tensor<4xi64>, %ds: tensor<1xf32>) {
  // expected-error @+1 {{operand #2 must be 0D tensor of 32-bit float values}}
  %0 = "tpc.cross_entropy_grad"(%lg, %lb, %ds) : (tensor<4x16xf32>, tensor<4xi64>, tensor<1xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @count_targets_float(%lb: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tpc.count_targets %lb : tensor<4xf32>
  return
}

// -----

func.func @pad_too_small(%x: tensor<32x64xf32>) {
  // expected-error @+1 {{cannot place dim 0 of size 32 at offset 40 in a dimension of size 64}}
  %0 = tpc.pad %x dim 0 offset 40 to 64 : tensor<32x64xf32>
  return
}

// -----

func.func @pad_dim(%x: tensor<32x64xf32>) {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = tpc.pad %x dim 2 offset 0 to 64 : tensor<32x64xf32>
  return
}

// -----

func.func @sum_groups_divisible(%x: tensor<4x6x8xf32>) {
  // expected-error @+1 {{dim 1 of size 6 is not divisible into groups of 4}}
  %0 = tpc.sum_groups %x dim 1 times 4 : tensor<4x6x8xf32>
  return
}

// -----

func.func @sum_groups_repeats(%x: tensor<4x6x8xf32>) {
  // expected-error @+1 {{repeats must be at least 1 but is 0}}
  %0 = tpc.sum_groups %x dim 1 times 0 : tensor<4x6x8xf32>
  return
}
