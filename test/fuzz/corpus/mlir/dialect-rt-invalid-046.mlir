rt.program @p {
  %x = rt.input "x" : memref<2x8xi32>
  %y = rt.alloc : memref<2x8xi32>
  rt.kernel silu(%x) -> (%y) : memref<2x8xi32> -> memref<2x8xi32>
}
