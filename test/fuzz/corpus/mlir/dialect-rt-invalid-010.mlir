rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal std -1.0 : memref<8xf32>
}
