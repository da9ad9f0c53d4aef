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
  // expected-error @+1 {{embedding: ids is f32, expected i64}}
  rt.kernel embedding(%t, %i) -> (%y) : memref<16x8xf32>, memref<2x4xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p {
  %t = rt.param "t" hf_shape [16, 8] init normal : memref<16x8xf32>
  %i = rt.input "i" : memref<2x4xi64>
  %y = rt.alloc : memref<2x4x16xf32>
  // expected-error @+1 {{embedding: result [2, 4, 16] should be [2, 4, 8]}}
  rt.kernel embedding(%t, %i) -> (%y) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x16xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %y = rt.alloc : memref<2x16xf32>
  // expected-error @+1 {{linear: weight [16, 8] (in_out) contracts 16 but input [2, 8] has 8}}
  rt.kernel linear(%x, %w) -> (%y) : memref<2x8xf32>, memref<16x8xf32> -> memref<2x16xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{linear: result [2, 8] has 16 elements, expected m 2 x n 16}}
  rt.kernel linear(%x, %w) -> (%y) flags 1 : memref<2x8xf32>, memref<16x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %b = rt.param "b" hf_shape [8] init zeros : memref<8xf32>
  %y = rt.alloc : memref<2x16xf32>
  // expected-error @+1 {{linear: bias [8] has 8 elements, expected n 16}}
  rt.kernel linear(%x, %w, %b) -> (%y) flags 1 : memref<2x8xf32>, memref<16x8xf32>, memref<8xf32> -> memref<2x16xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %y = rt.alloc : memref<8xf32>
  // expected-error @+1 {{linear: result [8] has 8 elements, expected m 1 x n 1}}
  rt.kernel linear(%x, %w) -> (%y) : memref<8xf32>, memref<8xf32> -> memref<8xf32>
}

// -----

rt.program @p {
  %a = rt.input "a" : memref<2x3x4xf32>
  %b = rt.input "b" : memref<2x5x6xf32>
  %y = rt.alloc : memref<2x3x6xf32>
  // expected-error @+1 {{batch_matmul: lhs [2, 3, 4] contracts 4 but rhs [2, 5, 6] has 5}}
  rt.kernel batch_matmul(%a, %b) -> (%y) floats [1.0] : memref<2x3x4xf32>, memref<2x5x6xf32> -> memref<2x3x6xf32>
}

// -----

rt.program @p {
  %a = rt.input "a" : memref<2x3x4xf32>
  %b = rt.input "b" : memref<2x5x4xf32>
  %y = rt.alloc : memref<2x3x4xf32>
  // expected-error @+1 {{batch_matmul: result [2, 3, 4] should be [2, 3, 5]}}
  rt.kernel batch_matmul(%a, %b) -> (%y) floats [1.0] flags 2 : memref<2x3x4xf32>, memref<2x5x4xf32> -> memref<2x3x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %g = rt.param "g" hf_shape [4] init ones : memref<4xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{rms_norm: weight [4] should be [8]}}
  rt.kernel rms_norm(%x, %g) -> (%y) floats [1.0e-6] : memref<2x8xf32>, memref<4xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xi32>
  %y = rt.alloc : memref<2x8xi32>
  // expected-error @+1 {{silu: input is i32, expected f32, bf16 or f16}}
  rt.kernel silu(%x) -> (%y) : memref<2x8xi32> -> memref<2x8xi32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{dropout: dropout rate (float_attrs[0]) is 1, expected [0, 1)}}
  rt.kernel dropout(%x) -> (%y) ints [0] floats [1.0] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<8x4xf32>
  %y = rt.alloc : memref<8x4xf32>
  // expected-error @+1 {{softmax: causal input [8, 4] has 8 queries but only 4 keys}}
  rt.kernel softmax(%x) -> (%y) flags 1 : memref<8x4xf32> -> memref<8x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<1x2x4x3xf32>
  %y = rt.alloc : memref<1x2x4x3xf32>
  // expected-error @+1 {{rotary: input [1, 2, 4, 3] has an odd head dimension 3}}
  rt.kernel rotary(%x) -> (%y) ints [0] floats [1.0e4] : memref<1x2x4x3xf32> -> memref<1x2x4x3xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %r = rt.input "r" : memref<2xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{add: rhs [2] is not a suffix of lhs [2, 8]}}
  rt.kernel add(%x, %r) -> (%y) : memref<2x8xf32>, memref<2xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %q = rt.input "q" : memref<1x3x4x2xf32>
  %k = rt.input "k" : memref<1x2x4x2xf32>
  %y = rt.alloc : memref<1x3x4x2xf32>
  // expected-error @+1 {{attention: 3 query heads are not a multiple of 2 kv heads}}
  rt.kernel attention(%q, %k, %k) -> (%y) ints [0] floats [1.0, 0.0] : memref<1x3x4x2xf32>, memref<1x2x4x2xf32>, memref<1x2x4x2xf32> -> memref<1x3x4x2xf32>
}

// -----

rt.program @p {
  %q = rt.input "q" : memref<1x2x4x2xf32>
  %k = rt.input "k" : memref<1x2x3x2xf32>
  %y = rt.alloc : memref<1x2x4x2xf32>
  // expected-error @+1 {{attention: causal attention has 4 queries but only 3 keys}}
  rt.kernel attention(%q, %k, %k) -> (%y) ints [0] floats [1.0, 0.0] flags 1 : memref<1x2x4x2xf32>, memref<1x2x3x2xf32>, memref<1x2x3x2xf32> -> memref<1x2x4x2xf32>
}

// -----

rt.program @p {
  %q = rt.input "q" : memref<2x4x2xf32>
  %y = rt.alloc : memref<2x4x2xf32>
  // expected-error @+1 {{attention: query [2, 4, 2] should have rank 4}}
  rt.kernel attention(%q, %q, %q) -> (%y) ints [0] floats [1.0, 0.0] : memref<2x4x2xf32>, memref<2x4x2xf32>, memref<2x4x2xf32> -> memref<2x4x2xf32>
}

// -----

rt.program @p {
  %l = rt.input "l" : memref<2x4x8xf32>
  %t = rt.input "t" : memref<2x8xi64>
  %s = rt.alloc : memref<f32>
  %c = rt.alloc : memref<i64>
  // expected-error @+1 {{cross_entropy: labels [2, 8] should be [2, 4]}}
  rt.kernel cross_entropy(%l, %t) -> (%s, %c) ints [-100] : memref<2x4x8xf32>, memref<2x8xi64> -> memref<f32>, memref<i64>
}

// -----

rt.program @p {
  %l = rt.input "l" : memref<2x4x8xf32>
  %t = rt.input "t" : memref<2x4xi64>
  %s = rt.alloc : memref<f32>
  %c = rt.alloc : memref<i32>
  // expected-error @+1 {{cross_entropy: count is i32, expected i64}}
  rt.kernel cross_entropy(%l, %t) -> (%s, %c) ints [-100] : memref<2x4x8xf32>, memref<2x4xi64> -> memref<f32>, memref<i32>
}

// -----

rt.program @p {
  %s = rt.input "s" : memref<1xf32>
  %c = rt.input "c" : memref<i64>
  %y = rt.alloc : memref<f32>
  // expected-error @+1 {{loss_mean: sum [1] should be []}}
  rt.kernel loss_mean(%s, %c) -> (%y) : memref<1xf32>, memref<i64> -> memref<f32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<3x5xf32>
  // expected-error @+1 {{copy: input [2, 8] and result [3, 5] have different element counts}}
  rt.kernel copy(%x) -> (%y) : memref<2x8xf32> -> memref<3x5xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<8x2xf32>
  // expected-error @+1 {{transpose: int_attrs [0, 0] is not a permutation of 2 dimensions}}
  rt.kernel transpose(%x) -> (%y) ints [0, 0] : memref<2x8xf32> -> memref<8x2xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{transpose: result [2, 8] should be [8, 2]}}
  rt.kernel transpose(%x) -> (%y) ints [1, 0] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{slice: slice [6, +4) of dimension 1 is outside input [2, 8]}}
  rt.kernel slice(%x) -> (%y) ints [1, 6, 4] : memref<2x8xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{slice: dimension 2 (int_attrs[0]) is outside input [2, 8]}}
  rt.kernel slice(%x) -> (%y) ints [2, 0, 4] : memref<2x8xf32> -> memref<2x4xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{repeat: repeats (int_attrs[1]) is 0, expected >= 1}}
  rt.kernel repeat(%x) -> (%y) ints [0, 0] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{repeat: result [2, 8] should be [4, 8]}}
  rt.kernel repeat(%x) -> (%y) ints [0, 2] : memref<2x8xf32> -> memref<2x8xf32>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<16xbf16>
  // expected-error @+1 {{cast: result [16] should be [2, 8]}}
  rt.kernel cast(%x) -> (%y) : memref<2x8xf32> -> memref<16xbf16>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xi32>
  // expected-error @+1 {{cast: result is i32, expected f32, bf16 or f16}}
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
