rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.grad "w" %g : memref<8xf32>
}
