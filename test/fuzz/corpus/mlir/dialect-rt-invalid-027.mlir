rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  %z = rt.alloc : memref<2x4xf32>
  rt.kernel gelu(%x) -> (%y, %z) : memref<2x4xf32> -> memref<2x4xf32>, memref<2x4xf32>
}
