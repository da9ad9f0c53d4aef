rt.program @p {
  %l = rt.input "l" : memref<2x4x8xf32>
  %t = rt.input "t" : memref<2x4xi64>
  %s = rt.alloc : memref<f32>
  rt.kernel cross_entropy(%l, %t) -> (%s, %s) ints [-100] : memref<2x4x8xf32>, memref<2x4xi64> -> memref<f32>, memref<f32>
}
