rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel rms_norm(%x, %x) -> (%y) floats [0x7FF0000000000000] : memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
}
