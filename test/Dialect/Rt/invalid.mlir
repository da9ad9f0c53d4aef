// One chunk per diagnostic of the rt dialect: buffer types, buffer ops,
// the program, and per opcode the counts, attributes and shapes a kernel
// relies on.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

// A dynamic shape is refused.
rt.program @p {
  // expected-error @+1 {{must be statically shaped memref of f32, bf16, f16, i32, i64 or i8 with the identity layout and the default memory space}}
  %a = rt.alloc : memref<?x4xf32>
}

// -----

// A strided layout is refused.
rt.program @p {
  // expected-error @+1 {{identity layout}}
  %a = rt.alloc : memref<2x4xf32, strided<[8, 1]>>
}

// -----

// An f64 buffer is refused: the executable has no such dtype.
rt.program @p {
  // expected-error @+1 {{statically shaped memref of f32, bf16, f16, i32, i64 or i8}}
  %a = rt.alloc : memref<2x4xf64>
}

// -----

// A memory space is refused.
rt.program @p {
  // expected-error @+1 {{default memory space}}
  %a = rt.alloc : memref<2x4xf32, 1>
}

// -----

rt.program @p {
  // expected-error @+1 {{offset must be non-negative but is -64}}
  %a = rt.alloc offset -64 : memref<2x4xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{offset 4 is not a multiple of the 8-byte element size of 'memref<2xi64>'}}
  %x = rt.input "x" offset 4 : memref<2xi64>
}

// -----

rt.program @p {
  // expected-error @+1 {{'w': a parameter buffer holds f32, bf16 or f16, not 'memref<8xi32>'}}
  %w = rt.param "w" hf_shape [8] init zeros : memref<8xi32>
}

// -----

rt.program @p {
  // expected-error @+1 {{hf_name must not be empty}}
  %w = rt.param "" hf_shape [8] init normal : memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{'w': hf_shape [2, 3] has 6 elements but the buffer 'memref<8xf32>' has 8}}
  %w = rt.param "w" hf_shape [2, 3] init normal : memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{hf_shape of 'w' has a negative dimension or too many elements}}
  %w = rt.param "w" hf_shape [-2, -4] init normal : memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{'w': init std must be finite and non-negative but is -1.0}}
  %w = rt.param "w" hf_shape [8] init normal std -1.0 : memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{offset must be non-negative but is -1}}
  %w = rt.param "w" hf_shape [8] init ones offset -1 : memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+2 {{expected ::mlir::rt::ParamInit to be one of: normal, zeros, ones}}
  // expected-error @+1 {{failed to parse Rt_ParamInitAttr parameter 'value'}}
  %w = rt.param "w" hf_shape [8] init uniform : memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{name must not be empty}}
  %x = rt.input "" : memref<2x4xi64>
}

// -----

rt.program @p {
  // expected-error @+1 {{input 'ids': bound must be non-negative but is -3}}
  %x = rt.input "ids" bound -3 : memref<2x4xi64>
}

// -----

rt.program @p {
  // expected-error @+1 {{input 'x': a value bound needs an integer buffer, not 'memref<2x4xf32>'}}
  %x = rt.input "x" bound 3 : memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  // expected-error @+1 {{name must not be empty}}
  rt.output "" %x : memref<2x4xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{is not an rt op; an rt.program holds only rt ops}}
  %c = arith.constant 0 : index
}

// -----

rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  // expected-error @+1 {{duplicate parameter 'w'}}
  %v = rt.param "w" hf_shape [8] init normal : memref<8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  // expected-error @+1 {{duplicate input 'x'}}
  %y = rt.input "x" : memref<8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  rt.output "y" %x : memref<8xf32>
  // expected-error @+1 {{duplicate output 'y'}}
  rt.output "y" %x : memref<8xf32>
}

// -----

rt.program @p {
  %a = rt.alloc : memref<8xf32>
  // expected-error @+1 {{binds output 'y' to an rt.alloc no kernel writes}}
  rt.output "y" %a : memref<8xf32>
}

// -----

rt.program @p {
  %a = rt.alloc : memref<8xf32>
  %b = rt.alloc : memref<8xf32>
  // expected-error @+1 {{silu: operand 0 is an rt.alloc that no earlier kernel writes}}
  rt.kernel silu(%a) -> (%b) : memref<8xf32> -> memref<8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  // expected-error @+1 {{silu: result 0 is not an rt.alloc; kernels only read inputs, and params and state only change by the optimizer's in-place updates}}
  rt.kernel silu(%x) -> (%w) : memref<8xf32> -> memref<8xf32>
}

// -----

rt.program @p {
  // expected-error @+1 {{cannot be nested in another rt.program}}
  rt.program @q {
  }
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{add: has 1 operands, expected 2}}
  rt.kernel add(%x) -> (%y) : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{linear: has 4 operands, expected 2 to 3}}
  rt.kernel linear(%x, %x, %x, %x) -> (%y) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  %z = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{gelu: has 2 results, expected 1}}
  rt.kernel gelu(%x) -> (%y, %z) : memref<2x4xf32> -> memref<2x4xf32>, memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{dropout: takes 1 or 2 ints but has 0}}
  rt.kernel dropout(%x) -> (%y) floats [0.1] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x2xf32>
  // expected-error @+1 {{transpose: takes 2 ints but has 3}}
  rt.kernel transpose(%x) -> (%y) ints [1, 0, 2] : memref<2x4xf32> -> memref<4x2xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{attention: takes 2 floats but has 1}}
  rt.kernel attention(%x, %x, %x) -> (%y) ints [0] floats [0.5] : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{rms_norm: floats must be finite but one is INF}}
  rt.kernel rms_norm(%x, %x) -> (%y) floats [0x7FF0000000000000] : memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{silu: flags 1 set bits 1 this kernel does not define}}
  rt.kernel silu(%x) -> (%y) flags 1 : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4x4xf32>
  // expected-error @+1 {{batch_matmul: flags 5 set bits 4 this kernel does not define}}
  rt.kernel batch_matmul(%x, %x) -> (%y) floats [1.0] flags 5 : memref<2x4xf32>, memref<2x4xf32> -> memref<2x4x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel silu(%x) -> (%y) : memref<2x4xf32> -> memref<2x4xf32>
  // expected-error @+1 {{silu: result 0 is also an operand; kernels do not run in place}}
  rt.kernel silu(%y) -> (%y) : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %l = rt.input "l" : memref<2x4x8xf32>
  %t = rt.input "t" : memref<2x4xi64>
  %s = rt.alloc : memref<f32>
  // expected-error @+1 {{cross_entropy: result 1 repeats an earlier result}}
  rt.kernel cross_entropy(%l, %t) -> (%s, %s) ints [-100] : memref<2x4x8xf32>, memref<2x4xi64> -> memref<f32>, memref<f32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2xf32>
  %y = rt.alloc : memref<2xf32>
  // expected-error @+2 {{expected ::mlir::rt::OpCode to be one of: embedding, linear}}
  // expected-error @+1 {{failed to parse Rt_OpCodeAttr parameter 'value'}}
  rt.kernel conv(%x) -> (%y) : memref<2xf32> -> memref<2xf32>
}

// -----

rt.program @p {
  %t = rt.param "t" hf_shape [16, 8] init normal : memref<16x8xf32>
  %i = rt.input "i" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4x8xf32>
  // expected-error @+1 {{embedding: ids must hold i32 or i64 but is 'memref<2x4xf32>'}}
  rt.kernel embedding(%t, %i) -> (%y) : memref<16x8xf32>, memref<2x4xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p {
  %t = rt.param "t" hf_shape [16, 8] init normal : memref<16x8xf32>
  %i = rt.input "i" : memref<2x4xi64>
  %y = rt.alloc : memref<2x4x16xf32>
  // expected-error @+1 {{embedding: result has shape 2x4x16 but must be 2x4x8}}
  rt.kernel embedding(%t, %i) -> (%y) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x16xf32>
}

// -----

rt.program @p {
  %t = rt.param "t" hf_shape [16, 8] init normal : memref<16x8xf32>
  %i = rt.input "i" : memref<2x4xi64>
  %y = rt.alloc : memref<2x4x8xbf16>
  // expected-error @+1 {{embedding: result element type 'bf16' differs from the table element type 'f32'}}
  rt.kernel embedding(%t, %i) -> (%y) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x8xbf16>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %y = rt.alloc : memref<2x16xf32>
  // expected-error @+1 {{linear: weight 16x8 ([in, out...]) does not contract input dimension 8}}
  rt.kernel linear(%x, %w) -> (%y) : memref<2x8xf32>, memref<16x8xf32> -> memref<2x16xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{linear: result has shape 2x8 but must be 2x16}}
  rt.kernel linear(%x, %w) -> (%y) flags 1 : memref<2x8xf32>, memref<16x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %b = rt.param "b" hf_shape [8] init zeros : memref<8xf32>
  %y = rt.alloc : memref<2x16xf32>
  // expected-error @+1 {{linear: bias has 8 elements but the output has 16 features}}
  rt.kernel linear(%x, %w, %b) -> (%y) flags 1 : memref<2x8xf32>, memref<16x8xf32>, memref<8xf32> -> memref<2x16xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %y = rt.alloc : memref<8xf32>
  // expected-error @+1 {{linear: input must have rank >= 1 and weight rank >= 2, but they have shapes 8 and 8}}
  rt.kernel linear(%x, %w) -> (%y) : memref<8xf32>, memref<8xf32> -> memref<8xf32>
}

// -----

rt.program @p {
  %a = rt.input "a" : memref<2x3x4xf32>
  %b = rt.input "b" : memref<2x5x6xf32>
  %y = rt.alloc : memref<2x3x6xf32>
  // expected-error @+1 {{batch_matmul: lhs 2x3x4 and rhs 2x5x6 do not multiply (transpose_lhs 0, transpose_rhs 0)}}
  rt.kernel batch_matmul(%a, %b) -> (%y) floats [1.0] : memref<2x3x4xf32>, memref<2x5x6xf32> -> memref<2x3x6xf32>
}

// -----

rt.program @p {
  %a = rt.input "a" : memref<2x3x4xf32>
  %b = rt.input "b" : memref<2x5x4xf32>
  %y = rt.alloc : memref<2x3x4xf32>
  // expected-error @+1 {{batch_matmul: result has shape 2x3x4 but must be 2x3x5}}
  rt.kernel batch_matmul(%a, %b) -> (%y) floats [1.0] flags 2 : memref<2x3x4xf32>, memref<2x5x4xf32> -> memref<2x3x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %g = rt.param "g" hf_shape [4] init ones : memref<4xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{rms_norm: weight has shape 4 but must be 8}}
  rt.kernel rms_norm(%x, %g) -> (%y) floats [1.0e-6] : memref<2x8xf32>, memref<4xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xbf16>
  // expected-error @+1 {{gelu: result 'memref<2x8xbf16>' must have the type of the input 'memref<2x8xf32>'}}
  rt.kernel gelu(%x) -> (%y) : memref<2x8xf32> -> memref<2x8xbf16>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xi32>
  %y = rt.alloc : memref<2x8xi32>
  // expected-error @+1 {{silu: input must hold f32, bf16 or f16 but is 'memref<2x8xi32>'}}
  rt.kernel silu(%x) -> (%y) : memref<2x8xi32> -> memref<2x8xi32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{dropout: rate must be in [0, 1) but is 1.0}}
  rt.kernel dropout(%x) -> (%y) ints [0] floats [1.0] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8x4xf32>
  %y = rt.alloc : memref<8x4xf32>
  // expected-error @+1 {{softmax: a causal softmax needs [..., q, k] with k >= q but the input has shape 8x4}}
  rt.kernel softmax(%x) -> (%y) flags 1 : memref<8x4xf32> -> memref<8x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<1x2x4x3xf32>
  %y = rt.alloc : memref<1x2x4x3xf32>
  // expected-error @+1 {{rotary: input must be [b, heads, s, d] with an even d but has shape 1x2x4x3}}
  rt.kernel rotary(%x) -> (%y) ints [0] floats [1.0e4] : memref<1x2x4x3xf32> -> memref<1x2x4x3xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %r = rt.input "r" : memref<2xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{add: rhs shape 2 is not a suffix of the lhs shape 2x8}}
  rt.kernel add(%x, %r) -> (%y) : memref<2x8xf32>, memref<2xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %q = rt.input "q" : memref<1x3x4x2xf32>
  %k = rt.input "k" : memref<1x2x4x2xf32>
  %y = rt.alloc : memref<1x3x4x2xf32>
  // expected-error @+1 {{attention: query 1x3x4x2, key 1x2x4x2 and value 1x2x4x2 are not [b, h, sq, d], [b, kv, sk, d], [b, kv, sk, dv] with h a multiple of kv}}
  rt.kernel attention(%q, %k, %k) -> (%y) ints [0] floats [1.0, 0.0] : memref<1x3x4x2xf32>, memref<1x2x4x2xf32>, memref<1x2x4x2xf32> -> memref<1x3x4x2xf32>
}

// -----

rt.program @p {
  %q = rt.input "q" : memref<1x2x4x2xf32>
  %k = rt.input "k" : memref<1x2x3x2xf32>
  %y = rt.alloc : memref<1x2x4x2xf32>
  // expected-error @+1 {{attention: causal attention needs sk >= sq but sk is 3 and sq 4}}
  rt.kernel attention(%q, %k, %k) -> (%y) ints [0] floats [1.0, 0.0] flags 1 : memref<1x2x4x2xf32>, memref<1x2x3x2xf32>, memref<1x2x3x2xf32> -> memref<1x2x4x2xf32>
}

// -----

rt.program @p {
  %q = rt.input "q" : memref<2x4x2xf32>
  %y = rt.alloc : memref<2x4x2xf32>
  // expected-error @+1 {{attention: query must have rank 4 but has shape 2x4x2}}
  rt.kernel attention(%q, %q, %q) -> (%y) ints [0] floats [1.0, 0.0] : memref<2x4x2xf32>, memref<2x4x2xf32>, memref<2x4x2xf32> -> memref<2x4x2xf32>
}

// -----

rt.program @p {
  %l = rt.input "l" : memref<2x4x8xf32>
  %t = rt.input "t" : memref<2x8xi64>
  %s = rt.alloc : memref<f32>
  %c = rt.alloc : memref<i64>
  // expected-error @+1 {{cross_entropy: labels shape 2x8 must be the logits shape 2x4x8 without its last dimension}}
  rt.kernel cross_entropy(%l, %t) -> (%s, %c) ints [-100] : memref<2x4x8xf32>, memref<2x8xi64> -> memref<f32>, memref<i64>
}

// -----

rt.program @p {
  %l = rt.input "l" : memref<2x4x8xf32>
  %t = rt.input "t" : memref<2x4xi64>
  %s = rt.alloc : memref<f32>
  %c = rt.alloc : memref<i32>
  // expected-error @+1 {{cross_entropy: result 1 (count) must be a scalar of 'i64' but is 'memref<i32>'}}
  rt.kernel cross_entropy(%l, %t) -> (%s, %c) ints [-100] : memref<2x4x8xf32>, memref<2x4xi64> -> memref<f32>, memref<i32>
}

// -----

rt.program @p {
  %s = rt.input "s" : memref<1xf32>
  %c = rt.input "c" : memref<i64>
  %y = rt.alloc : memref<f32>
  // expected-error @+1 {{loss_mean: operand 0 (sum) must be a scalar of 'f32' but is 'memref<1xf32>'}}
  rt.kernel loss_mean(%s, %c) -> (%y) : memref<1xf32>, memref<i64> -> memref<f32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<3x5xf32>
  // expected-error @+1 {{copy: input 2x8 has 16 elements but result 3x5 has 15}}
  rt.kernel copy(%x) -> (%y) : memref<2x8xf32> -> memref<3x5xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<8x2xf32>
  // expected-error @+1 {{transpose: ints [0, 0] is not a permutation of rank 2}}
  rt.kernel transpose(%x) -> (%y) ints [0, 0] : memref<2x8xf32> -> memref<8x2xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{transpose: result has shape 2x8 but must be 8x2}}
  rt.kernel transpose(%x) -> (%y) ints [1, 0] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{slice: [6, +4) is out of range for dimension 1 of size 8}}
  rt.kernel slice(%x) -> (%y) ints [1, 6, 4] : memref<2x8xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{slice: dim 2 is out of range for input shape 2x8}}
  rt.kernel slice(%x) -> (%y) ints [2, 0, 4] : memref<2x8xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{repeat: repeats must be positive (and the result fit in int64) but is 0}}
  rt.kernel repeat(%x) -> (%y) ints [0, 0] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{repeat: result has shape 2x8 but must be 4x8}}
  rt.kernel repeat(%x) -> (%y) ints [0, 2] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<16xbf16>
  // expected-error @+1 {{cast: result has shape 16 but must be 2x8}}
  rt.kernel cast(%x) -> (%y) : memref<2x8xf32> -> memref<16xbf16>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xi32>
  // expected-error @+1 {{cast: result must hold f32, bf16 or f16 but is 'memref<2x8xi32>'}}
  rt.kernel cast(%x) -> (%y) : memref<2x8xf32> -> memref<2x8xi32>
}

// -----

// expected-error @+1 {{unknown rt attribute 'rt.arena'}}
module attributes {rt.arena = 1 : i64} {
}

// -----

// expected-error @+1 {{'rt.arena_bytes' must be an i64 integer but is 1 : i32}}
module attributes {rt.arena_bytes = 1 : i32} {
}

// -----

// expected-error @+1 {{'rt.planned_peak_bytes' must be non-negative but is -5}}
module attributes {rt.planned_peak_bytes = -5 : i64} {
}

// -----

// expected-error @+1 {{'rt.seed' is a module attribute, but is on 'rt.program'}}
rt.program @p attributes {rt.seed = 1 : i64} {
}
