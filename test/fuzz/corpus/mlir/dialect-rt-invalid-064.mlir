rt.program @p {
  %x = rt.input "x" : memref<2x8xf32>
  %y = rt.alloc : memref<16xbf16>
  rt.kernel cast(%x) -> (%y) : memref<2x8xf32> -> memref<16xbf16>
}
