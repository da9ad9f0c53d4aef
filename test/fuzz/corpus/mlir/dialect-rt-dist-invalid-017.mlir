rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel gelu(%x) -> (%y) splits [[dp], []] : memref<2x4xf32> -> memref<2x4xf32>
}
