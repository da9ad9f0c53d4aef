rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %r = rt.input "r" : memref<2xf32>
  %y = rt.alloc : memref<2x8xf32>
  rt.kernel add(%x, %r) -> (%y) : memref<2x8xf32>, memref<2xf32> -> memref<2x8xf32>
}
