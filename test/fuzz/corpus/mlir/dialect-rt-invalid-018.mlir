rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %v = rt.param "w" hf_shape [8] init normal : memref<8xf32>
}
