rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel attention(%x, %x, %x) -> (%y) ints [0] floats [0.5] : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
}
