rt.program @p {
  %x = rt.input "x" : memref<2x6x8xf32>
  %y = rt.alloc : memref<2x3x8xf32>
  rt.kernel sum_groups(%x) -> (%y) ints [1, 4] : memref<2x6x8xf32> -> memref<2x3x8xf32>
}
