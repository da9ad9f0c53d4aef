rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<3x5xf32>
  rt.kernel copy(%x) -> (%y) : memref<2x8xf32> -> memref<3x5xf32>
}
