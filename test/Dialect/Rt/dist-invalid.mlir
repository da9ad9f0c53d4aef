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
  // expected-error @+1 {{gelu: has splits, which only dropout, dropout_mask and the attention kernels take}}
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
  // expected-error @+1 {{all_reduce: int_attrs[0] is 0, not a mesh axis (the mesh has 0 axes)}}
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
  // expected-error @+1 {{all_reduce: int_attrs[0] is 2, not a mesh axis (the mesh has 2 axes)}}
  rt.kernel all_reduce(%x) -> (%y) ints [2] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x4xf32>
  // expected-error @+1 {{all_gather: group axes: mesh axis 'tp' named twice}}
  rt.kernel all_gather(%x) -> (%y) ints [0, 1, 1] : memref<2x4xf32> -> memref<4x4xf32>
}

// -----

// The max of counts is no kernel: i64 only sums (the target count).
rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<i64>
  %y = rt.alloc : memref<i64>
  // expected-error @+1 {{all_reduce: input is i64, expected f32, bf16 or f16 (a max)}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] flags 1 : memref<i64> -> memref<i64>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi32>
  %y = rt.alloc : memref<2x4xi32>
  // expected-error @+1 {{all_reduce: input is i32, expected f32, bf16, f16 or i64 (a sum)}}
  rt.kernel all_reduce(%x) -> (%y) ints [0] : memref<2x4xi32> -> memref<2x4xi32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x2xf32>
  // expected-error @+1 {{all_reduce: result [4, 2] should be [2, 4]}}
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
  // expected-error @+1 {{all_gather: result dim 0 is 4, expected 2 x 4 = 8 (input [2, 4], group size 4)}}
  rt.kernel all_gather(%x) -> (%y) ints [0, 0, 1] : memref<2x4xf32> -> memref<4x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{all_gather: dimension 2 (int_attrs[0]) is outside input [2, 4]}}
  rt.kernel all_gather(%x) -> (%y) ints [2, 0] : memref<2x4xf32> -> memref<2x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi64>
  %y = rt.alloc : memref<2x8xf32>
  // expected-error @+1 {{all_gather: result is f32, expected i64}}
  rt.kernel all_gather(%x) -> (%y) ints [1, 0] : memref<2x4xi64> -> memref<2x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi64>
  %y = rt.alloc : memref<2x2xi64>
  // expected-error @+1 {{reduce_scatter: input is i64, expected f32, bf16 or f16}}
  rt.kernel reduce_scatter(%x) -> (%y) ints [1, 1] : memref<2x4xi64> -> memref<2x2xi64>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x3xf32>
  %y = rt.alloc : memref<2x1xf32>
  // expected-error @+1 {{reduce_scatter: input dim 1 is 3, not divisible by the group size 2}}
  rt.kernel reduce_scatter(%x) -> (%y) ints [1, 1] : memref<2x3xf32> -> memref<2x1xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // expected-error @+1 {{reduce_scatter: result dim 1 is 4, expected 4 / 2 = 2 (input [2, 4], group size 2)}}
  rt.kernel reduce_scatter(%x) -> (%y) ints [1, 1] : memref<2x4xf32> -> memref<2x4xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xi64>
  %y = rt.alloc : memref<1x4xi64>
  // expected-error @+1 {{shard_slice: result dim 0 is 1, expected 2 (the input's) (input [2, 4], group size 2)}}
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
  // expected-error @+1 {{all_to_all: result [2, 4, 8] should be [2, 8, 4] (input [2, 4, 8] split along dim 2, concatenated along 1, group size 2)}}
  rt.kernel all_to_all(%x) -> (%y) ints [2, 1, 1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4x8xf32>
  %y = rt.alloc : memref<2x4x8xf32>
  // expected-error @+1 {{all_to_all: concat dimension 3 (int_attrs[1]) is outside input [2, 4, 8]}}
  rt.kernel all_to_all(%x) -> (%y) ints [2, 3, 1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
}

// -----

rt.program @p mesh [dp = 2, tp = 4] {
  %x = rt.input "x" : memref<2x4x6xf32>
  %y = rt.alloc : memref<2x16x1xf32>
  // expected-error @+1 {{all_to_all: input dim 2 is 6, not divisible by the group size 4}}
  rt.kernel all_to_all(%x) -> (%y) ints [2, 1, 1] : memref<2x4x6xf32> -> memref<2x16x1xf32>
}
