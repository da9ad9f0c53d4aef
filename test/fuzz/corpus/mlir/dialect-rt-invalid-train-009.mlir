rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.kernel silu(%x) -> (%g) : memref<8xf32> -> memref<8xf32>
  rt.grad "w" %g : memref<8xf32>
  rt.grad "w" %g : memref<8xf32>
}
