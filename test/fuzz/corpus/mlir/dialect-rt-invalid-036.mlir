rt.program @p {
  %x = rt.input "x" : memref<2xf32>
  %y = rt.alloc : memref<2xf32>
  rt.kernel conv(%x) -> (%y) : memref<2xf32> -> memref<2xf32>
}
