rt.program @forward mesh [dp = 2, tp = 2] {
  %w = rt.param "wte" hf_shape [15, 8] view [15, 8] padded [16, 8]
      splits [[tp], []] init normal offset 0 : memref<8x8xf32>
  %ids = rt.input "input_ids" bound 15 splits [[dp], []] offset 256
      : memref<1x4xi64>
  %x = rt.input "x" splits [[tp, dp], []] : memref<1x4xf32>
  %e = rt.alloc : memref<1x4x8xf32>
  rt.kernel embedding(%w, %ids) -> (%e)
      : memref<8x8xf32>, memref<1x4xi64> -> memref<1x4x8xf32>
  %r = rt.alloc : memref<1x4x8xf32>
  rt.kernel all_reduce(%e) -> (%r) ints [1]
      : memref<1x4x8xf32> -> memref<1x4x8xf32>
  %m = rt.alloc : memref<1x4x8xf32>
  rt.kernel all_reduce(%r) -> (%m) ints [1, 0] flags 1
      : memref<1x4x8xf32> -> memref<1x4x8xf32>
  %d = rt.alloc : memref<1x4x8xf32>
  rt.kernel dropout(%r) -> (%d) ints [3, 64] floats [0.1] splits [[dp], [], []]
      : memref<1x4x8xf32> -> memref<1x4x8xf32>
  %s = rt.alloc : memref<1x4x4xf32>
  rt.kernel reduce_scatter(%d) -> (%s) ints [2, 1]
      : memref<1x4x8xf32> -> memref<1x4x4xf32>
  %i = rt.alloc : memref<1x2xi64>
  rt.kernel shard_slice(%ids) -> (%i) ints [1, 1]
      : memref<1x4xi64> -> memref<1x2xi64>
  %t = rt.alloc : memref<1x8x2xf32>
  rt.kernel all_to_all(%s) -> (%t) ints [2, 1, 1]
      : memref<1x4x4xf32> -> memref<1x8x2xf32>
  %g = rt.alloc : memref<4x4x8xf32>
  rt.kernel all_gather(%d) -> (%g) ints [0, 0, 1]
      : memref<1x4x8xf32> -> memref<4x4x8xf32>
  rt.output "y" %g : memref<4x4x8xf32>
}
