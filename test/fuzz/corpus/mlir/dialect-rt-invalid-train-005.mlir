rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  rt.grad "w" %x : memref<8xf32>
}
