rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.kernel silu(%x) -> (%g) : memref<8xf32> -> memref<8xf32>
  rt.grad "v" %g : memref<8xf32>
}
