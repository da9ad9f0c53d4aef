rt.program @p {
  %q = rt.input "q" : memref<2x4x2xf32>
  %y = rt.alloc : memref<2x4x2xf32>
  rt.kernel attention(%q, %q, %q) -> (%y) ints [0] floats [1.0, 0.0] : memref<2x4x2xf32>, memref<2x4x2xf32>, memref<2x4x2xf32> -> memref<2x4x2xf32>
}
