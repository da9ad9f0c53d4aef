rt.program @p {
  %w = rt.param "w" hf_shape [-2, -4] init normal : memref<8xf32>
}
