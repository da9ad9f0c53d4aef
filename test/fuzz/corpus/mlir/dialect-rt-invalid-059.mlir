rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<2x8xf32>
  rt.kernel transpose(%x) -> (%y) ints [1, 0] : memref<2x8xf32> -> memref<2x8xf32>
}
