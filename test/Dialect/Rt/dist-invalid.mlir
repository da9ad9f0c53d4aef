// The rt verifier on distributed programs: the mesh, the splits of params,
// inputs and dropout kernels, and per collective the int layout, the mesh
// axes, the shapes the group size implies and the element types.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{mesh axis 'dp' is named twice}}
rt.program @p mesh [dp = 2, dp = 2] {
}

// -----

// expected-error @+1 {{mesh axis 'tp' must have a positive size (and the mesh fewer than 2^63 ranks) but has 0}}
rt.program @p mesh [dp = 2, tp = 0] {
}

// -----

// expected-error @+1 {{mesh axis 'b' must have a positive size (and the mesh fewer than 2^63 ranks) but has 4294967296}}
rt.program @p mesh [a = 4294967296, b = 4294967296] {
}

// -----

// expected-error @+1 {{a mesh has at least one axis}}
rt.program @p mesh [] {
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{mesh axis 'tp' splits more than once}}
  %w = rt.param "w" hf_shape [8, 8] splits [[tp], [tp]] init normal : memref<4x4xf32>
}

// -----

// Splits need the program's mesh.
rt.program @p {
  // expected-error @+1 {{'w' has splits but its rt.program has no mesh}}
  %w = rt.param "w" hf_shape [8, 8] splits [[tp], []] init normal : memref<4x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': split axis 'pp' of dimension 1 is not an axis of the mesh [dp = 2, tp = 2]}}
  %w = rt.param "w" hf_shape [8, 8] splits [[], [pp]] init normal : memref<8x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': splits [[tp]] have 1 dimensions but the shape 4x8 has 2}}
  %w = rt.param "w" hf_shape [8, 8] splits [[tp]] init normal : memref<4x8xf32>
}

// -----

// The HF tensor has the elements of the global view (8x8), not of the block.
rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': hf_shape [4, 8] has 32 elements but the view [8, 8] has 64}}
  %w = rt.param "w" hf_shape [4, 8] splits [[tp], []] init normal : memref<4x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': view (before padding) and padded (after) are given together or not at all}}
  %w = rt.param "w" hf_shape [15, 8] padded [16, 8] splits [[tp], []] init normal : memref<8x8xf32>
}

// -----

// The buffer is a block of the padded view: 8 rows on each of 2 tp ranks.
rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': padded shape [18, 8] must be the buffer's shape times the split sizes, [16, 8]}}
  %w = rt.param "w" hf_shape [15, 8] view [15, 8] padded [18, 8] splits [[tp], []] init normal : memref<8x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': view [17, 8] must have the padded shape's rank and be no larger in any dimension and smaller in one than [16, 8]}}
  %w = rt.param "w" hf_shape [17, 8] view [17, 8] padded [16, 8] splits [[tp], []] init normal : memref<8x8xf32>
}

// -----

// Padding to the same shape is no padding: leave both out.
rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': view [16, 8] must have the padded shape's rank and be no larger in any dimension and smaller in one than [16, 8]}}
  %w = rt.param "w" hf_shape [16, 8] view [16, 8] padded [16, 8] splits [[tp], []] init normal : memref<8x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{'w': hf_shape [16, 8] has 128 elements but the view [15, 8] has 120}}
  %w = rt.param "w" hf_shape [16, 8] view [15, 8] padded [16, 8] splits [[tp], []] init normal : memref<8x8xf32>
}

// -----

rt.program @p mesh [dp = 4611686018427387904] {
  // expected-error @+1 {{'w': the global shape of 8 split by [[dp]] does not fit in int64}}
  %w = rt.param "w" hf_shape [8] splits [[dp]] init normal : memref<8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  // expected-error @+1 {{input 'ids': split axis 'sp' of dimension 0 is not an axis of the mesh [dp = 2, tp = 2]}}
  %ids = rt.input "ids" splits [[sp], []] : memref<2x4xi64>
}

// -----

// Outputs are whole on every rank.
rt.program @p mesh [dp = 2, tp = 2] {
  %ids = rt.input "ids" splits [[dp], []] : memref<2x4xi64>
  // expected-error @+1 {{binds output 'ids' to a split buffer; outputs are whole on every rank}}
  rt.output "ids" %ids : memref<2x4xi64>
}

// -----

// Only the kernels that draw dropout take splits.
rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{gelu: only dropout, dropout_mask, attention and attention_grad take splits}}
  rt.kernel gelu(%x) -> (%y) splits [[dp], []] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %m = rt.alloc : memref<2x4xi8>
  // expected-error @+1 {{dropout_mask: splits [[dp], [], [tp]] have 3 dimensions but the shape 2x4 has 2}}
  rt.kernel dropout_mask() -> (%m) ints [1, 0] floats [0.1] splits [[dp], [], [tp]] : -> memref<2x4xi8>
}

// -----

rt.program @p {
  %m = rt.alloc : memref<2x4xi8>
  // expected-error @+1 {{dropout_mask has splits but its rt.program has no mesh}}
  rt.kernel dropout_mask() -> (%m) ints [1] floats [0.1] splits [[], []] : -> memref<2x4xi8>
}

// -----

rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{all_reduce: a collective needs the mesh of its rt.program}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

// At least one axis.
rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{all_reduce: takes 1 or 16 ints but has 0}}
  rt.kernel all_reduce(%x) -> (%y) : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{all_reduce: mesh axis 2 is out of range for the mesh [dp = 2, tp = 2] (ints [2])}}
  rt.kernel all_reduce(%x) -> (%y) ints [2] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x4xf32>
  // expected-error @+1 {{all_gather: mesh axis 1 ('tp') is named twice (ints [0, 1, 1])}}
  rt.kernel all_gather(%x) -> (%y) ints [0, 1, 1] : memref<2x4xf32> -> memref<4x4xf32>
}

// -----

// The max of counts is no kernel: i64 only sums (the target count).
rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<i64>
  %y = rt.alloc : memref<i64>
  // expected-error @+1 {{all_reduce: reduces f32, bf16 or f16 (sum or max) or i64 (sum), not the max of 'memref<i64>'}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] flags 1 : memref<i64> -> memref<i64>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi32>
  %y = rt.alloc : memref<2x4xi32>
  // expected-error @+1 {{all_reduce: reduces f32, bf16 or f16 (sum or max) or i64 (sum), not the sum of 'memref<2x4xi32>'}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] : memref<2x4xi32> -> memref<2x4xi32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x2xf32>
  // expected-error @+1 {{all_reduce: result 'memref<4x2xf32>' must have the type of the input 'memref<2x4xf32>'}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] : memref<2x4xf32> -> memref<4x2xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{all_reduce: flags 2 set bits 2 this kernel does not define}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] flags 2 : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

// A group over both axes has 4 ranks: the gathered dim is 4 times the input's.
rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x4xf32>
  // expected-error @+1 {{all_gather: result has shape 4x4 but must be 8x4}}
  rt.kernel all_gather(%x) -> (%y) ints [0, 0, 1] : memref<2x4xf32> -> memref<4x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{all_gather: dim 2 is out of range for input shape 2x4}}
  rt.kernel all_gather(%x) -> (%y) ints [2, 0] : memref<2x4xf32> -> memref<2x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi64>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{all_gather: result element type 'f32' differs from the input element type 'i64'}}
  rt.kernel all_gather(%x) -> (%y) ints [1, 0] : memref<2x4xi64> -> memref<2x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi64>
  %y = rt.alloc : memref<2x2xi64>
  // expected-error @+1 {{reduce_scatter: reduces f32, bf16 or f16, not 'memref<2x4xi64>'}}
  rt.kernel reduce_scatter(%x) -> (%y) ints [1, 1] : memref<2x4xi64> -> memref<2x2xi64>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x3xf32>
  %y = rt.alloc : memref<2x1xf32>
  // expected-error @+1 {{reduce_scatter: dimension 1 of the input shape 2x3 is not divisible by the group size 2}}
  rt.kernel reduce_scatter(%x) -> (%y) ints [1, 1] : memref<2x3xf32> -> memref<2x1xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{reduce_scatter: result has shape 2x4 but must be 2x2}}
  rt.kernel reduce_scatter(%x) -> (%y) ints [1, 1] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi64>
  %y = rt.alloc : memref<1x4xi64>
  // expected-error @+1 {{shard_slice: result has shape 1x4 but must be 2x2}}
  rt.kernel shard_slice(%x) -> (%y) ints [1, 0] : memref<2x4xi64> -> memref<1x4xi64>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{shard_slice: takes 2 or 16 ints but has 1}}
  rt.kernel shard_slice(%x) -> (%y) ints [1] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4x8xf32>
  %y = rt.alloc : memref<2x4x8xf32>
  // expected-error @+1 {{all_to_all: result has shape 2x4x8 but must be 2x8x4}}
  rt.kernel all_to_all(%x) -> (%y) ints [2, 1, 1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4x8xf32>
  %y = rt.alloc : memref<2x4x8xf32>
  // expected-error @+1 {{all_to_all: concat dim 3 is out of range for input shape 2x4x8}}
  rt.kernel all_to_all(%x) -> (%y) ints [2, 3, 1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 4] {
  %x = rt.input "x" : memref<2x4x6xf32>
  %y = rt.alloc : memref<2x16x1xf32>
  // expected-error @+1 {{all_to_all: dimension 2 of the input shape 2x4x6 is not divisible by the group size 4}}
  rt.kernel all_to_all(%x) -> (%y) ints [2, 1, 1] : memref<2x4x6xf32> -> memref<2x16x1xf32>
}
