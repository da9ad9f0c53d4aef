rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<4x2xf32>
  rt.kernel transpose(%x) -> (%y) ints [1, 0, 2] : memref<2x4xf32> -> memref<4x2xf32>
}
