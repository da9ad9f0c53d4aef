rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel dropout(%x) -> (%y) floats [0.1] : memref<2x4xf32> -> memref<2x4xf32>
}
